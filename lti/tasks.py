"""Background jobs of learning platforms: roster syncs (lti/roster.py), one per course, and the
daily run that queues one for every course."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone
from django_tasks import task

SYNC_EVERY = timedelta(days=1)
_SCHEDULED_KEY = "currechat:lti-roster-sync:scheduled"


@task(queue_name="default")
def sync_roster(course_id: int, trigger: str) -> str:
    from lti.roster import sync_course

    entry = sync_course(course_id, trigger)
    if entry is None:
        return "no such course"
    return f"+{entry.added} ~{entry.updated} -{entry.removed} ={entry.unchanged} errors: {len(entry.errors)}"


@task(queue_name="default")
def sync_all_rosters() -> int:
    """Queue a sync of every course of every approved platform, then the next daily run (whatever
    happened, so a failed run does not end the schedule)."""
    from lti.models import CourseContext, PlatformStatus

    try:
        ids = list(
            CourseContext.objects.filter(platform__active=True, platform__status=PlatformStatus.APPROVED).values_list(
                "pk", flat=True
            )
        )
        for course_id in ids:
            sync_roster.enqueue(course_id, "daily")
        return len(ids)
    finally:
        schedule_daily_sync(after=SYNC_EVERY, replace=True)


def schedule_daily_sync(*, after: timedelta, replace: bool = False) -> bool:
    """Queue the daily run `after` from now unless one is queued already (as
    chat.insight.retention.schedule_purge). True when a run was queued."""
    from kernel.redis_client import get_redis

    expires = int((after + timedelta(hours=1)).total_seconds())
    if not get_redis().set(_SCHEDULED_KEY, "1", nx=not replace, ex=expires):
        return False
    sync_all_rosters.using(run_after=timezone.now() + after).enqueue()
    return True
