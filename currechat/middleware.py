"""Turn domain errors and a lost backing service into readable pages instead of server errors; one
look at the model servers per request."""

from __future__ import annotations

import logging

import redis
from django.contrib.auth.views import redirect_to_login
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernel.errors import CurreChatError, NotAuthenticated
from rag.providers.registry import one_look

log = logging.getLogger(__name__)

REDIS_DOWN = gettext_lazy(
    "The search index and task queue (Redis) cannot be reached right now. Your data is safe; try again "
    "in a moment, and if this persists ask your administrator to check Redis."
)


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
