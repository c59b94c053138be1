"""Background jobs of learning platforms: roster syncs (lti/roster.py), one per course, and the
daily run that queues one for every course. Who asks for a sync calls `request_sync` here: this
module imports the roster, never the reverse."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django_tasks import task

from kernel.schedule import schedule_once
from lti.models import CourseContext, Platform
from lti.roster import sync_course

SYNC_EVERY = timedelta(days=1)
_SCHEDULED_KEY = "currechat:lti-roster-sync:scheduled"


@task(queue_name="default")
def sync_roster(course_id: int, trigger: str) -> str:
    entry = sync_course(course_id, trigger)
    if entry is None:
        return "no such course"
    return f"+{entry.added} ~{entry.updated} -{entry.removed} ={entry.unchanged} errors: {len(entry.errors)}"


@task(queue_name="default")
def sync_all_rosters() -> int:
    """Queue a sync of every course of every approved platform, then the next daily run (whatever
    happened, so a failed run does not end the schedule)."""
    try:
        launching = Platform.objects.launching()
        ids = list(CourseContext.objects.filter(platform__in=launching).values_list("pk", flat=True))
        for course_id in ids:
            sync_roster.enqueue(course_id, "daily")
        return len(ids)
    finally:
        schedule_daily_sync(after=SYNC_EVERY, replace=True)


def request_sync(course: CourseContext, trigger: str) -> None:
    """Queue a sync in the worker once the current transaction commits (never in a web request)."""
    transaction.on_commit(lambda: sync_roster.enqueue(course.pk, trigger))


def schedule_daily_sync(*, after: timedelta, replace: bool = False) -> bool:
    """Queue the daily run `after` from now unless one is queued already
    (kernel.schedule.schedule_once). True when a run was queued."""
    return schedule_once(sync_all_rosters, _SCHEDULED_KEY, after=after, replace=replace)
