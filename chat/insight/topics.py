"""The topics of a week's student questions in a prompt: what a class struggles with, in a minute.

A week's questions (each student message that started a turn; teachers' own previews left out)
are embedded with the prompt's collection embedder, grouped by meaning (chat/insight/clustering.py:
no model call per question), and each group is named — by the chat model in one call for the
whole week, on the budget of the teacher who asked (chat/metering/usage.py), when it is available
and the budget has room; otherwise by the group's characteristic words.

Privacy, as students were told (chat/course/privacy_levels.py): a topic is shown only when at least
TOPICS_MIN_STUDENTS distinct students asked in it. Only questions from chats started under a level
that lets teachers read chats ("pseudonymous" or "named") give a topic its name and its examples,
and never with a student's name; under "none" a topic shows counts only. A prompt whose level was
lowered since shows what the lower level allows.

A week's topics are kept (`TopicDigest`) and built again only when its questions changed, and for
the running week at most every TOPICS_REFRESH_SECONDS, so the page is fast and naming is paid once.
"""

from __future__ import annotations

import bisect
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
from django.conf import settings
from django.db.models import Count, Max
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.insight import clustering
from chat.insight.naming import name_topics
from chat.insight.stats import EXAMPLE_CHARS, NOTHING_RELEVANT, gap_key, prompt_language
from chat.models import (
    ChatVisibility,
    Enrollment,
    Feedback,
    MaterialGap,
    Message,
    MessageRole,
    Prompt,
    TopicDigest,
)
from kernel.errors import InvalidInput, ProviderError, ServiceUnavailable
from rag import query as rag_query
from rag.languages import stopwords
from rag.providers import get_embedding_model

log = logging.getLogger(__name__)

EXAMPLES = 3
EMBED_BATCH = 64


class TopicsUnavailable(ServiceUnavailable):
    """The week's topics could not be built (the embedder failed) and none were kept."""


@dataclass(frozen=True)
class Week:
    label: str  # "2026-W09"
    start: datetime  # Monday 00:00 in TIME_ZONE
    end: datetime

    def before(self) -> Week:
        return week_of(self.start - timedelta(days=1))


def week_of(moment: datetime | None = None) -> Week:
    local = timezone.localtime(moment or timezone.now(), ZoneInfo(settings.TIME_ZONE))
    year, number, _weekday = local.isocalendar()
    return _week(year, number)


def parse_week(label: str | None) -> Week:
    """The ISO week `label` ("2026-W09"); None: this week. Refused with a sentence when malformed."""
    if not label:
        return week_of()
    try:
        year, number = label.upper().split("-W")
        return _week(int(year), int(number))
    except ValueError as exc:
        raise InvalidInput(_("Give the week as year and ISO week number, like 2026-W09."), field="week") from exc


def _week(year: int, number: int) -> Week:
    zone = ZoneInfo(settings.TIME_ZONE)
    monday = date.fromisocalendar(year, number, 1)
    start = datetime(monday.year, monday.month, monday.day, tzinfo=zone)
    end_day = monday + timedelta(days=7)
    return Week(f"{year}-W{number:02d}", start, datetime(end_day.year, end_day.month, end_day.day, tzinfo=zone))


@dataclass
class Asked:
    """One student question of the week and what became of it."""

    id: int
    text: str
    student: int
    readable: bool  # asked in a chat whose level lets teachers read it
    nothing_found: bool = False
    up: int = 0
    down: int = 0
    gap_keys: set[str] = field(default_factory=set)


@dataclass(frozen=True)
class Topic:
    id: int
    name: str
    questions: int
    students: int
    nothing_found: int
    ratings: dict[str, int]
    examples: list[str]
    gaps: list[int]  # material gaps asked in it (links on the page)
    last_week: int | None  # questions in the nearest topic of the week before; None: new


# --- Reading ---------------------------------------------------------------------------------------


def topics(prompt: Prompt, week: Week, teacher) -> list[Topic]:
    """The week's topics as `teacher` may see them (most asked first); built when stale."""
    return shown(prompt, digest(prompt, week, teacher))


