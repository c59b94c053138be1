"""The co-teacher picker's look-up: a few teachers by the start of their username or address.

Teachers only, at least LOOKUP_MIN_CHARS characters, at most LOOKUP_MOST answers, rate limited per
teacher (RATE_TEACHER_LOOKUP): a teacher finds the colleague they are typing, and nobody can read
the list of every teacher through it.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema

from access.rules import require_teacher
from accounts.models import LOOKUP_MIN_CHARS, User, find_teachers
from kernel.errors import InvalidInput
from kernel.ratelimit import teacher_lookup_by_user

router = Router(tags=["teachers"])


class TeacherOut(Schema):
    id: int
    username: str
    name: str = Field(description="The teacher's full name, or empty.")
    label: str = Field(description="How to show the teacher: the name, with a chosen username to tell namesakes apart.")
    email: str | None = Field(description="The address, only when it is exactly what was typed.")


class LookupQuery(Schema):
    q: str = Field(max_length=254, description="At least 3 characters: a username or address, or its beginning.")


@router.get("/teachers", response=list[TeacherOut], url_name="teacher_lookup")
def lookup_teachers(request, query: Query[LookupQuery]):
    """At most 5 active teachers (never yourself) whose username or email address is `q` or begins
    with it, exact matches first; for adding co-teachers to a collection or a prompt."""
    require_teacher(request.user)
    text = query.q.strip()
    if len(text) < LOOKUP_MIN_CHARS:
        sentence = _("Type at least %(count)s characters of a username or an email address.")
        raise InvalidInput(sentence % {"count": LOOKUP_MIN_CHARS}, field="q")
    teacher_lookup_by_user().hit(request.user.pk)
    return [_out(user, text) for user in find_teachers(text, asked_by=request.user)]


def _out(user: User, text: str) -> TeacherOut:
    # The address only when typed in full: a beginning finds a colleague but shows no one's address.
    email = user.email if user.email and user.email.casefold() == text.casefold() else None
    return TeacherOut(
        id=user.pk, username=user.username, name=user.get_full_name(), label=user.picker_label, email=email
    )
