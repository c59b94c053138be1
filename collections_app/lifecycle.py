"""A source file's lifecycle: every change of its status, and the one way each change is announced.

    queued ──claim──▶ processing ──finish──▶ ready
      │                  └───────fail────▶ failed
      └──────cancel (either)─────────────▶ cancelled
    requeue / retry: back to queued as a new attempt;  delete: gone, whatever the status

Every change the worker makes is a conditional UPDATE on (id, attempt, status): a cancel, a
delete or a newer attempt always wins over a worker that has not noticed it yet. The worker's side
is `FileTracker`, the `rag.ingest.job.IngestTracker` the ingestion loop reports to; the teacher's
side is cancel / retry / requeue / delete (pages, the API, the admin and `manage.py reindex` call
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
from django.utils.translation import ngettext

from collections_app import signals
from collections_app.fair_queue import fair_queue
from collections_app.liveness import Heartbeat, is_stalled
from collections_app.models import Collection, FileStatus, SourceFile, corrections_in_force
from collections_app.progress import announce, file_event, in_teachers_language, publish
from collections_app.signals import file_changed
from kernel.errors import Conflict, ServiceUnavailable
from kernel.formats import number
from rag.index import ChunkStore
from rag.ingest import chunking, pipeline, slides
from rag.ingest.job import IngestJob, Outcome
from rag.ingest.steps import expected_extractor

log = logging.getLogger(__name__)

ACTIVE = (FileStatus.QUEUED, FileStatus.PROCESSING)
INDEX_SETTINGS = {"language", "embedding_model"}  # fixed per index: changing one needs a new index


def stored_index(collection_id: int) -> ChunkStore:
    """The collection's stored chunks, for reading or removing them (neither needs the index's
    language or vector size, and neither creates the index)."""
    return ChunkStore(collection_id)


# The teacher's side ------------------------------------------------------------------------------


def queue_for_ingestion(source: SourceFile, *, re_extract: bool = True) -> None:
    """Hand the file's current attempt to the workers; a file that cannot be queued is failed
    (retryable) and ServiceUnavailable raised."""
    from collections_app.tasks import ingest_file  # the task module imports this one

    # Kept on the file, not only in the job: the fair queue may run this attempt from another job.
    # The teacher's language too: the worker writes what they will read in it.
    language = translation.get_language() or ""
    this_attempt = SourceFile.objects.filter(pk=source.pk, attempt=source.attempt)
    this_attempt.update(re_extract=re_extract, queued_language=language)
    try:
        ingest_file.enqueue(source.id, source.attempt, re_extract, language)
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
    from collections_app import checks

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
    from collections_app.tasks import run_pending_checks

    run_pending_checks.enqueue(collection_id)


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


# The worker's side -------------------------------------------------------------------------------


def claim(file_id: int, attempt: int) -> SourceFile | None:
    """Move a queued file to processing; None when it was cancelled, deleted or re-queued since."""
    now = timezone.now()
    claimed = SourceFile.objects.filter(pk=file_id, attempt=attempt, status=FileStatus.QUEUED).update(
        status=FileStatus.PROCESSING,
        progress=0,
        progress_done=None,
        progress_total=None,
        error="",
        progress_detail=_("Starting"),
        updated=now,
        started=now,
    )
    if not claimed:
        return None
    return SourceFile.objects.select_related("collection").get(pk=file_id)


def claim_fairly(file_id: int, attempt: int) -> SourceFile | None:
    """Claim the file due next in the fair order, whatever file the job was queued for: every queued
    attempt has a job, so the jobs still cover every queued file. Claiming stays atomic (`claim`); a
    file another worker took first is skipped. None when no queued file is left."""
    for _round in range(20):  # a few races lost to other workers, then fall back on the job's own file
        candidate = fair_queue().values_list("pk", "attempt", "collection_id", "queued_language").first()
        if candidate is None:
            return None
        pk, its_attempt, collection_id, language = candidate
        with in_teachers_language(collection_id, language):  # "Starting", in the words of its teacher
            source = claim(pk, its_attempt)
        if source is not None:
            return source
    return claim(file_id, attempt)


def build_job(source: SourceFile, *, re_extract: bool) -> IngestJob:
    """The ingestion job for a claimed file, with the Markdown it can reuse already in place: its
    own (re-chunking, unless `re_extract`), or that of the same bytes read the same way elsewhere."""
    collection = source.collection
    job = IngestJob(
        file_id=source.id,
        attempt=source.attempt,
        collection_id=collection.id,
        language=collection.language,
        embedding_model=collection.embedding_model,
        file_name=source.original_name,
        file_type=source.file_type,
        path=Path(source.file.path),
        pdf_mode=source.pdf_mode,
        sha256=source.sha256,
    )
    reuse: SourceFile | None
    if not re_extract and source.markdown:
        reuse = source
    else:
        reuse = (
            SourceFile.objects.filter(sha256=source.sha256, status=FileStatus.READY, extractor=expected_extractor(job))
            .exclude(markdown="")
            .exclude(pk=source.pk)
            # A teacher's corrections belong to their own file: another file gets the extraction only.
            .exclude(corrections__isnull=False)
            .first()
        )
    if reuse is not None:
        job.pages = chunking.decompose(reuse.markdown)
        job.extractor, job.page_count = reuse.extractor, reuse.pages
        job.notes = [n for n in reuse.notes.splitlines() if n]
        job.flagged_pages = list(reuse.flagged_pages)
    job.corrections = corrections_in_force(source)
    return job


class FileTracker:
    """`IngestTracker` over one attempt of one file: each write is a conditional UPDATE that
    changes nothing once the attempt is no longer live (cancelled, deleted or re-queued)."""

    def __init__(self, source: SourceFile):
        self.source = source

    def _live(self):
        return SourceFile.objects.filter(pk=self.source.pk, attempt=self.source.attempt, status=FileStatus.PROCESSING)

    def progress(self, percent: int, detail: str, pages: int | None, of: tuple[int, int] | None = None) -> bool:
        done, total = of or (None, None)
        fields = {"progress": percent, "progress_detail": detail, "updated": timezone.now()}
        fields |= {"progress_done": done, "progress_total": total}
        if pages is not None:
            fields["pages"] = pages
        if not self._live().update(**fields):
            return False
        announce(self.source)
        return True

    def is_cancelled(self) -> bool:
        return not self._live().exists()

    def finish(self, job: IngestJob) -> bool:
        # Plain words for the teacher; how many vectors the cache saved is for the log.
        log.info("file %s: %s of %s vectors from the cache", job.file_id, job.cached_vectors, len(job.chunks))
        done = self._live().update(
            status=FileStatus.READY,
            progress=100,
            progress_done=None,
            progress_total=None,
            progress_detail=ngettext("%(n)s passage ready to search", "%(n)s passages ready to search", len(job.chunks))
            % {"n": number(len(job.chunks))},
            markdown=job.markdown,
            extractor=job.extractor,
            pages=job.page_count,
            chunk_count=len(job.chunks),
            notes="\n".join(job.notes),
            empty_pages=job.empty_pages,
            repeated_pages=job.repeated_pages,
            flagged_pages=job.flagged_pages,
            error="",
            updated=timezone.now(),
        )
        if done:
            announce(self.source)
        return bool(done)

    def fail(self, message: str) -> None:
        # The index is left as it was: a file that was ready before keeps its previous chunks, whole.
        self._live().update(
            status=FileStatus.FAILED,
            error=message,
            progress_detail="",
            progress_done=None,
            progress_total=None,
            updated=timezone.now(),
        )
        announce(self.source)

    def cancelled(self, job: IngestJob) -> None:
        current = SourceFile.objects.filter(pk=job.file_id).values_list("attempt", flat=True).first()
        if current is None and not SourceFile.objects.filter(file=self.source.file.name).exists():
            # Deleted while LibreOffice drew its slides: delete_file found no PDF to remove yet.
            slides.rendered_pdf(job.path).unlink(missing_ok=True)
        if current is None or current == job.attempt:  # a newer attempt owns the index entries otherwise
            index = stored_index(job.collection_id)
            index.delete_file(job.file_id)
            if not Collection.objects.filter(pk=job.collection_id).exists():
                index.drop()  # the collection was deleted while this file's chunks were being written
            SourceFile.objects.filter(pk=job.file_id, attempt=job.attempt).update(chunk_count=0, progress_detail="")
        announce(self.source)


def run_ingest(
    file_id: int, attempt: int, *, re_extract: bool = True, language: str = "", fair: bool = False
) -> pipeline.IngestReport:
    """Ingest one attempt of one file (the body of `manage.py reindex`), or with `fair` (the background
    task) whichever queued file is due next in the fair order (`fair_queue`), with the re-extract
    wish and language stored on that file when it was queued."""
    if fair:
        source = claim_fairly(file_id, attempt)
        if source is None:
            log.info("job for file %s attempt %s: no queued file left", file_id, attempt)
            return pipeline.IngestReport(Outcome.SKIPPED)
        language, job = source.queued_language, build_job(source, re_extract=source.re_extract)
        with in_teachers_language(source.collection_id, language), Heartbeat(source.pk, source.attempt):
            report = pipeline.run(job, FileTracker(source))
        from collections_app import checks

        checks.run_when_indexed(source.collection_id)
        signals.send(signals.ingestion_ended, collection_id=source.collection_id)
        return report
    collection_id = SourceFile.objects.filter(pk=file_id).values_list("collection_id", flat=True).first()
    with in_teachers_language(collection_id or 0, language):  # the progress and error sentences it stores
        source = claim(file_id, attempt)
        if source is None:
            log.info("file %s attempt %s: nothing to do (cancelled, deleted or re-queued)", file_id, attempt)
            return pipeline.IngestReport(Outcome.SKIPPED)
        with Heartbeat(file_id, attempt):
            report = pipeline.run(build_job(source, re_extract=re_extract), FileTracker(source))
    # After a re-index, the last file done starts the test questions the re-index left pending.
    from collections_app import checks

    checks.run_when_indexed(source.collection_id)
    signals.send(signals.ingestion_ended, collection_id=source.collection_id)
    return report
