"""What the guards did in a prompt's student chats, counted per day (`SafetyDay`): answers the leak
guard had rewritten or withheld, messages and answers the safety check (moderation) flagged, and
messages it could not judge. Counts only: teachers read the chats themselves only at the level the
students were told (`ChatSession.objects.readable_by`), where the answer shows what the guard did
(`Message.guard`).

Like the statistics (chat/insight/stats.py), teachers' own chats are not counted, and a failure to
count never fails the student's turn.
"""

from __future__ import annotations

import logging
from datetime import date, timedelta

from django.db.models import Sum
from django.utils import timezone

from chat.models import Enrollment, Message, Prompt, SafetyDay

log = logging.getLogger(__name__)

FIELDS = ("leak_rewritten", "leak_withheld", "flagged_input", "flagged_output", "moderation_down")


def count(reply: Message, field: str) -> None:
    """One more `field` for the reply's prompt today, if its chat is a student's. Never raises."""
    if field not in FIELDS:
        raise ValueError(f"Not a safety count: {field}")
    if reply.pk is None:  # an answer check's reply (chat/checks/play.py): no student's chat
        return
    try:
        session = reply.session
        if not Enrollment.objects.filter(prompt_id=session.prompt_id, student_id=session.user_id).exists():
            return  # a teacher's own chat
        SafetyDay.add(session.prompt_id, timezone.localdate(), **{field: 1})
    except Exception:  # noqa: BLE001  (a count must never fail a turn)
        log.exception("Could not count %s for message %s", field, reply.pk)


def totals(prompt: Prompt, days: int, today: date | None = None) -> dict[str, int]:
    """The counts of the last `days` days (today included)."""
    today = today or timezone.localdate()
    rows = SafetyDay.objects.filter(prompt=prompt, day__gt=today - timedelta(days=days), day__lte=today)
    summed = rows.aggregate(**{name: Sum(name) for name in FIELDS})
    return {name: summed[name] or 0 for name in FIELDS}


def leak_guard(counted: dict[str, int]) -> dict[str, int]:
    """The statistics' `leak_guard` (DESIGN.md, "Tutor mode")."""
    return {"rewritten": counted["leak_rewritten"], "withheld": counted["leak_withheld"]}


def moderation(counted: dict[str, int]) -> dict[str, int]:
    """The statistics' `moderation`: flagged messages and answers, messages it could not judge."""
    return {
        "flagged_input": counted["flagged_input"],
        "flagged_output": counted["flagged_output"],
        "unavailable": counted["moderation_down"],
    }
