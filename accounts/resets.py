"""Password reset links: mailed to the account's owner, or made by a superuser.

A link is Django's one-time token (it stops working once the password changes, and after
PASSWORD_RESET_TIMEOUT). Whoever holds it holds the account, so a link reaches only the account's
owner: mailed to the address they gave (a teacher's request for a student, a staff member's in the
admin, "Forgot your password?" on the login page), or shown to a superuser, who hands it over.
Nobody else is ever shown one: a teacher shown a student's link could sign in as the student and
read everything they wrote in every course.

Every reset mail is sent by `mail_link`, in the user's own language. What the pages ask the worker
to mail is in accounts/reset_requests.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.tokens import default_token_generator
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.mail import mail_user
from accounts.models import Role, User


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


@dataclass(frozen=True)
class ResetDelivery:
    """What the maker of a link is told: where it was mailed, or why it was not (and, for a
    superuser only, the link itself to hand over)."""

    sent_to: str = ""  # masked address
    note: str = ""  # why it was not mailed
    link: str = ""  # only ever for a superuser


def deliver_reset_link(request, maker: User, user: User) -> ResetDelivery:
    """Mail `user` a link when mail is configured and they have an address; a superuser `maker`
    gets the link when it could not be mailed, anyone else only the reason."""
    link = reset_link(request, user)
    if not mail_configured():
        note = _("No mail server is configured, so the link could not be mailed.")
    elif not user.email:
        note = _("%(username)s has no email address, so the link could not be mailed.") % {"username": user.username}
    elif not mail_link(user, link):
        note = _("The mail could not be sent.")
    else:
        return ResetDelivery(sent_to=mask_address(user.email))
    return ResetDelivery(note=note, link=link if maker.is_superuser else "")


def resettable_by_teacher(user: User) -> bool:
    """Whether a teacher's request may reach `user` at all: an active student with a password of
    their own. A platform (LTI) account has none to reset; staff and superusers are reset only by
    a superuser."""
    return (
        user.is_active and user.role == Role.STUDENT and not user.is_staff and not user.is_superuser
        and user.has_usable_password()
    )  # fmt: skip


def mail_link(user: User, link: str) -> bool:
    """Send `user` the reset mail with `link`, in their language; False (logged) when the mail server fails."""
    subject = gettext_lazy("Choose a new CurreChat password")
    context = {"user": user, "link": link}
    return mail_user(user, subject, "accounts/reset_mail.txt", context, about="a password reset link")
