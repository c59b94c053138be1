"""The one write path of enrollments: students join by code, teachers remove or block them.

A removed student may join again with the code (and keeps their "Student N" label); a blocked one
may not. Removal takes effect at once everywhere, because every permission check reads the
enrollment's current status (access.rules). Joining by code (the join page, `POST /prompts/join`)
needs the student's confirmation of the prompt's privacy notice, recorded on the enrollment with
its level (chat.course.privacy_levels).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.models import User
from chat.course import privacy_levels as levels
from chat.models import Enrollment, EnrollmentStatus, Prompt, PromptState, new_join_code
from kernel.errors import Forbidden, InvalidInput, NotFound

BLOCKED = gettext_lazy(
    "Your teacher has removed you from this assistant, and you cannot join it again. Ask them if this is a mistake."
)


def check_enrollment(prompt: Prompt, student: User) -> None:
    """Who may be a prompt's student: an active user who is not one of its teachers."""
    if not student.is_active:
        raise InvalidInput(_("%(name)s's account is deactivated.") % {"name": student.username}, field="student")
    if prompt.owner_id == student.pk or prompt.co_teachers.filter(pk=student.pk).exists():
        raise Forbidden(_("This is your own prompt; teachers don't need to join their own prompts."))


def enroll(prompt: Prompt, student: User) -> Enrollment:
    """Enroll `student` in `prompt` after `check_enrollment` (idempotent; a removed student is
    enrolled again under their old label; a blocked one is refused)."""
    check_enrollment(prompt, student)
    existing = Enrollment.objects.filter(prompt=prompt, student=student).first()
    if existing is not None:
        if existing.status == EnrollmentStatus.BLOCKED:
            raise Forbidden(str(BLOCKED))
        if existing.status != EnrollmentStatus.ENROLLED:
            existing.status = EnrollmentStatus.ENROLLED
            existing.save(update_fields=["status"])
        return existing
    for _attempt in range(5):  # two students joining at the same moment may draw the same number: draw again
        try:
            with transaction.atomic():
                return Enrollment.objects.create(prompt=prompt, student=student)
        except IntegrityError:
            existing = Enrollment.objects.filter(prompt=prompt, student=student).first()
            if existing is not None:  # the same student joined twice at once
                return existing
    raise Forbidden(_("Too many students are joining at this moment; try again."))


NOT_CONFIRMED = gettext_lazy(
    "Confirm that you have read the privacy notice to join: it says what is stored and who reads your chats."
)


def join_prompt(user, code: str, *, confirmed: bool | None, seen_level: str | None = None) -> Prompt:
    """Enroll a student in the prompt with this join code (idempotent), who `confirmed` reading its
    privacy notice at `seen_level` (None: the level now); refused when they did not (False), and
    when the level rose while they read (chat.course.privacy_levels). `confirmed` None is a program that
    does not ask (the API's `{code}` of old): enrolled as a learning platform enrolls, told the
    level now, with no confirmation recorded. The edge has checked that `user` is signed in and
    active (access.rules.require_login)."""
    prompt = Prompt.objects.filter(join_code=code.strip().upper()).first()
    if prompt is None or prompt.state() == PromptState.OFF:
        raise NotFound(_("No active assistant has this join code. Check the code with your teacher."))
    # Who may join is settled first (the same checks `enroll` makes): a teacher of the prompt or a
    # blocked student is told so whether or not they ticked the box.
    check_enrollment(prompt, user)
    if Enrollment.objects.filter(prompt=prompt, student=user, status=EnrollmentStatus.BLOCKED).exists():
        raise Forbidden(str(BLOCKED))
    if confirmed is None:
        enroll(prompt, user)
        return prompt
    if not confirmed:
        raise InvalidInput(str(NOT_CONFIRMED), field="privacy_confirmed")
    level = levels.level_to_confirm(prompt, seen_level)
    with transaction.atomic():
        levels.record_confirmation(enroll(prompt, user), level)
    return prompt


def remove_student(enrollment: Enrollment, *, block: bool = False) -> Enrollment:
    """Take a student out of the prompt (and, with `block`, keep them from joining again)."""
    enrollment.status = EnrollmentStatus.BLOCKED if block else EnrollmentStatus.REMOVED
    enrollment.save(update_fields=["status"])
    return enrollment


def readmit_student(enrollment: Enrollment) -> Enrollment:
    """Undo a removal or block: the student is enrolled again."""
    enrollment.status = EnrollmentStatus.ENROLLED
    enrollment.save(update_fields=["status"])
    return enrollment


def set_status(enrollment: Enrollment, status: str) -> Enrollment:
    """Move an enrollment to `status` through the function that owns that change (the admin's one way)."""
    if status == EnrollmentStatus.ENROLLED:
        return readmit_student(enrollment)
    return remove_student(enrollment, block=status == EnrollmentStatus.BLOCKED)


def rotate_join_code(prompt: Prompt) -> str:
    """A new join code: the old code and link stop working at once."""
    for _attempt in range(5):
        prompt.join_code = new_join_code()
        try:
            with transaction.atomic():
                prompt.save(update_fields=["join_code", "updated"])
            return prompt.join_code
        except IntegrityError:
            continue
    raise Forbidden(_("Could not draw a new join code; try again."))
