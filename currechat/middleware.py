"""Turn domain errors and a lost backing service into readable pages instead of server errors;
refuse text no database can store at the door; one look at the model servers per request."""

from __future__ import annotations

import json
import logging
import re

import redis
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import JsonResponse, UnreadablePostError
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernel.errors import CurreChatError, NotAuthenticated
from kernel.records import UNSTORABLE_REFUSED, unstorable_text
from rag.providers.registry import one_look

log = logging.getLogger(__name__)

REDIS_DOWN = gettext_lazy(
    "The search index and task queue (Redis) cannot be reached right now. Your data is safe; try again "
    "in a moment, and if this persists ask your administrator to check Redis."
)


class UnstorableTextMiddleware:
    """Refuse a request whose text holds a character no database here can store (a NUL; half of a
    surrogate pair, which JSON can write), pages and API alike, with a sentence (400): it would
    fail deep inside as a server error. Django's forms refuse a NUL, but paths, query strings and
    the API's JSON are read without forms. Multipart bodies are left to their forms and views
    (reading them here would read every upload twice); percent-encoding cannot carry a surrogate."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not _holds_unstorable(request):
            return self.get_response(request)
        if request.path.startswith("/api/"):
            return JsonResponse({"detail": str(UNSTORABLE_REFUSED), "code": "bad_request"}, status=400)
        context = {"title": _("Something is wrong"), "message": UNSTORABLE_REFUSED}
        return render(request, "error.html", context, status=400)


# In JSON such characters come only as escapes ("\\u0000", "\\ud800"): raw ones are not JSON at all.
_ESCAPED = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


def _holds_unstorable(request) -> bool:
    if "\x00" in request.path_info or any(_unstorable_in([k, *v]) for k, v in request.GET.lists()):
        return True
    try:
        if request.content_type == "application/x-www-form-urlencoded":
            return any(_unstorable_in([k, *v]) for k, v in request.POST.lists())
        # A surrogate pair's escapes (an emoji, as json.dumps writes it) are one character once read.
        if request.content_type == "application/json" and _ESCAPED.search(request.body):
            return _unstorable_in(json.loads(request.body))
    except (RequestDataTooBig, SuspiciousOperation, UnreadablePostError, ValueError, RecursionError):
        return False  # the view meets the same error (too big, not JSON, nested too deep) and answers it
    return False


def _unstorable_in(value) -> bool:
    if isinstance(value, str):
        return unstorable_text(value)
    if isinstance(value, dict):
        return any(_unstorable_in(k) or _unstorable_in(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_unstorable_in(v) for v in value)
    return False


class ModelListsMiddleware:
    """Everything a request asks about the models answers from one look at each server
    (`registry.one_look`): one listing per page, not one per thing on it that names a model."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with one_look():
            return self.get_response(request)


class ServiceUnavailableMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if request.path.startswith("/api/"):
            return None  # the API answers JSON through its own handlers
        if isinstance(exception, NotAuthenticated):
            return redirect_to_login(request.get_full_path())
        if isinstance(exception, redis.RedisError):
            log.warning("Redis unavailable during %s: %s", request.path, exception)
            return render(request, "error.html", {"title": _("Service unavailable"), "message": REDIS_DOWN}, status=503)
        if isinstance(exception, CurreChatError):
            titles = {
                403: _("Not allowed"),
                404: _("Not found"),
                429: _("Too many requests"),
                503: _("Service unavailable"),
            }
            context = {"title": titles.get(exception.status_code, _("Something is wrong")), "message": str(exception)}
            response = render(request, "error.html", context, status=exception.status_code)
            retry_after = getattr(exception, "retry_after", None)
            if retry_after:
                response["Retry-After"] = str(retry_after)
            return response
        return None
