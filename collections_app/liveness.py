"""Whether a file's worker is alive: a running ingestion beats a heartbeat, and a file whose
worker fell silent is failed with a Retry offered (INGEST_HEARTBEAT_SECONDS, INGEST_STALE_SECONDS);
a queued file whose job was lost is queued again."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django.utils.functional import Promise
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy

from collections_app import tasks
from collections_app.heartbeat import Heartbeat as Heartbeat  # the job's beat, kept reachable here
from collections_app.models import FileStatus, SourceFile
from collections_app.progress import announce, in_teachers_language

log = logging.getLogger(__name__)

LOST = gettext_lazy(
    "The worker reading this file stopped before it finished (%(why)s). Nothing of this attempt was indexed; "
    "press Retry."
)


def _stale_before():
    return timezone.now() - timedelta(seconds=settings.INGEST_STALE_SECONDS)


def is_stalled(source: SourceFile) -> bool:
    """Processing without a sign of life (progress or heartbeat) for INGEST_STALE_SECONDS: the
    process running it is gone (a running job touches its file every INGEST_HEARTBEAT_SECONDS)."""
    return source.status == FileStatus.PROCESSING and source.updated < _stale_before()


def fail_lost(file_id: int, attempt: int, why: str | Promise, language: str = "") -> bool:
    """The process running this attempt died (the worker saw its job process end without a
    result): fail the file with a reason and a Retry (`why`, lazy so it is read in the teachers' language).
    False when the attempt was no longer live."""
    collection_id = SourceFile.objects.filter(pk=file_id).values_list("collection_id", flat=True).first()
    with in_teachers_language(collection_id or 0, language):
        error = LOST % {"why": why}
    changed = SourceFile.objects.filter(pk=file_id, attempt=attempt, status=FileStatus.PROCESSING).update(
        status=FileStatus.FAILED, error=error, progress_detail="", updated=timezone.now()
    )
    if changed:
        log.warning("file %s attempt %s lost its worker: %s", file_id, attempt, why)
        announce(SourceFile(pk=file_id))
    return bool(changed)


def fail_stalled_files() -> int:
    """Fail every file whose job stopped showing signs of life (its worker was killed, its
    machine went away). Workers call this as they start and then periodically; returns how many."""
    lost = list(
        SourceFile.objects.filter(status=FileStatus.PROCESSING, updated__lt=_stale_before()).values_list(
            "pk", "attempt"
        )
    )
    seconds = settings.INGEST_STALE_SECONDS
    why = format_lazy(gettext_lazy("no sign of life for over {seconds} seconds"), seconds=seconds)
    return sum(fail_lost(pk, attempt, why) for pk, attempt in lost)


def queue_lost_files() -> int:
    """Queue a job again for every file queued longer than INGEST_STALE_SECONDS; how many. For a
    worker to call when no ingestion job waits in the queue: such a file's job is gone (Redis lost
    its data, or a job was taken by a process that died), and the file would say "queued" for ever.
    A job too many costs nothing: each takes the file due next in the fair order, or none."""
    lost = SourceFile.objects.filter(status=FileStatus.QUEUED, updated__lt=_stale_before()).order_by("pk")
    found = list(lost.values_list("pk", "attempt", "re_extract", "queued_language"))
    for pk, attempt, re_extract, language in found:
        log.warning("file %s attempt %s was queued with no job waiting for it: queued again", pk, attempt)
        tasks.ingest_file.enqueue(pk, attempt, re_extract, language)
    return len(found)
