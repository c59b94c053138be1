"""The one NinjaAPI, under /api/v1/ (OpenAPI docs at /api/v1/docs, for signed-in users unless
API_DOCS_PUBLIC is on; Swagger UI is served from our own static files)."""

from __future__ import annotations

import functools
import logging

import redis
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from django.utils.translation import gettext as _
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer, SessionAuth

from access.rules import shows_details
from accounts.models import ApiToken
from currechat.health import get_health
from kernel.errors import CurreChatError

log = logging.getLogger(__name__)


class BearerAuth(HttpBearer):
    def authenticate(self, request, token):
        user = ApiToken.objects.user_for(token)
        if user is not None:
            request.user = user
            request.by_program = True  # searches have an allowance of their own (kernel.ratelimit.search_window)
        return user


class BrowserSession(SessionAuth):
    """Session auth for the pages' scripts; unsafe methods need the CSRF token header."""


def _bearer_user(request):
    header = request.headers.get("Authorization", "")
    scheme, _, raw = header.partition(" ")
    return ApiToken.objects.user_for(raw.strip()) if scheme.lower() == "bearer" and raw.strip() else None


def _signed_in_docs(view):
    """The docs page and schema for signed-in users (session or bearer token) unless
    API_DOCS_PUBLIC is on; read per request so the setting can change without a restart."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        user = request.user if request.user.is_authenticated else _bearer_user(request)
        if settings.API_DOCS_PUBLIC or (user is not None and user.is_active):
            return view(request, *args, **kwargs)
        if request.path.endswith(".json"):
            return JsonResponse({"detail": _("Log in, or send 'Authorization: Bearer <token>'.")}, status=401)
        return redirect_to_login(request.get_full_path())

    return wrapped


api = NinjaAPI(
    title="CurreChat API",
    version="1",
    urls_namespace="api",
    auth=[BearerAuth(), BrowserSession()],
    docs_url="/docs",
    docs_decorator=_signed_in_docs,
)


@api.exception_handler(CurreChatError)
def _curre_error(request, exc: CurreChatError):
    body = {"detail": str(exc), "code": exc.code}
    field, retry_after = getattr(exc, "field", None), getattr(exc, "retry_after", None)
    if field:
        body["field"] = field
    response = api.create_response(request, body, status=exc.status_code)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


@api.exception_handler(Http404)
def _not_found(request, exc):
    return api.create_response(request, {"detail": _("Not found.")}, status=404)


@api.exception_handler(PermissionDenied)
def _forbidden(request, exc):
    return api.create_response(request, {"detail": str(exc) or _("You may not do this.")}, status=403)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request, exc):
    detail = _("Log in, or send 'Authorization: Bearer <token>' (manage.py create_api_token).")
    return api.create_response(request, {"detail": detail}, status=401)


@api.exception_handler(ValidationError)
def _invalid(request, exc: ValidationError):
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: {e.get('msg')}" for e in exc.errors
    )
    detail = _("Invalid input: %(problems)s") % {"problems": problems}
    return api.create_response(request, {"detail": detail, "errors": exc.errors}, status=422)


# django-ninja's own words for a body it cannot read (not JSON, nested too deep): said as ours,
# in the reader's language, with what to send instead.
_UNREADABLE_BODY = "Cannot parse request body"


@api.exception_handler(HttpError)
def _http_error(request, exc: HttpError):
    if exc.status_code == 400 and str(exc).startswith(_UNREADABLE_BODY):
        detail = _("The request's body cannot be read. Send a JSON object, with Content-Type: application/json.")
        return api.create_response(request, {"detail": detail, "code": "bad_request"}, status=400)
    return api.create_response(request, {"detail": str(exc)}, status=exc.status_code)


@api.exception_handler(redis.RedisError)
def _redis_down(request, exc):
    log.warning("Redis unavailable during %s: %s", request.path, exc)
    return api.create_response(
        request, {"detail": _("The search index (Redis) cannot be reached right now; try again shortly.")}, status=503
    )


@api.get("/health", auth=None, tags=["health"])
def health(request):
    """Whether the service works: `{"ok", "status": "ok" | "degraded"}` for everyone; teachers and
    staff (signed in or with a token) also get Redis, the model server, the workers and the models."""
    user = request.user if request.user.is_authenticated else _bearer_user(request)
    state = get_health()
    return state.as_dict() if shows_details(user) else state.public_summary()


def _register_routers() -> None:
    from accounts.api import router as accounts_router
    from chat.checks.api import router as answer_checks_router
    from chat.course.api import router as course_router
    from chat.insight.api import router as insight_router
    from chat.privacy.api import router as privacy_router
    from chat.turn.api import router as turn_router
    from collections_app.api import router as collections_router
    from collections_app.checks_views import router as checks_router
    from collections_app.search import router as search_router

    api.add_router("/", accounts_router)
    api.add_router("/", collections_router)
    api.add_router("/", search_router)
    api.add_router("/", checks_router)
    api.add_router("/", course_router)
    api.add_router("/", answer_checks_router)
    api.add_router("/", turn_router)
    api.add_router("/", insight_router)
    api.add_router("/", privacy_router)


_register_routers()
