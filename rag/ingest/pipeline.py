"""The ingestion loop: runs the steps of `steps.py` over one job and owns everything around them.

The loop (not the steps) claims the file, logs each step, retries steps that failed in a way that
may pass, reports progress, notices cancellation, marks the file ready/failed/cancelled and cleans
up. Every status change is a conditional UPDATE on (id, attempt, status): a cancel, a delete or a
newer attempt always wins over a worker that has not noticed it yet.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import redis
from django.conf import settings
from django.utils import timezone

from collections_app.models import Collection, FileStatus, SourceFile
from collections_app.progress import file_event, publish
from currechat.errors import ProviderError
from rag.index import CollectionIndex
from rag.ingest import chunking
from rag.ingest.job import IngestCancelled, IngestFailed, IngestJob
from rag.ingest.steps import STEPS, Step, expected_extractor

log = logging.getLogger(__name__)

INTERNAL_ERROR = (
    "Ingestion stopped because of an unexpected error. Press Retry; if it fails again, tell your "
    "administrator (the server log has the details)."
)
# Updates to the database and the browser are throttled; status changes are always sent.
PROGRESS_INTERVAL = 0.25
CANCEL_CHECK_INTERVAL = 0.5


class RunContext:
    """Progress and cancellation for one run, shared by the steps through the loop."""

    def __init__(self, job: IngestJob):
        self.job = job
        self.step: Step | None = None
        self._reported_step: Step | None = None
        self._last_progress = 0.0
        self._last_check = 0.0
        self._cancelled = False

    def _live(self):
        return SourceFile.objects.filter(pk=self.job.file_id, attempt=self.job.attempt, status=FileStatus.PROCESSING)

    def progress(self, fraction: float, detail: str, *, force: bool = False) -> None:
        now = time.monotonic()
        # Throttled, except that each step's first report always goes out (so every stage shows).
        if not force and self.step is self._reported_step and now - self._last_progress < PROGRESS_INTERVAL:
            return
        self._last_progress, self._reported_step = now, self.step
        low, high = self.step.share if self.step else (0, 0)
        percent = int(low + (high - low) * min(max(fraction, 0.0), 1.0))
        fields = {"progress": percent, "progress_detail": detail[:200], "updated": timezone.now()}
        if self.job.page_count is not None:
            fields["pages"] = self.job.page_count
        if not self._live().update(**fields):
            self._cancelled = True
            return
        self._publish()

    def cancelled(self) -> bool:
        now = time.monotonic()
        if not self._cancelled and now - self._last_check >= CANCEL_CHECK_INTERVAL:
            self._last_check = now
            self._cancelled = not self._live().exists()
        return self._cancelled

    def _publish(self) -> None:
        source = SourceFile.objects.filter(pk=self.job.file_id).first()
        if source is not None:
            publish(source.collection_id, file_event(source, source.progress_detail))


def claim(file_id: int, attempt: int) -> SourceFile | None:
    """Move a queued file to processing; None when it was cancelled, deleted or re-queued since."""
    claimed = SourceFile.objects.filter(pk=file_id, attempt=attempt, status=FileStatus.QUEUED).update(
        status=FileStatus.PROCESSING, progress=0, error="", progress_detail="Starting", updated=timezone.now()
    )
    if not claimed:
        return None
    return SourceFile.objects.select_related("collection").get(pk=file_id)


def build_job(source: SourceFile, *, re_extract: bool) -> IngestJob:
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
    if not re_extract and source.markdown:
        reuse = source
    else:
        # The same bytes read the same way elsewhere (another collection, an earlier upload): reuse them.
        reuse = (
            SourceFile.objects.filter(sha256=source.sha256, status=FileStatus.READY, extractor=expected_extractor(job))
            .exclude(markdown="")
            .exclude(pk=source.pk)
            .first()
        )
    if reuse is not None:
        job.pages = chunking.decompose(reuse.markdown)
        job.extractor, job.page_count = reuse.extractor, reuse.pages
        job.notes = [n for n in reuse.notes.splitlines() if n]
    return job


def _run_step(step: Step, job: IngestJob, ctx: RunContext) -> None:
    """Run one step, retrying it when a service failed in a way that may pass."""
    attempts = settings.INGEST_STEP_RETRIES + 1
    for attempt in range(1, attempts + 1):
        started = time.monotonic()
        try:
            step.run(job, ctx)
            log.info("file %s: %s done in %.2fs", job.file_id, step.name, time.monotonic() - started)
            return
        except (ProviderError, redis.ConnectionError, redis.TimeoutError) as exc:
            retryable = getattr(exc, "retryable", True)
            if not retryable or attempt == attempts:
                raise
            log.warning("file %s: %s failed (%s); attempt %s of %s", job.file_id, step.name, exc, attempt, attempts)
            ctx.progress(0.0, f"Waiting to retry: {exc}", force=True)
            time.sleep(settings.INGEST_RETRY_DELAY * attempt)
            if ctx.cancelled():
                raise IngestCancelled from exc


@dataclass(frozen=True)
class IngestReport:
    status: str
    seconds: dict[str, float] = field(default_factory=dict)  # per step, as the loop measured them
    chunks: int = 0
    cached_vectors: int = 0


def ingest(file_id: int, attempt: int, *, re_extract: bool = True) -> str:
    """Ingest one file (the body of the background task). Returns the final status."""
    return run_ingest(file_id, attempt, re_extract=re_extract).status


def run_ingest(file_id: int, attempt: int, *, re_extract: bool = True) -> IngestReport:
    source = claim(file_id, attempt)
    if source is None:
        log.info("file %s attempt %s: nothing to do (cancelled, deleted or re-queued)", file_id, attempt)
        return IngestReport("skipped")
    job = build_job(source, re_extract=re_extract)
    ctx = RunContext(job)
    ctx.progress(0.0, "Starting", force=True)
    seconds: dict[str, float] = {}
    try:
        for step in STEPS:
            if ctx.cancelled():
                raise IngestCancelled
            ctx.step = step
            started = time.monotonic()
            _run_step(step, job, ctx)
            seconds[step.name] = time.monotonic() - started
        status = _finish(job)
    except IngestCancelled:
        status = _cancelled(job)
    except IngestFailed as exc:
        status = _fail(job, str(exc))
    except ProviderError as exc:
        status = _fail(job, f"{exc} Press Retry when the model server is back.")
    except (redis.ConnectionError, redis.TimeoutError):
        log.warning("file %s: Redis unavailable", file_id, exc_info=True)
        status = _fail(job, "The search index (Redis) could not be reached. Press Retry once it is back.")
    except Exception:
        log.exception("file %s: ingestion failed", file_id)
        status = _fail(job, INTERNAL_ERROR)
    return IngestReport(status, seconds, len(job.chunks), job.cached_vectors)


def _live(job: IngestJob):
    return SourceFile.objects.filter(pk=job.file_id, attempt=job.attempt, status=FileStatus.PROCESSING)


def _announce(file_id: int) -> None:
    source = SourceFile.objects.filter(pk=file_id).first()
    if source is not None:
        publish(source.collection_id, file_event(source, source.progress_detail))


def _finish(job: IngestJob) -> str:
    cached = f", {job.cached_vectors} from the cache" if job.cached_vectors else ""
    done = _live(job).update(
        status=FileStatus.READY,
        progress=100,
        progress_detail=f"{len(job.chunks)} passage{'s' if len(job.chunks) != 1 else ''} indexed{cached}",
        markdown=job.markdown,
        extractor=job.extractor,
        pages=job.page_count,
        chunk_count=len(job.chunks),
        notes="\n".join(job.notes),
        error="",
        updated=timezone.now(),
    )
    if not done:  # cancelled or deleted while the chunks were being written: take them out again
        return _cancelled(job)
    log.info("file %s ready: %s chunks (%s cached)", job.file_id, len(job.chunks), job.cached_vectors)
    _announce(job.file_id)
    return FileStatus.READY


def _fail(job: IngestJob, message: str) -> str:
    # The index is left as it was: a file that was ready before keeps its previous chunks, whole.
    log.info("file %s failed: %s", job.file_id, message)
    _live(job).update(status=FileStatus.FAILED, error=message, progress_detail="", updated=timezone.now())
    _announce(job.file_id)
    return FileStatus.FAILED


def _cancelled(job: IngestJob) -> str:
    """The teacher cancelled (or deleted) the file: none of its chunks may stay searchable."""
    current = SourceFile.objects.filter(pk=job.file_id).values_list("attempt", flat=True).first()
    if current is None or current == job.attempt:  # a newer attempt owns the index entries otherwise
        index = CollectionIndex(job.collection_id, job.language, 1)
        index.delete_file(job.file_id)
        if not Collection.objects.filter(pk=job.collection_id).exists():
            index.drop()  # the collection was deleted while this file's chunks were being written
        SourceFile.objects.filter(pk=job.file_id, attempt=job.attempt).update(chunk_count=0, progress_detail="")
    log.info("file %s attempt %s cancelled", job.file_id, job.attempt)
    _announce(job.file_id)
    return FileStatus.CANCELLED
