"""The one write path of enrollments: students join prompts by code; teachers and admins enroll."""

from __future__ import annotations

from accounts.models import User
from accounts.permissions import Forbidden, require_login
from chat.models import Enrollment, Prompt
from currechat.errors import InvalidInput, NotFound


def check_enrollment(prompt: Prompt, student: User) -> None:
    """Who may be a prompt's student: an active user who is not its teacher."""
    if not student.is_active:
        raise InvalidInput(f"{student.username}'s account is deactivated.", field="student")
    if prompt.owner_id == student.pk:
        raise Forbidden("This is your own prompt; teachers don't need to join their own prompts.")


def enroll(prompt: Prompt, student: User) -> Enrollment:
    """Enroll `student` in `prompt` after `check_enrollment` (idempotent)."""
    check_enrollment(prompt, student)
    enrollment, _ = Enrollment.objects.get_or_create(student=student, prompt=prompt)
    return enrollment


def join_prompt(user, code: str) -> Prompt:
    """Enroll a student in the active prompt with this join code (idempotent)."""
    require_login(user)
    prompt = Prompt.objects.filter(join_code=code.strip().upper()).first()
    if prompt is None or not prompt.active:
        raise NotFound("No active assistant has this join code. Check the code with your teacher.")
    enroll(prompt, user)
    return prompt
