"""A source file's lifecycle, the worker's side: claim a queued file (the one due next in the fair
order), build its ingestion job, run it with a heartbeat, and report every change through
`FileTracker`, the `rag.ingest.job.IngestTracker` the ingestion loop reports to. The teacher's side
(queue, cancel, retry, re-index, delete) is collections_app/lifecycle.py; the background task
(collections_app/tasks.py) runs `run_ingest`. Neither this module nor the tasks import the
teacher's side, which queues the tasks.

Every change the worker makes is a conditional UPDATE on (id, attempt, status): a cancel, a
delete or a newer attempt always wins over a worker that has not noticed it yet.
"""

from __future__ import annotations

import logging
from pathlib import Path

from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from collections_app import checks, signals
from collections_app.fair_queue import fair_queue
from collections_app.heartbeat import Heartbeat
from collections_app.models import Collection, FileStatus, SourceFile, corrections_in_force
from collections_app.progress import announce, in_teachers_language
from kernel.formats import number
from rag.index import ChunkStore
from rag.ingest import chunking, pipeline, slides
from rag.ingest.job import IngestJob, Outcome
from rag.ingest.steps import expected_extractor

log = logging.getLogger(__name__)


def stored_index(collection_id: int) -> ChunkStore:
    """The collection's stored chunks, for reading or removing them (neither needs the index's
    language or vector size, and neither creates the index)."""
    return ChunkStore(collection_id)


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
    checks.run_when_indexed(source.collection_id)
    signals.send(signals.ingestion_ended, collection_id=source.collection_id)
    return report