def shown(prompt: Prompt, found: TopicDigest) -> list[Topic]:
    """The digest's topics at the prompt's level now and the least number of students now."""
    counts_only = prompt.chat_visibility == ChatVisibility.NONE
    wanted = [] if counts_only else [i for t in found.topics for i in t["examples"]]
    texts = dict(Message.objects.filter(pk__in=wanted).values_list("pk", "content")) if wanted else {}
    rows = []
    for n, row in enumerate(t for t in found.topics if t["students"] >= settings.TOPICS_MIN_STUDENTS):
        name = "" if counts_only else row["name"]
        rows.append(
            Topic(
                id=row["id"],
                name=name or _("Topic %(number)s") % {"number": n + 1},
                questions=row["questions"],
                students=row["students"],
                nothing_found=row["nothing_found"],
                ratings=row["ratings"],
                examples=[_short(texts[i]) for i in row["examples"] if i in texts],
                gaps=row["gaps"],
                last_week=row.get("last_week"),
            )
        )
    return rows


def digest(prompt: Prompt, week: Week, teacher) -> TopicDigest:
    """The week's kept digest, built again when its questions changed (for the running week at
    most every TOPICS_REFRESH_SECONDS)."""
    now = timezone.now()
    seen = _questions(prompt, week).aggregate(n=Count("id"), last=Max("id"))
    state = (seen["n"] or 0, seen["last"] or 0)
    kept = TopicDigest.objects.filter(prompt=prompt, week=week.label).first()
    if kept is not None:
        if (kept.questions, kept.last_question_id) == state:
            return kept
        running = week.start <= now < week.end
        if running and (now - kept.built).total_seconds() < settings.TOPICS_REFRESH_SECONDS:
            return kept
    try:
        built = build(prompt, week, teacher)
    except ProviderError as exc:
        log.warning("Could not build the topics of prompt %s, %s: %s", prompt.pk, week.label, exc)
        if kept is not None:
            return kept  # the last topics built, rather than none
        raise TopicsUnavailable(
            _("The topics cannot be grouped right now: the model server that compares questions is not answering.")
        ) from exc
    found, _created = TopicDigest.objects.update_or_create(
        prompt=prompt,
        week=week.label,
        defaults={"built": now, "questions": state[0], "last_question_id": state[1], "topics": built},
    )
    return found


# --- Building --------------------------------------------------------------------------------------


def _questions(prompt: Prompt, week: Week):
    students = Enrollment.objects.filter(prompt=prompt).values("student_id")
    return Message.objects.filter(
        session__prompt=prompt,
        session__user_id__in=students,  # teachers' own previews are not the class's questions
        role=MessageRole.USER,
        created__gte=week.start,
        created__lt=week.end,
    )


def build(prompt: Prompt, week: Week, teacher) -> list[dict[str, Any]]:
    """The week's topics as stored: every group of at least TOPICS_MIN_STUDENTS students, with the
    centre of its questions' vectors (to follow a topic into the next week)."""
    asked = load(prompt, week)
    if not asked:
        return []
    vectors = embed(prompt, [a.text for a in asked])
    groups = [
        g
        for g in clustering.cluster(vectors, settings.TOPICS_SIMILARITY)
        if len({asked[i].student for i in g}) >= settings.TOPICS_MIN_STUDENTS
    ]
    names = _names(prompt, teacher, asked, vectors, groups)
    language = prompt_language(prompt)
    gap_ids = dict(MaterialGap.objects.filter(prompt=prompt).values_list("key", "pk"))
    previous = TopicDigest.objects.filter(prompt=prompt, week=week.before().label).first()
    rows = []
    for n, (group, name) in enumerate(zip(groups, names, strict=True), start=1):
        members = [asked[i] for i in group]
        readable = [i for i in group if asked[i].readable]
        centre = np.mean(np.asarray([vectors[i] for i in group], dtype=np.float32), axis=0)
        keys = set().union(*(a.gap_keys for a in members))
        rows.append(
            {
                "id": n,
                "name": name,
                "questions": len(members),
                "students": len({a.student for a in members}),
                "nothing_found": sum(a.nothing_found for a in members),
                "ratings": {"up": sum(a.up for a in members), "down": sum(a.down for a in members)},
                # Kept as the questions' ids, read when shown: a chat deleted by its student or by
                # retention takes its text out of every digest too.
                "examples": [asked[i].id for i in clustering.central(vectors, readable, EXAMPLES)] if readable else [],
                "gaps": sorted({gap_ids[k] for k in keys if k in gap_ids}),
                "centre": [round(float(x), 5) for x in centre],
                "last_week": _follow(centre, previous),
                "language": language,
            }
        )
    return rows


