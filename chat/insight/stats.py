"""Teacher insight: a prompt's statistics and the gaps in its material.

Every finished answer in a student's chat is counted once, as it ends (`record_answer`), into
small per-prompt-and-day tables (`PromptDay`, `SourceDay`) and the prompt's material gaps
(`MaterialGap`). Statistics and gaps read only those tables, so they take the same few queries
and about the same time for any number of messages, and they keep their counts when chats are
deleted by their students or by retention (`chat/insight/retention.py`). They hold no chat text: the
one piece of a student's text teachers see here, a gap's example question, is a link to the
message, shown only when the chat was started under a level that lets teachers read chats, and
gone with the chat.

Teachers' own chats (a preview of the prompt) are not counted: the statistics are the students'.
"""

from __future__ import annotations

import logging
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db import transaction
from django.db.models import Count, F, Max, Q, Sum
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.insight import safety
from chat.models import (
    ChatVisibility,
    Enrollment,
    MaterialGap,
    Message,
    MessageRole,
    Prompt,
    PromptDay,
    SourceDay,
)
from kernel.compiled import Compiled
from kernel.errors import NotFound
from rag import query as rag_query
from rag.languages import LANGUAGES

log = logging.getLogger(__name__)

MAX_DAYS = 365
TOP_SOURCES = 10
EXAMPLE_CHARS = 300
NOTHING_RELEVANT = "nothing_relevant"


# --- Recording -------------------------------------------------------------------------------------


def prompt_language(prompt: Prompt) -> str:
    """The language gap queries are stemmed in: the most common one of the prompt's collections."""
    languages = Counter(prompt.collections.values_list("language", flat=True))
    for language, _count in languages.most_common():
        if language in LANGUAGES:
            return language
    return "english"


def gap_key(query: str, language: str) -> str:
    """The query as its distinct Snowball stems in sorted order, stop words left out (all of its
    words when it has only stop words), folded as the index folds text: "Photosynthesis of
    plants?" and "plant photosynthesis" are one gap. Empty for a query with no word at all."""
    parsed = rag_query.parse(query, language)
    words = parsed.stems or parsed.terms
    return " ".join(sorted(set(words)))[:500]


def record_answer(
    reply: Message, *, with_tokens: bool = False, tokens: int = 0, student: bool | None = None
) -> bool | None:
    """Count one ended answer (complete, stopped or failed) of a student's chat. Never raises:
    the student's answer matters more than a statistic, so a failure is logged and skipped.
    Returns whether the chat is a student's (None: not known, the statistics failed), so the
    turn's token meter need not ask again.

    Its tokens are counted as its model calls end (`chat.metering.usage.UsageMeter.flush`), with those of
    its searches' curation, as the budget counts them; `with_tokens` counts the chat rounds stored
    on the reply instead, for answers from before that (`backfill`). `tokens`: the turn's tokens its
    meter has not stored yet, added in the same write as the answer's counts (the meter then leaves
    them out, when this returns True: one write of today's row per turn, not two). `student`: whether
    the chat's user has an enrollment in its prompt, when the turn already read it (None: asked here)."""
    try:
        return _record(reply, with_tokens=with_tokens, tokens=tokens, student=student)
    except Exception:  # noqa: BLE001  (statistics must never fail a turn)
        log.exception("Could not count answer %s in the statistics", reply.pk)
        return None


# Read at the end of every answer: its SQL is compiled once (kernel/compiled.py), the row read
# afresh. Grouped by the chat (one row; none when nothing came before), as `aggregate()` gives no
# queryset to compile.
_LAST_BEFORE = Compiled(
    lambda chat, reply: (
        Message.objects.filter(session_id=chat, id__lt=reply)
        .order_by()
        .values("session_id")
        .annotate(
            question=Max("id", filter=Q(role=MessageRole.USER)), answer=Max("id", filter=Q(role=MessageRole.ASSISTANT))
        )
        .values_list("question", "answer")
    ),
    int,
    int,
)


