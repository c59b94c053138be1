"""How long chats are kept: `CHAT_RETENTION_DAYS` for the site, a prompt's own shorter value.

A chat is deleted (with its messages, their feedback, and any gap's example taken from it) when
its last activity is older than its prompt's retention. Statistics and gaps keep their counts:
they were added up as each answer ended (`chat/insight/stats.py`), so deleting chats changes no figure.
The worker runs `purge_expired` once a day (`chat.tasks.schedule_purge`); `manage.py purge_chats` runs it now.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from chat.models import ChatSession, Message, Prompt

log = logging.getLogger(__name__)

PURGE_EVERY = timedelta(days=1)


def retention_days(prompt: Prompt) -> int | None:
    """Days a prompt's chats are kept: its own value when shorter than the site's; None = forever."""
    site = settings.CHAT_RETENTION_DAYS or None
    own = prompt.retention_days
    if own and site:
        return min(own, site)
    return own or site


@dataclass(frozen=True)
class PurgeReport:
    chats: int
    messages: int


def expired_chats(now: datetime | None = None):
    """The chats older than their prompt's retention (by last activity)."""
    now = now or timezone.now()
    expired = ChatSession.objects.none()
    site = settings.CHAT_RETENTION_DAYS or None
    own = Prompt.objects.filter(retention_days__isnull=False).values_list("pk", "retention_days")
    shorter: dict[int, int] = {pk: days for pk, days in own if days and (not site or days < site)}
    if site:
        expired = ChatSession.objects.filter(updated__lt=now - timedelta(days=site)).exclude(prompt_id__in=shorter)
    for prompt_id, days in shorter.items():
        expired = expired | ChatSession.objects.filter(prompt_id=prompt_id, updated__lt=now - timedelta(days=days))
    return expired


def purge_expired(now: datetime | None = None, *, dry_run: bool = False) -> PurgeReport:
    """Delete the expired chats; how many chats and messages went (or would go, with `dry_run`)."""
    ids = list(expired_chats(now).values_list("pk", flat=True))
    messages = Message.objects.filter(session_id__in=ids).aggregate(n=Count("id"))["n"] if ids else 0
    if ids and not dry_run:
        for start in range(0, len(ids), 500):  # bounded statements: SQLite limits the parameters
            ChatSession.objects.filter(pk__in=ids[start : start + 500]).delete()
        log.info("Retention: deleted %d chats with %d messages", len(ids), messages)
    return PurgeReport(chats=len(ids), messages=messages)
