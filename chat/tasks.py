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
