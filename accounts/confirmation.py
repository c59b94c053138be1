"""Confirming an address: CurreChat mails a link to the address on a profile, and the account's
owner, signed in, follows it. Only an address confirmed this way may link a campus sign-in to the
account (sso/provision.py, SSO_LINK_VERIFIED_EMAIL): it proves that whoever holds the account also
reads that mailbox. An address typed on a profile, set by an administrator or sent by a learning
platform proves neither.

A link works once and expires as a reset link does (PASSWORD_RESET_TIMEOUT): its token is Django's
timestamped HMAC over the account's address and its last confirmation, so following it, or changing
the address, spends every link made before. The worker mails it (accounts/tasks.py), as it does
reset links; the link is made there, never stored in the queue.
"""

from __future__ import annotations

from django.contrib.auth.tokens import PasswordResetTokenGenerator
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes, force_str
from django.utils.http import urlsafe_base64_decode, urlsafe_base64_encode
from django.utils.translation import gettext_lazy

from accounts.mail import mail_user
from accounts.models import User


class _AddressTokens(PasswordResetTokenGenerator):
    key_salt = "accounts.confirmation.AddressTokens"

    def _make_hash_value(self, user: User, timestamp: int) -> str:
        # What the link vouches for (this account, this address) and what spends it (a confirmation).
        last = "" if user.email_confirmed_at is None else str(int(user.email_confirmed_at.timestamp() * 1e6))
        return f"{user.pk}\n{user.email}\n{user.email_confirmed}\n{last}\n{timestamp}"


address_tokens = _AddressTokens()


def confirmation_path(user: User) -> str:
    """The path of a new link confirming `user`'s present address."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("address_confirm", args=[uid, address_tokens.make_token(user)])


def user_for_link(uidb64: str, token: str) -> User | None:
    """The active account a link confirms the address of, or None: made up, used, expired, or for
    an address the account no longer has."""
    try:
        pk = int(force_str(urlsafe_base64_decode(uidb64)))
    except (TypeError, ValueError, OverflowError):
        return None
    user = User.objects.filter(pk=pk, is_active=True).first()
    if user is None or not user.email or not address_tokens.check_token(user, token):
        return None
    return user


def confirm(user: User) -> None:
    """Record `user`'s present address as confirmed (the owner followed the link, signed in)."""
    user.email_confirmed = user.email
    user.email_confirmed_at = timezone.now()
    user.save(update_fields=["email_confirmed", "email_confirmed_at"])


def mail_confirmation(user: User, link: str) -> bool:
    """Mail `link` to `user`'s address, in their language; False (logged) when the server fails."""
    subject = gettext_lazy("Confirm your email address for CurreChat")
    context = {"user": user, "link": link}
    return mail_user(user, subject, "accounts/confirm_mail.txt", context, about="an address confirmation link")
