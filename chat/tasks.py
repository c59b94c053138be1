"""Background tasks of chats (django-tasks on the RQ backend)."""

from __future__ import annotations

from django_tasks import task

from chat.insight import retention


@task(queue_name="default")
def purge_expired_chats() -> int:
    """Delete chats past their retention, then queue the next daily run (whatever happened, so a
    failed run does not end the schedule)."""
    try:
        return retention.purge_expired().chats
    finally:
        retention.schedule_purge(after=retention.PURGE_EVERY, replace=True)


@task(queue_name="default")
def run_answer_checks(run_id: int) -> str:
    """Play a queued run of a prompt's answer checks (chat/checks/runs.py)."""
    from chat.checks.runs import execute

    run = execute(run_id)
    return f"{run.passed}/{run.total} ({run.status})" if run else "nothing to run"


@task(queue_name="default")
def mail_weekly_topics() -> int:
    """Mail last week's topics to the teachers who asked for them, then queue the next daily run
    (whatever happened). Daily, not weekly: a subscriber gets each week once, on the first run of it."""
    from chat.insight import digest_mail

    try:
        return digest_mail.mail_weekly()
    finally:
        digest_mail.schedule_mail(after=digest_mail.RUN_EVERY, replace=True)