def _record(reply: Message, *, with_tokens: bool, tokens: int, student: bool | None) -> bool:
    session = reply.session
    prompt = session.prompt
    if student is None:
        student = Enrollment.objects.filter(prompt=prompt, student_id=session.user_id).exists()
    if not student:
        return False  # a teacher's own chat
    # One read for the chat's messages before this answer: its question, and any earlier answer.
    last = _LAST_BEFORE.rows(session.id, reply.id)
    question, answer = last[0] if last else (None, None)
    answered_before = question is not None and answer is not None and answer > question
    searches = [r for r in reply.tool_results if r.get("query")]
    usage = reply.token_usage or {}
    counts = {
        "chats": 0 if answer is not None else 1,
        "questions": 0 if question is None or answered_before else 1,
        "answers": 1,
        "tokens": tokens
        + (int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0) if with_tokens else 0),
        "searches": len(searches),
        "answers_nothing_relevant": int(any(r.get("status") == NOTHING_RELEVANT for r in searches)),
        "passages_kept": sum(len(r.get("passages") or []) for r in searches),
        "passages_dropped": sum(int(r.get("dropped") or 0) for r in searches),
    }
    day = timezone.localdate(reply.created)
    # The counts, cited sources and gaps of one answer are stored together or not at all; an answer
    # with neither sources nor gaps (most) makes one UPDATE: no transaction to open (issue 44).
    together = bool(reply.citations) or bool(counts["answers_nothing_relevant"])
    with transaction.atomic() if together else nullcontext():
        add_to_day(prompt.pk, day, **counts)
        _count_sources(prompt.pk, day, reply.citations)
        example = question if session.visibility != ChatVisibility.NONE else None
        language = prompt_language(prompt) if counts["answers_nothing_relevant"] else "english"
        keys: set[str] = set()
        for result in searches:
            if result.get("status") == NOTHING_RELEVANT:
                key = gap_key(result["query"], language)
                if key and key not in keys:  # a search repeated within one answer is asked once
                    keys.add(key)
                    _count_gap(prompt.pk, key, result["query"], reply.created, example)
    return True


def add_to_day(prompt_id: int, day: date, **counts: int) -> None:
    """Add `counts` (field -> amount, negative to take back) to the prompt's row for `day`."""
    PromptDay.add(prompt_id, day, **counts)


def _count_sources(prompt_id: int, day: date, citations: list[dict]) -> None:
    cited = Counter((c.get("file_id"), c.get("file_name") or "", (c.get("section") or "")[:300]) for c in citations)
    for (file_id, file_name, section), n in cited.items():
        if file_id is None:
            continue
        row, _ = SourceDay.objects.get_or_create(
            prompt_id=prompt_id, day=day, file_id=file_id, section=section, defaults={"file_name": file_name[:255]}
        )
        SourceDay.objects.filter(pk=row.pk).update(citations=F("citations") + n, file_name=file_name[:255])


def _count_gap(prompt_id: int, key: str, query: str, when: datetime, example: int | None) -> None:
    gap, _ = MaterialGap.objects.get_or_create(
        prompt_id=prompt_id, key=key, defaults={"query": query[:500], "first_asked": when, "last_asked": when}
    )
    changes: dict = {"count": F("count") + 1, "query": query[:500], "last_asked": when}
    if example is not None:
        changes["example_id"] = example
    MaterialGap.objects.filter(pk=gap.pk).update(**changes)


# --- Statistics ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DayRow:
    date: date
    messages: int
    tokens: int
    searches: int


@dataclass(frozen=True)
class SourceRow:
    file_id: int
    file_name: str
    section: str
    citations: int


