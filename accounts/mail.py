"""One mail to one user, in the user's own language: the one sender of reset links, address
confirmations and the week's topics. A failing mail server is logged and answered with False, so a
caller tells its user a sentence (or the worker logs it) instead of raising."""

from __future__ import annotations

import logging
import smtplib

from django.conf import settings
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.functional import Promise

from accounts.models import User

log = logging.getLogger(__name__)


def language_of(user: User) -> str:
    """The language a mail to `user` is written in: theirs, else the site's."""
    return user.language or settings.LANGUAGE_CODE


def send(user: User, subject: str, body: str, *, about: str, headers: dict[str, str] | None = None) -> bool:
    """Send `subject` and `body` to `user`'s address; False (logged as "Could not mail `about` …")
    when the mail server fails."""
    try:
        EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [user.email], headers=headers).send()
    except (smtplib.SMTPException, OSError):
        log.exception("Could not mail %s to user %s", about, user.pk)
        return False
    return True


def mail_user(user: User, subject: Promise, template: str, context: dict, *, about: str) -> bool:
    """Render `template` with `context` and send it with `subject` (lazy, so it is read in the
    user's language); False (logged) when the mail server fails."""
    with translation.override(language_of(user)):
        subject_text, body = str(subject), render_to_string(template, context)
    return send(user, subject_text, body, about=about)
