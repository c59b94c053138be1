"""Background tasks of accounts (django-tasks on the RQ backend, queue "default"). The pages queue
them through accounts/reset_requests.py and accounts/profile.py; this module imports neither."""

from __future__ import annotations

from django.contrib.auth.forms import PasswordResetForm
from django_tasks import task

from accounts.confirmation import confirmation_path, mail_confirmation
from accounts.models import User
from accounts.resets import mail_link, reset_path, resettable_by_teacher


@task(queue_name="default")
def mail_reset_to_student(user_id: int, site: str) -> bool:
    """Mail a student the link a teacher asked for, on `site` (the scheme and host the teacher used).

    In the worker, so that how long the teacher's page takes does not tell whether a mail went out
    (that would say whether the username is among their students). The link is made here, so it is
    never stored in the queue. False when the student may no longer get one or the mail failed."""
    user = User.objects.filter(pk=user_id).first()
    if user is None or not user.email or not resettable_by_teacher(user):
        return False
    return mail_link(user, site + reset_path(user))


@task(queue_name="default")
def mail_reset_for_address(email: str, site: str) -> int:
    """The login page's "Forgot your password?" for `email`, on `site`: a link mailed to each active
    account with that address and a password of its own (none for an unknown address). Looked up
    here, not in the request, so the page answers alike for every address. Returns the mails sent;
    a failed mail is logged."""
    # Django's own choice of accounts for an address (active, with a usable password); the login
    # page's form (accounts/reset_requests.ResetRequestForm) inherits it unchanged.
    return sum(mail_link(user, site + reset_path(user)) for user in PasswordResetForm().get_users(email))


@task(queue_name="default")
def mail_address_confirmation(user_id: int, address: str, site: str) -> bool:
    """Mail the link confirming `address` to it, on `site`, if it is still the account's own and
    unconfirmed (the user may have changed it since asking). The link is made here, never queued."""
    user = User.objects.filter(pk=user_id, is_active=True).first()
    if user is None or user.email != address or user.email_is_confirmed:
        return False
    return mail_confirmation(user, site + confirmation_path(user))
