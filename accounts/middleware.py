"""The signed-in user's saved interface language wins over the browser's.

LocaleMiddleware (before this one) picks the language from the cookie or Accept-Language; a user
who chose one with the switcher has it saved on their account (User.language), so it follows them
to every browser and session. The cookie is set to it too, so the login page after logging out
stays in the same language.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import translation


def saved_language(user) -> str:
    """The user's saved language if it is one we offer, else ""."""
    code = getattr(user, "language", "") if getattr(user, "is_authenticated", False) else ""
    return code if code in dict(settings.LANGUAGES) else ""


class UserLanguageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        code = saved_language(getattr(request, "user", None))
        if code and code != translation.get_language():
            translation.activate(code)
            request.LANGUAGE_CODE = code
        response = self.get_response(request)
        if code and request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) != code:
            set_language_cookie(response, code)
        return response


def set_language_cookie(response, code: str) -> None:
    response.set_cookie(
        settings.LANGUAGE_COOKIE_NAME,
        code,
        max_age=settings.LANGUAGE_COOKIE_AGE,
        path=settings.LANGUAGE_COOKIE_PATH,
        domain=settings.LANGUAGE_COOKIE_DOMAIN,
        secure=settings.LANGUAGE_COOKIE_SECURE,
        httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
        samesite=settings.LANGUAGE_COOKIE_SAMESITE,
    )
