"""A user's saved interface language is applied the moment they log in."""

from __future__ import annotations

from django.contrib.auth.signals import user_logged_in
from django.dispatch import receiver
from django.utils import translation

from accounts.middleware import saved_language


@receiver(user_logged_in)
def apply_saved_language(sender, request, user, **kwargs) -> None:
    # The login response itself (its messages, the redirect) is already in their language; the
    # middleware keeps it so on every later request and puts it in the cookie.
    code = saved_language(user)
    if code and request is not None:
        translation.activate(code)
        request.LANGUAGE_CODE = code
