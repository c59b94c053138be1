"""A source file's lifecycle: every change of its status, and the one way each change is announced.

    queued ──claim──▶ processing ──finish──▶ ready
      │                  └───────fail────▶ failed
      └──────cancel (either)─────────────▶ cancelled
    requeue / retry: back to queued as a new attempt;  delete: gone, whatever the status

Every change the worker makes is a conditional UPDATE on (id, attempt, status): a cancel, a
delete or a newer attempt always wins over a worker that has not noticed it yet. The worker's side
(claim, `FileTracker`, `run_ingest`) is collections_app/ingesting.py, run by the tasks this module
queues (collections_app/tasks.py, which never imports this one); the teacher's side, here, is
queue / cancel / retry / requeue / delete (pages, the API, the admin and `manage.py reindex` call
them). After every change, `announce` publishes the file's state (`delete_file`, its removal) to
whoever watches its collection.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.db.models import F
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from collections_app import checks, signals, tasks

# The worker's side lives in collections_app/ingesting.py; its steps stay reachable here for callers that
# drive a file through its whole lifecycle in one process (manage.py reindex, bench/, the tests).
from collections_app.ingesting import FileTracker, build_job, claim, run_ingest, stored_index  # noqa: F401
from collections_app.liveness import is_stalled
from collections_app.models import Collection, FileStatus, SourceFile
from collections_app.progress import announce, file_event, publish
from collections_app.signals import file_changed
from kernel.errors import Conflict, ServiceUnavailable
from rag.ingest import slides

log = logging.getLogger(__name__)

ACTIVE = (FileStatus.QUEUED, FileStatus.PROCESSING)
INDEX_SETTINGS = {"language", "embedding_model"}  # fixed per index: changing one needs a new index


# The teacher's side ------------------------------------------------------------------------------


def queue_for_ingestion(source: SourceFile, *, re_extract: bool = True) -> None:
    """Hand the file's current attempt to the workers; a file that cannot be queued is failed
    (retryable) and ServiceUnavailable raised."""
    # Kept on the file, not only in the job: the fair queue may run this attempt from another job.
    # The teacher's language too: the worker writes what they will read in it.
    language = translation.get_language() or ""
    this_attempt = SourceFile.objects.filter(pk=source.pk, attempt=source.attempt)
    this_attempt.update(re_extract=re_extract, queued_language=language)
    try:
        tasks.ingest_file.enqueue(source.id, source.attempt, re_extract, language)
    except Exception as exc:  # noqa: BLE001 — any queue failure: say so and keep the file retryable
        log.warning("Could not queue file %s", source.id, exc_info=True)
        SourceFile.objects.filter(pk=source.pk, attempt=source.attempt).update(
            status=FileStatus.FAILED, error=_("The file was saved but could not be queued for ingestion. Press Retry.")
        )
        sentence = _("The ingestion queue (Redis) cannot be reached right now; press Retry shortly.")
        raise ServiceUnavailable(sentence) from exc
    announce(source)


def cancel_file(source: SourceFile) -> SourceFile:
    """Stop a queued or running file; its chunks leave the index now (the worker stops shortly)."""
    changed = SourceFile.objects.filter(pk=source.pk, status__in=ACTIVE).update(
        status=FileStatus.CANCELLED,
        progress_detail=_("Cancelled"),
        progress_done=None,
        progress_total=None,
        chunk_count=0,
        updated=timezone.now(),
    )
    if not changed:
        source.refresh_from_db()
        raise Conflict(
            _("“%(name)s” is %(status)s; only queued or running files can be cancelled.")
            % {"name": source.original_name, "status": source.get_status_display().lower()}
        )
    stored_index(source.collection_id).delete_file(source.pk)
    announce(source)
    return source


def requeue(source: SourceFile, *, re_extract: bool = True, enqueue: bool = True) -> SourceFile:
    """Queue a file again as a new attempt (a worker still on the old attempt stops by itself)."""
    SourceFile.objects.filter(pk=source.pk).update(
        status=FileStatus.QUEUED,
        attempt=F("attempt") + 1,
        progress=0,
        progress_done=None,
        progress_total=None,
        error="",
        progress_detail=_("Queued"),
        updated=timezone.now(),
    )
    source.refresh_from_db()
    if re_extract:  # what was cited from it may read otherwise now (a correction says so itself)
        file_changed.send(sender=SourceFile, file_id=source.pk, file_name=source.original_name)
    if enqueue:
        queue_for_ingestion(source, re_extract=re_extract)
    return source


def retry_file(source: SourceFile) -> SourceFile:
    """Try a failed or cancelled file again (or one whose worker died), extracting it afresh."""
    if source.status not in (FileStatus.FAILED, FileStatus.CANCELLED) and not is_stalled(source):
        raise Conflict(
            _("“%(name)s” is %(status)s; only failed or cancelled files can be retried.")
            % {"name": source.original_name, "status": source.get_status_display().lower()}
        )
    return requeue(source, re_extract=True)


def reindex_collection(
    collection: Collection,
    *,
    re_extract: bool = False,
    enqueue: bool = True,
    new_model: bool = False,
    reason: str = "reindex",
) -> list[SourceFile]:
    """Rebuild a collection's index from its files: after a change of language or embedding model
    (`new_model`), or after Redis lost its data. The chunks already indexed stay searchable until
    their file's new chunks replace them (ChunkStore.rebuild). Stored Markdown is re-chunked
    unless `re_extract`; the files are queued for the workers unless `enqueue` is False (the
    caller runs them). The collection's test questions run by themselves once the last file is
    done (`reason` says why: a re-index, a language or an embedding-model change)."""
    stored_index(collection.pk).rebuild(collection.language, keep_vectors=not new_model)
    checks.schedule_after_reindex(collection, reason)
    signals.send(signals.reindex_started, collection=collection)  # the prompts' answer checks wait for it
    sources = collection.files.exclude(status=FileStatus.CANCELLED).order_by("pk")
    requeued = [requeue(source, re_extract=re_extract, enqueue=enqueue) for source in sources]
    if not requeued and enqueue:
        run_checks_later(collection.pk)  # nothing to wait for
    return requeued


def run_checks_later(collection_id: int) -> None:
    """Let a worker run the collection's pending test questions (if nothing is being ingested)."""
    tasks.run_pending_checks.enqueue(collection_id)


