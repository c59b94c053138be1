"""What the pages ask the worker to mail (accounts/tasks.py): a reset link a teacher asks for a
student, and the login page's "Forgot your password?". The worker makes each link when it sends the
mail, so no link is ever stored in the queue. This module imports the tasks; the tasks import the
reset rules (accounts/resets.py), never this module."""

from __future__ import annotations

from django.contrib.auth.forms import PasswordResetForm

from accounts import tasks
from accounts.models import User
from accounts.resets import mail_configured


def _site(request) -> str:
    """The scheme and host the user came by, for the link the worker makes."""
    return request.build_absolute_uri("/").rstrip("/")


def mail_reset_to_student(request, student: User | None) -> None:
    """A teacher's request: have `student` mailed a link when they may get one this way (None:
    nobody, e.g. a username that is not among the teacher's students). Nothing is returned, so what
    the teacher is told cannot depend on who the username belongs to; the worker sends the mail
    (accounts/tasks.py) and logs a failure."""
    if student is not None and mail_configured() and student.email:
        tasks.mail_reset_to_student.enqueue(student.pk, _site(request))


class ResetRequestForm(PasswordResetForm):
    """The login page's "Forgot your password?": Django's form (the same answer whether or not the
    address is known; mails only active users with a usable password), our mail, sent by the worker
    (accounts/tasks.py): the page does the same work for every address, known or not, so how long it
    takes does not tell whether the address belongs to an account."""

    def save(self, request=None, **_options) -> None:  # type: ignore[override]
        tasks.mail_reset_for_address.enqueue(self.cleaned_data["email"], _site(request))
