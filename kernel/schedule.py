"""Jobs that run every day, scheduled in the queue itself: each run queues the next, so the schedule
survives worker restarts and lives in no worker's memory."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from kernel.redis_client import get_redis


def schedule_once(task, key: str, *, after: timedelta, replace: bool = False) -> bool:
    """Queue `task` (a django-tasks task) to run `after` from now, unless a run is queued already:
    several workers start at once, and a Redis key with an expiry names the one that queues it.
    `replace` queues the next run from the running task itself. True when a run was queued."""
    expires = int((after + timedelta(hours=1)).total_seconds())
    if not get_redis().set(key, "1", nx=not replace, ex=expires):
        return False
    task.using(run_after=timezone.now() + after).enqueue()
    return True
