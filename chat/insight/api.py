"""REST endpoints for teacher insight: a prompt's statistics, material gaps, feedback and their CSV; and the
week at a glance: the topics of a week's questions and the teachers' own answers (../shared/DESIGN.md)."""

from __future__ import annotations

from dataclasses import asdict
from datetime import date, datetime
from typing import Literal

from django.http import HttpResponse
from django.utils.translation import gettext as _
from ninja import Field, Query, Router, Schema, Status

from access.rules import (
    get_answer_for_feedback,
    get_prompt_for_edit,
    search_page,
)
from chat.insight import answers, feedback, topics
from chat.insight import csv_export as insight_csv
from chat.insight import stats as insight
from chat.models import TeacherAnswer
from kernel.errors import InvalidInput

router = Router(tags=["insight"])


# --- Teacher insight: statistics, material gaps, feedback (chat/insight/stats.py, chat/insight/feedback.py) ------
class DayOut(Schema):
    date: date
    messages: int
    tokens: int
    searches: int


class SourceOut(Schema):
    file_id: int
    file_name: str
    section: str
    citations: int


class StatsOut(Schema):
    days: int
    enrolled: int
    active_7d: int
    active_30d: int
    chats: int
    messages: int = Field(description="Students' questions and the answers to them.")
    tokens: int
    by_day: list[DayOut]
    searches_per_answer: float | None
    nothing_relevant_share: float | None = Field(description="Share of answers with a search that found nothing.")
    top_sources: list[SourceOut]
    curation_drop_rate: float | None = Field(description="Share of found passages that curation left out.")
    feedback: dict[str, int]
    leak_guard: dict[str, int] = Field(
        description="Tutor mode: answers the leak guard had rewritten (asked again for a hint) or withheld "
        "(the student was offered a hint instead): {rewritten, withheld}."
    )
    moderation: dict[str, int] = Field(
        description="The safety check: {flagged_input, flagged_output, unavailable} (messages it could not judge)."
    )


class GapOut(Schema):
    id: int
    query: str
    count: int
    first_asked: datetime
    last_asked: datetime
    example: str | None = Field(description="A student's question; null when the chat's privacy level hides it.")
    handled: bool
    handled_at: datetime | None
    search_url: str | None = Field(description="'Try a search' with the query, in a collection you may search.")


class FeedbackIn(Schema):
    rating: Literal["up", "down"]
    comment: str | None = Field(None, description="Left out: the earlier comment stays; empty: removed.")


class FeedbackOut(Schema):
    message_id: int
    rating: str
    comment: str
    updated: datetime


@router.get("/prompts/{int:prompt_id}/stats", tags=["insight"], response=StatsOut)
def prompt_stats(request, prompt_id: int, days: int = Query(30, ge=1, le=insight.MAX_DAYS)):
    """Statistics of the students' chats over the last `days` days (today included): counts only, no chat text."""
    return insight.statistics(get_prompt_for_edit(request.user, prompt_id), days)


@router.get("/prompts/{int:prompt_id}/gaps", tags=["insight"], response=list[GapOut])
def prompt_gaps(request, prompt_id: int):
    """Searches that found nothing relevant, grouped by their stemmed words; open gaps first."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    search = search_page(request.user, prompt)
    return [_gap_out(row, search) for row in insight.gaps(prompt)]


@router.post("/prompts/{int:prompt_id}/gaps/{int:gap_id}/handled", tags=["insight"], response=GapOut)
def gap_handled(request, prompt_id: int, gap_id: int, handled: bool = True):
    """Mark a gap handled (`?handled=false` opens it again); it opens again when asked after this."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    row = insight.mark_gap_handled(prompt, gap_id, handled=handled)
    return _gap_out(row, search_page(request.user, prompt))


def _gap_out(row, search_page: str | None) -> dict:
    return {**asdict(row), "search_url": insight_csv.search_url(search_page, row.query)}


