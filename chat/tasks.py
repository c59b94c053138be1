"""Background tasks of chats (django-tasks on the RQ backend), each with its scheduling half: this
module imports the rooms whose work it runs, never the reverse. The answer checks' task is their
room's own (chat/checks/tasks.py), since the checks queue runs themselves."""

from __future__ import annotations

from datetime import timedelta

from django_tasks import task

from chat.checks.tasks import run_answer_checks  # noqa: F401  (see below)
from chat.insight import digest_mail, retention
from kernel.schedule import schedule_once

# Answer-check runs queued under this module's name before their task moved to chat/checks/tasks.py
# (a job names its task by import path) still find it here after an upgrade.
__all__ = ["mail_weekly_topics", "purge_expired_chats", "run_answer_checks", "schedule_mail", "schedule_purge"]

_PURGE_SCHEDULED_KEY = "currechat:purge-chats:scheduled"
_MAIL_SCHEDULED_KEY = "currechat:topics-mail:scheduled"


@task(queue_name="default")
def purge_expired_chats() -> int:
    """Delete chats past their retention, then queue the next daily run (whatever happened, so a
    failed run does not end the schedule)."""
    try:
        return retention.purge_expired().chats
    finally:
        schedule_purge(after=retention.PURGE_EVERY, replace=True)


def schedule_purge(*, after: timedelta, replace: bool = False) -> bool:
    """Queue the purge task to run `after` from now, unless one is queued already
    (kernel.schedule.schedule_once). True when a run was queued."""
    return schedule_once(purge_expired_chats, _PURGE_SCHEDULED_KEY, after=after, replace=replace)


@task(queue_name="default")
def mail_weekly_topics() -> int:
    """Mail last week's topics to the teachers who asked for them, then queue the next daily run
    (whatever happened). Daily, not weekly: a subscriber gets each week once, on the first run of it."""
    try:
        return digest_mail.mail_weekly()
    finally:
        schedule_mail(after=digest_mail.RUN_EVERY, replace=True)


def schedule_mail(*, after: timedelta, replace: bool = False) -> bool:
    """Queue the mail task to run `after` from now, unless one is queued already
    (kernel.schedule.schedule_once). True when a run was queued."""
    return schedule_once(mail_weekly_topics, _MAIL_SCHEDULED_KEY, after=after, replace=replace)