def load(prompt: Prompt, week: Week) -> list[Asked]:
    """The week's questions with their answers' searches and ratings (four queries)."""
    rows = _questions(prompt, week).values_list(
        "id", "content", "session_id", "session__user_id", "session__visibility"
    )
    asked, by_session = [], defaultdict(list)
    lowered = prompt.chat_visibility == ChatVisibility.NONE
    for pk, text, session_id, student, visibility in rows.order_by("id"):
        one = Asked(pk, text, student, readable=not lowered and visibility != ChatVisibility.NONE)
        asked.append(one)
        by_session[session_id].append(one)
    if not asked:
        return []
    answers = Message.objects.filter(session_id__in=list(by_session), role=MessageRole.ASSISTANT, id__gt=asked[0].id)

    def question_of(session_id: int, answer_id: int) -> Asked | None:
        questions = by_session[session_id]
        at = bisect.bisect_left([q.id for q in questions], answer_id) - 1
        return questions[at] if at >= 0 else None

    language = prompt_language(prompt)
    empty = answers.filter(tool_results__icontains=NOTHING_RELEVANT).values_list("id", "session_id", "tool_results")
    for answer_id, session_id, results in empty:
        question = question_of(session_id, answer_id)
        for result in results if question else []:
            if result.get("status") == NOTHING_RELEVANT and result.get("query"):
                question.nothing_found = True  # type: ignore[union-attr]
                question.gap_keys.add(gap_key(result["query"], language))  # type: ignore[union-attr]
    rated = Feedback.objects.filter(message__in=answers).values_list("message_id", "message__session_id", "rating")
    for answer_id, session_id, rating in rated:
        question = question_of(session_id, answer_id)
        if question is not None:
            setattr(question, rating, getattr(question, rating) + 1)
    return asked


def embedder_name(prompt: Prompt) -> str:
    """The embedder of the prompt's first usable collection (the site's default without one)."""
    names = prompt.usable_collections().order_by("pk").values_list("embedding_model", flat=True)
    return next((n for n in names if n), settings.EMBEDDING_MODEL)


def embed(prompt: Prompt, texts: list[str]) -> list[list[float]]:
    model = get_embedding_model(embedder_name(prompt))
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        vectors.extend(model.embed_batch([t[:2000] for t in texts[start : start + EMBED_BATCH]]))
    return vectors


def _names(prompt: Prompt, teacher, asked: list[Asked], vectors, groups: list[list[int]]) -> list[str]:
    """A name per group from its readable questions only: the model's, else its characteristic
    words; "" for a group without any (the page calls it "Topic N")."""
    readable = []
    for group in groups:
        members = [i for i in group if asked[i].readable]
        readable.append([asked[i].text for i in clustering.central(vectors, members, 8)] if members else [])
    language = prompt_language(prompt)
    stop = stopwords(language)

    def words_of(text: str) -> list[tuple[str, str]]:
        terms = [t for t in rag_query.tokenize(rag_query.normalise(text), language) if t not in stop and len(t) > 1]
        return [(rag_query.stem(t, language), t) for t in terms]

    words = clustering.characteristic_words(readable, words_of)
    fallback = [", ".join(w) for w in words]
    wanted = [i for i, texts in enumerate(readable) if texts]
    named = name_topics(prompt, teacher, [readable[i] for i in wanted]) if wanted else None
    if named:
        for i, name in zip(wanted, named, strict=True):
            fallback[i] = name
    return fallback


def _follow(centre: np.ndarray, previous: TopicDigest | None) -> int | None:
    """The questions of last week's topic nearest this one, if near enough to be the same topic."""
    if previous is None or not previous.topics:
        return None
    before = np.asarray([t["centre"] for t in previous.topics], dtype=np.float32)
    sims = before @ centre / np.maximum(np.linalg.norm(before, axis=1) * np.linalg.norm(centre), 1e-9)
    best = int(sims.argmax())
    return int(previous.topics[best]["questions"]) if sims[best] >= settings.TOPICS_SIMILARITY else None


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= EXAMPLE_CHARS else line[: EXAMPLE_CHARS - 1].rstrip() + "…"


def totals(found: TopicDigest) -> dict[str, int]:
    """A week's figures for the trend line: questions, topics shown, questions in them."""
    shown_topics = [t for t in found.topics if t["students"] >= settings.TOPICS_MIN_STUDENTS]
    return {
        "questions": found.questions,
        "topics": len(shown_topics),
        "nothing_found": sum(t["nothing_found"] for t in shown_topics),
        "in_topics": sum(t["questions"] for t in shown_topics),
    }