@router.get("/prompts/{int:prompt_id}/export.csv", tags=["insight"], response={200: None})
def export_insight_csv(request, prompt_id: int, what: Literal["stats", "gaps", "feedback"] = "stats", days: int = 30):
    """Statistics per day, the gaps, or the feedback as CSV (UTF-8, for spreadsheets)."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    if not 1 <= days <= insight.MAX_DAYS:
        raise InvalidInput(_("days must be between 1 and %(most)s.") % {"most": insight.MAX_DAYS}, field="days")
    response = HttpResponse(insight_csv.export(prompt, what, days), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="currechat-prompt-{prompt.pk}-{what}.csv"'
    return response


@router.post("/messages/{int:message_id}/feedback", tags=["chats"], response=FeedbackOut)
def give_feedback(request, message_id: int, data: FeedbackIn):
    """Rate an answer in your own chat (again, to change it); the comment is optional."""
    message = get_answer_for_feedback(request.user, message_id)
    stored = feedback.give_feedback(message, data.rating, data.comment)
    return {"message_id": message.pk, "rating": stored.rating, "comment": stored.comment, "updated": stored.updated}


# --- The week at a glance: topics and the teachers' own answers (chat/insight/topics.py, answers.py) -----
class RatingsOut(Schema):
    up: int
    down: int


class TopicOut(Schema):
    id: int
    name: str
    questions: int
    students: int = Field(description="Distinct students who asked in it (at least TOPICS_MIN_STUDENTS).")
    nothing_found: int = Field(description="Questions whose answer searched and found nothing relevant.")
    ratings: RatingsOut
    examples: list[str] = Field(description="Typical questions; empty where the privacy level does not allow them.")


class SourceIn(Schema):
    file_id: int
    chunk_id: str | None = Field(None, description="A passage of the file (a search result's `chunk_id`).")


class TeacherAnswerIn(Schema):
    question: str
    answer: str
    sources: list[SourceIn] | None = Field(None, description="Cited files or passages of the prompt's collections.")


class TeacherAnswerPatch(Schema):
    question: str | None = None
    answer: str | None = None
    sources: list[SourceIn] | None = None


class TeacherAnswerOut(Schema):
    id: int
    question: str
    answer: str
    created: datetime
    expired: bool = Field(description="A cited file changed: not served until saved again.")
    expired_because: str
    sources: list[dict]


@router.get("/prompts/{int:prompt_id}/topics", response=list[TopicOut])
def week_topics(request, prompt_id: int, week: str | None = Query(None, description="ISO week, e.g. 2026-W09")):
    """The topics of the week's student questions, most asked first (this week when left out)."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return topics.topics(prompt, topics.parse_week(week), request.user)


@router.get("/prompts/{int:prompt_id}/teacher-answers", response=list[TeacherAnswerOut])
def list_teacher_answers(request, prompt_id: int):
    """The prompt's teacher answers, expired ones first."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    rows = TeacherAnswer.objects.filter(prompt=prompt)
    return sorted(rows, key=lambda r: (not r.expired, -r.updated.timestamp()))


@router.post("/prompts/{int:prompt_id}/teacher-answers", response={201: TeacherAnswerOut})
def create_teacher_answer(request, prompt_id: int, data: TeacherAnswerIn):
    """A teacher's answer, served from now on to students asking the same question."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    sources = [s.dict() for s in data.sources] if data.sources is not None else None
    return Status(
        201, answers.save_answer(prompt, request.user, question=data.question, answer=data.answer, sources=sources)
    )


@router.patch("/prompts/{int:prompt_id}/teacher-answers/{int:answer_id}", response=TeacherAnswerOut)
def change_teacher_answer(request, prompt_id: int, answer_id: int, data: TeacherAnswerPatch):
    """Change an answer (left out: kept); saving an expired answer serves it again."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    row = answers.get_answer(prompt, answer_id)
    sources = [s.dict() for s in data.sources] if data.sources is not None else None
    return answers.save_answer(
        prompt,
        request.user,
        question=data.question if data.question is not None else row.question,
        answer=data.answer if data.answer is not None else row.answer,
        sources=sources,
        instance=row,
    )


@router.delete("/prompts/{int:prompt_id}/teacher-answers/{int:answer_id}", response={204: None})
def delete_teacher_answer(request, prompt_id: int, answer_id: int):
    prompt = get_prompt_for_edit(request.user, prompt_id)
    answers.delete_answer(answers.get_answer(prompt, answer_id))
    return Status(204, None)
