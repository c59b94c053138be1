"""Whom a teacher may ask CurreChat to mail a password-reset link to."""

from __future__ import annotations

from accounts.models import User
from accounts.resets import resettable_by_teacher
from chat.models import Prompt, enrolled_q


def student_for_reset(teacher: User, username: str) -> User | None:
    """The student a teacher's reset request may reach: enrolled now in a prompt `teacher` teaches,
    with a password of their own (accounts.resets.resettable_by_teacher). None for anyone else, and
    the caller must answer the same either way: the answer would otherwise tell a teacher whether a
    username is among their students, linking it to "Student N"."""
    user = User.objects.filter(username=username.strip()).first()
    if user is None or not resettable_by_teacher(user):
        return None
    return user if Prompt.objects.editable_by(teacher).filter(enrolled_q(user)).exists() else None