def reindex_for_changes(collection: Collection, changed: set[str]) -> list[SourceFile]:
    """After a collection's settings were saved (page, API or admin): re-index its files if a
    setting its index depends on changed; the files queued, none if nothing needed it."""
    if not INDEX_SETTINGS & changed:
        return []
    new_model = "embedding_model" in changed
    return reindex_collection(collection, new_model=new_model, reason="embedding_model" if new_model else "language")


def delete_file(source: SourceFile) -> None:
    """Remove a file everywhere: its chunks, its stored bytes and its record."""
    SourceFile.objects.filter(pk=source.pk).update(status=FileStatus.CANCELLED)  # a running worker stops
    stored_index(source.collection_id).delete_file(source.pk)
    if source.file:
        slides.rendered_pdf(Path(source.file.path)).unlink(missing_ok=True)  # a presentation's slide images
        source.file.delete(save=False)
    collection_id, file_id, name = source.collection_id, source.pk, source.original_name
    source.delete()
    publish(collection_id, {**file_event(source), "file_id": file_id, "name": name, "status": "deleted"})


def delete_collection(collection: Collection) -> None:
    """Remove a collection with its index, its stored files and every record. A worker still
    ingesting one of its files stops and removes what it wrote (FileTracker.cancelled)."""
    collection.files.update(status=FileStatus.CANCELLED)
    stored_index(collection.pk).drop()
    folder = Path(settings.MEDIA_ROOT) / "collections" / str(collection.pk)
    collection.delete()
    shutil.rmtree(folder, ignore_errors=True)