@dataclass(frozen=True)
class Statistics:
    """A prompt's statistics over its last `days` days (today included); `None` rates when
    there was nothing to divide by."""

    days: int
    enrolled: int
    active_7d: int
    active_30d: int
    chats: int
    messages: int
    tokens: int
    by_day: list[DayRow]
    searches_per_answer: float | None
    nothing_relevant_share: float | None
    top_sources: list[SourceRow]
    curation_drop_rate: float | None
    feedback: dict[str, int]
    leak_guard: dict[str, int]  # answers tutor mode's leak guard had rewritten or withheld (chat/insight/safety.py)
    moderation: dict[str, int]  # messages and answers the safety check flagged, or could not judge


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def statistics(prompt: Prompt, days: int = 30, now: datetime | None = None) -> Statistics:
    """Four queries, whatever the number of chats: the day rows, the enrollments, the sources, the
    safety counts."""
    now = now or timezone.now()
    today = timezone.localdate(now)
    start = today - timedelta(days=days - 1)
    rows = {row.day: row for row in PromptDay.objects.filter(prompt=prompt, day__gte=start, day__lte=today)}
    people = Enrollment.objects.filter(prompt=prompt).aggregate(
        enrolled=Count("id", filter=Q(status="enrolled")),
        active_7d=Count("id", filter=Q(last_active__gte=now - timedelta(days=7))),
        active_30d=Count("id", filter=Q(last_active__gte=now - timedelta(days=30))),
    )
    sources = (
        SourceDay.objects.filter(prompt=prompt, day__gte=start, day__lte=today)
        .values("file_id", "section")
        .annotate(n=Sum("citations"), name=Max("file_name"))
        .order_by("-n", "name", "section")[:TOP_SOURCES]
    )
    guarded = safety.totals(prompt, days, today)
    total = Counter[str]()
    for row in rows.values():
        for name in ("chats", "questions", "answers", "tokens", "searches", "answers_nothing_relevant"):
            total[name] += getattr(row, name)
        for name in ("passages_kept", "passages_dropped", "feedback_up", "feedback_down"):
            total[name] += getattr(row, name)
    by_day = []
    for offset in range(days):
        day = start + timedelta(days=offset)
        found = rows.get(day)
        by_day.append(
            DayRow(day, found.questions + found.answers, found.tokens, found.searches)
            if found
            else DayRow(day, 0, 0, 0)
        )
    return Statistics(
        days=days,
        enrolled=people["enrolled"],
        active_7d=people["active_7d"],
        active_30d=people["active_30d"],
        chats=total["chats"],
        messages=total["questions"] + total["answers"],
        tokens=total["tokens"],
        by_day=by_day,
        searches_per_answer=_ratio(total["searches"], total["answers"]),
        nothing_relevant_share=_ratio(total["answers_nothing_relevant"], total["answers"]),
        top_sources=[SourceRow(s["file_id"], s["name"], s["section"], s["n"]) for s in sources],
        curation_drop_rate=_ratio(total["passages_dropped"], total["passages_kept"] + total["passages_dropped"]),
        feedback={"up": total["feedback_up"], "down": total["feedback_down"]},
        leak_guard=safety.leak_guard(guarded),
        moderation=safety.moderation(guarded),
    )


# --- Material gaps ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GapRow:
    id: int
    query: str
    count: int
    first_asked: datetime
    last_asked: datetime
    example: str | None  # a student's question, only from a chat teachers may read
    handled: bool
    handled_at: datetime | None


def gaps(prompt: Prompt, *, limit: int = 500) -> list[GapRow]:
    """The prompt's gaps, open ones first, most asked first (one query)."""
    found = MaterialGap.objects.filter(prompt=prompt).select_related("example__session").order_by("-last_asked")[:limit]
    rows = [_gap_row(gap) for gap in found]
    rows.sort(key=lambda r: (r.handled, -r.count, -r.last_asked.timestamp()))
    return rows


def _gap_row(gap: MaterialGap) -> GapRow:
    return GapRow(
        id=gap.pk,
        query=gap.query,
        count=gap.count,
        first_asked=gap.first_asked,
        last_asked=gap.last_asked,
        example=_example(gap),
        handled=gap.handled,
        handled_at=gap.handled_at,
    )


def _example(gap: MaterialGap) -> str | None:
    message = gap.example
    if message is None or message.session.visibility == ChatVisibility.NONE:
        return None
    text = " ".join(message.content.split())
    return text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1].rstrip() + "…"


def mark_gap_handled(prompt: Prompt, gap_id: int, handled: bool = True) -> GapRow:
    """Mark a gap handled (e.g. after uploading material) or open again. A handled gap is open
    again as soon as a student asks it after this moment."""
    gap = MaterialGap.objects.filter(prompt=prompt, pk=gap_id).select_related("example__session").first()
    if gap is None:
        raise NotFound(_("There is no such gap in this prompt."))
    gap.handled_at = timezone.now() if handled else None
    gap.save(update_fields=["handled_at"])
    return _gap_row(gap)


def backfill(batch: int = 1000) -> int:
    """Count the stored answers of prompts that have no statistics yet (chats from before this
    feature existed), as if each had just ended. Prompts with any counts are left alone, so
    running it twice counts nothing twice. Returns the number of answers counted."""
    counted = PromptDay.objects.values("prompt_id")
    answers = Message.objects.filter(role=MessageRole.ASSISTANT).exclude(session__prompt_id__in=counted)
    ids = list(answers.order_by("id").values_list("id", flat=True))
    for start in range(0, len(ids), batch):
        with transaction.atomic():
            for reply in Message.objects.filter(id__in=ids[start : start + batch]).select_related("session__prompt"):
                record_answer(reply, with_tokens=True)
    return len(ids)
