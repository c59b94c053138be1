"""A prompt's students as its teachers see them: the roster of the prompt page and the API.

A student is known to teachers by their per-prompt number ("Student 7"), which is also the `id` the
roster and its API use: a user id would let a teacher match a pseudonymous student with the same
user in another prompt. A row is named only when the prompt's chat visibility is "named" *and*
every chat the student has in it was started as "named" (see `label_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q
from django.utils.translation import gettext as _

from chat.course import allowances
from chat.models import ChatSession, ChatVisibility, Enrollment, EnrollmentStatus, MessageRole, Prompt
from kernel.errors import NotFound

NEAR_SHARE = 0.8  # the roster flags a student from this share of their weekly budget on


@dataclass(frozen=True)
class RosterRow:
    """A student as the roster shows them (the page, and the API's `StudentOut`, derived from this)."""

    id: int = field(metadata={"description": "The student's number within the prompt ('Student N'); not a user id."})
    label: str
    status: str
    joined: datetime
    last_active: datetime | None
    chats: int
    messages: int
    tokens_this_week: int
    budget: int | None
    blocked: bool

    @property
    def share(self) -> float | None:
        """What the student used of their weekly budget (may pass 1), None without a budget."""
        if self.budget is None:
            return None
        return self.tokens_this_week / self.budget if self.budget else 1.0

    @property
    def not_started(self) -> bool:
        """Enrolled (a roster sync enrolls before the first launch) but has not chatted yet."""
        return self.status == EnrollmentStatus.ENROLLED and self.chats == 0

    @property
    def over(self) -> bool:
        return self.share is not None and self.share >= 1

    @property
    def near(self) -> bool:
        """Near the budget (from NEAR_SHARE of it on), not over it yet: a teacher may raise it in time."""
        return self.share is not None and NEAR_SHARE <= self.share < 1


def known_as(user, number: int | None, visibility: str) -> str:
    """How a teacher may know a student at the privacy level `visibility`: by name only at "named",
    otherwise by their number in the prompt ("Student 7"). `number` is None for someone never
    enrolled (a teacher trying their own prompt).

    For a chat, `visibility` is the level the student was told when the chat started
    (`ChatSession.visibility`), not the prompt's level now: a prompt switched to "named" later
    must not put names on chats written under "Student N"."""
    if visibility == ChatVisibility.NAMED:
        return user.display_name
    if number is None:
        return _("A teacher")
    return Enrollment.label_of(number)


def label_for(prompt: Prompt, enrollment: Enrollment, *, unnamed_chats: bool | None = None) -> str:
    """A roster row's label: the student's name only when the prompt is "named" now and every chat
    they have in it was started as "named"; otherwise "Student N".

    The row carries the number its chats read as "Student N" carry: a name on it would tell the
    teachers who wrote every pseudonymous chat of that number, whatever level the prompt has since
    been switched to. `unnamed_chats` is whether the student has a chat started under another level
    (the roster counts it with its other figures; None: asked here)."""
    if unnamed_chats is None:
        chats = ChatSession.objects.filter(prompt=prompt, user_id=enrollment.student_id)
        unnamed_chats = chats.exclude(visibility=ChatVisibility.NAMED).exists()
    named = prompt.chat_visibility == ChatVisibility.NAMED and not unnamed_chats
    return known_as(enrollment.student, enrollment.number, ChatVisibility.NAMED if named else ChatVisibility.NONE)


def chat_labels(prompt: Prompt, chats) -> list[str]:
    """`known_as` for each of the prompt's chats (users selected with them), with one query."""
    numbers = dict(prompt.enrollments.values_list("student_id", "number"))
    return [known_as(chat.user, numbers.get(chat.user_id), chat.visibility) for chat in chats]


def roster(prompt: Prompt, *, include_removed: bool = True) -> list[RosterRow]:
    """Every student who joined the prompt, enrolled first, with their activity and this week's
    tokens against their budget (three queries and one Redis round trip)."""
    enrollments = list(prompt.enrollments.select_related("student").order_by("number"))
    if not include_removed:
        enrollments = [e for e in enrollments if e.status == EnrollmentStatus.ENROLLED]
    student_ids = [e.student_id for e in enrollments]
    used, budgets = allowances.used_this_week(prompt, student_ids), allowances.budgets_of(prompt, student_ids)
    questions = Count("messages", filter=Q(messages__role=MessageRole.USER))
    unnamed = Count("id", distinct=True, filter=~Q(visibility=ChatVisibility.NAMED))
    per_user = ChatSession.objects.filter(prompt=prompt).values("user_id")
    activity: dict[int, dict] = {
        row["user_id"]: dict(row)
        for row in per_user.annotate(n_chats=Count("id", distinct=True), n_messages=questions, n_unnamed=unnamed)
    }
    rows = []
    for enrollment in enrollments:
        seen = activity.get(enrollment.student_id, {})
        rows.append(
            RosterRow(
                id=enrollment.number,
                label=label_for(prompt, enrollment, unnamed_chats=seen.get("n_unnamed", 0) > 0),
                status=enrollment.status,
                joined=enrollment.created,
                last_active=enrollment.last_active,
                chats=seen.get("n_chats", 0),
                messages=seen.get("n_messages", 0),
                tokens_this_week=used[enrollment.student_id],
                budget=budgets[enrollment.student_id],
                blocked=enrollment.status == EnrollmentStatus.BLOCKED,
            )
        )
    rows.sort(key=lambda r: (r.status != EnrollmentStatus.ENROLLED, r.id))
    return rows


def enrollment_by_number(prompt: Prompt, number: int) -> Enrollment:
    enrollment = prompt.enrollments.select_related("student").filter(number=number).first()
    if enrollment is None:
        raise NotFound(_("There is no such student in this prompt."))
    return enrollment
