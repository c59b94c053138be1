"""Students' thumbs up or down on answers: the one write function, and the list teachers read.

A student rates answers in their own chats only, and may change the rating (or the comment) as
often as they like; the day statistics follow each change, so the counts stay right without
reading the feedback table. Teachers see a rating's comment, question and answer only when the
chat was started under a level that lets teachers read chats, labelled as its student was told.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.insight.stats import add_to_day
from chat.models import (
    ChatVisibility,
    Enrollment,
    Feedback,
    FeedbackRating,
    Message,
    MessageRole,
    MessageStatus,
    Prompt,
)
from kernel.errors import Conflict, InvalidInput
from kernel.formats import number

MAX_COMMENT_CHARS = 2000
_RATED = (MessageStatus.COMPLETE, MessageStatus.STOPPED)


def give_feedback(message: Message, rating: str, comment: str | None = None) -> Feedback:
    """Store (or change) the feedback on `message`, an answer the caller has checked is in the
    user's own chat (`access.rules.get_answer_for_feedback`). A `comment` of None keeps
    the one given before; "" removes it."""
    if rating not in FeedbackRating.values:
        raise InvalidInput(_("Rate the answer with 'up' or 'down'."), field="rating")
    comment = comment.strip() if comment is not None else None
    if comment is not None and len(comment) > MAX_COMMENT_CHARS:
        sentence = _("The comment has %(length)s characters; the most is %(most)s.")
        raise InvalidInput(
            sentence % {"length": number(len(comment)), "most": number(MAX_COMMENT_CHARS)}, field="comment"
        )
    if message.status not in _RATED:
        raise Conflict(_("Only a finished answer can be rated."))
    session = message.session
    counted = Enrollment.objects.filter(prompt_id=session.prompt_id, student_id=session.user_id).exists()
    day = timezone.localdate(message.created)
    with transaction.atomic():
        feedback = Feedback.objects.select_for_update().filter(message=message).first()
        before = feedback.rating if feedback else None
        if feedback is None:
            feedback = Feedback(message=message, prompt_id=session.prompt_id)
        feedback.rating = rating
        if comment is not None:
            feedback.comment = comment
        feedback.save()
        if counted and before != rating:
            change = {f"feedback_{rating}": 1}
            if before:
                change[f"feedback_{before}"] = -1
            add_to_day(session.prompt_id, day, **change)
    return feedback


def own_ratings(session) -> dict[int, dict[str, str]]:
    """{answer id: {"rating", "comment"}} of a chat, for its own student's page."""
    rated = Feedback.objects.filter(message__session=session).values("message_id", "rating", "comment")
    return {row["message_id"]: {"rating": row["rating"], "comment": row["comment"]} for row in rated}


def note_for_student(visibility: str) -> str:
    """What a student is told their teachers see of a rating, at the chat's privacy level."""
    if visibility == ChatVisibility.NONE:
        return _("Your teachers see only how many answers were rated up or down.")
    if visibility == ChatVisibility.NAMED:
        return _("Your teachers see the rating and comment with this question and answer, under your name.")
    return _(
        "Your teachers see the rating and comment with this question and answer, under “Student N”, not your name."
    )


@dataclass(frozen=True)
class FeedbackRow:
    """One rating as a teacher sees it; text fields are None when the chat's level hides them."""

    id: int
    rating: str
    updated: datetime
    student: str | None
    comment: str | None
    question: str | None
    answer: str | None
    chat_id: int | None  # for a link to the chat, when teachers may read it


def feedback_rows(prompt: Prompt, *, limit: int = 200) -> list[FeedbackRow]:
    """The latest ratings on the prompt's students' answers (three queries)."""
    rated = list(
        Feedback.objects.filter(prompt=prompt).select_related("message__session__user").order_by("-updated")[:limit]
    )
    students = {e.student_id: e for e in Enrollment.objects.filter(prompt=prompt)}
    sessions = {f.message.session_id for f in rated}
    questions: dict[int, list[Message]] = {}
    for question in Message.objects.filter(session_id__in=sessions, role=MessageRole.USER).order_by("id"):
        questions.setdefault(question.session_id, []).append(question)
    rows = []
    for feedback in rated:
        answer, session = feedback.message, feedback.message.session
        enrollment = students.get(session.user_id)
        if enrollment is None:
            continue  # a teacher's own chat
        readable = session.visibility != ChatVisibility.NONE
        asked = [q for q in questions.get(session.pk, []) if q.pk < answer.pk]
        student: str | None
        if session.visibility == ChatVisibility.NAMED:
            student = session.user.display_name
        else:
            student = enrollment.label if readable else None
        rows.append(
            FeedbackRow(
                id=feedback.pk,
                rating=feedback.rating,
                updated=feedback.updated,
                student=student,
                comment=feedback.comment if readable else None,
                question=asked[-1].content if readable and asked else None,
                answer=answer.content if readable else None,
                chat_id=session.pk if readable else None,
            )
        )
    return rows
