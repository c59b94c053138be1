"""Password reset links: made by an administrator or a student's teacher, or asked for by the user.

A link is Django's one-time token (it stops working once the password changes, and after
PASSWORD_RESET_TIMEOUT). No mail server is assumed: without EMAIL_HOST a link is shown to the person
who made it, to hand over. With EMAIL_HOST it is mailed to the user's address when they have one
(the maker is told where, masked), and users may ask for a link on the login page.

Every reset mail is made by `reset_message`, in the user's own language.
"""

from __future__ import annotations

import logging
import smtplib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm
from django.contrib.auth.tokens import default_token_generator
from django.core.mail import EmailMessage
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import translation
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _

from accounts.models import User

log = logging.getLogger(__name__)


def mail_configured() -> bool:
    """Whether a mail server is set up (read per call, so tests and settings changes see it)."""
    return bool(settings.EMAIL_HOST)


def mask_address(address: str) -> str:
    """`jaana@example.org` → `j…@example.org`: enough for the maker to recognise, not to harvest."""
    local, _at, domain = address.rpartition("@")
    return f"{local[:1]}…@{domain}" if local else "…"


def reset_path(user: User) -> str:
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password_reset_confirm", args=[uid, default_token_generator.make_token(user)])


def reset_link(request, user: User) -> str:
    """A one-time link that lets `user` choose a new password."""
    return request.build_absolute_uri(reset_path(user))


def reset_message(user: User, link: str) -> EmailMessage:
    """The reset mail to `user` carrying `link`, in the user's language."""
    with translation.override(user.language or settings.LANGUAGE_CODE):
        subject = _("Choose a new CurreChat password")
        body = render_to_string("accounts/reset_mail.txt", {"user": user, "link": link})
    return EmailMessage(subject, body, settings.DEFAULT_FROM_EMAIL, [user.email])


@dataclass(frozen=True)
class ResetDelivery:
    """What the maker of a link is shown: the link itself, or where it was mailed."""

    link: str = ""  # empty once mailed: the user's inbox is the one place it should be
    sent_to: str = ""  # masked address
    note: str = ""  # why the link is shown although mail is configured


def deliver_reset_link(request, user: User) -> ResetDelivery:
    """Make a link for `user` and mail it when mail is configured and they have an address."""
    link = reset_link(request, user)
    if not mail_configured():
        return ResetDelivery(link=link)
    if not user.email:
        note = _("%(username)s has no email address, so the link is shown here instead.")
        return ResetDelivery(link=link, note=note % {"username": user.username})
    if not _mail(user, link):
        return ResetDelivery(link=link, note=_("The mail could not be sent, so the link is shown here instead."))
    return ResetDelivery(sent_to=mask_address(user.email))


def _mail(user: User, link: str) -> bool:
    """Send `user` the reset mail with `link`; False (logged) when the mail server fails."""
    try:
        reset_message(user, link).send()
    except (smtplib.SMTPException, OSError):
        log.exception("Could not mail a password reset link to user %s", user.pk)
        return False
    return True


class ResetRequestForm(PasswordResetForm):
    """The login page's "Forgot your password?": Django's form (the same answer whether or not the
    address is known; mails only active users with a usable password), our mail."""

    def send_mail(
        self,
        subject_template_name: str,
        email_template_name: str,
        context: dict[str, Any],
        from_email: str | None,
        to_email: str,
        html_email_template_name: str | None = None,
    ) -> None:
        user = context["user"]
        path = reverse("password_reset_confirm", args=[context["uid"], context["token"]])
        # A failure is logged, never shown: the answer must not differ for addresses that exist.
        _mail(user, f"{context['protocol']}://{context['domain']}{path}")
