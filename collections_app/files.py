"""What can happen to a collection's files: add, cancel, retry, re-index, delete.

Pages, the API and management commands call these; each keeps the database, the stored files,
the Redis index and the queue consistent with each other.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError
from django.db.models import F
from django.utils import timezone

from collections_app.models import Collection, FileStatus, PdfMode, SourceFile
from collections_app.progress import file_event, publish
from currechat.errors import Conflict, ServiceUnavailable
from rag.index import ChunkStore
from rag.ingest import pdf, sniff
from rag.ingest.job import IngestFailed, TooLarge

log = logging.getLogger(__name__)

ACTIVE = (FileStatus.QUEUED, FileStatus.PROCESSING)


def _limit_text(limit: int) -> str:
    return f"{limit / (1024 * 1024):.0f} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"


def _read_upload(upload, name: str) -> bytes:
    size = upload.size or 0
    if size > settings.UPLOAD_MAX_BYTES:
        raise TooLarge(
            f"“{name}” is {_limit_text(size)}; the limit is {_limit_text(settings.UPLOAD_MAX_BYTES)}. "
            "Split it into smaller files, or for a PDF, save it with smaller images."
        )
    data = b"".join(upload.chunks())
    if not data:
        raise IngestFailed(f"“{name}” is empty. Check that you picked the right file.")
    return data


def check_content(name: str, data: bytes) -> str:
    """The file type, after the checks that are cheap enough to make during the upload request."""
    file_type = sniff.detect_type(name, data[:1024])
    if file_type == "pdf":
        pdf.open_pdf(data, check_streams=False).close()  # password, damage, page limit; streams in the worker
    else:
        sniff.decode_text(data, name)
    return file_type


def add_file(collection: Collection, upload, user, pdf_mode: str = PdfMode.AUTO) -> SourceFile:
    """Store an upload and queue its ingestion. Raises with a sentence for the teacher when refused."""
    name = Path(upload.name or "upload").name[:255] or "upload"
    data = _read_upload(upload, name)
    file_type = check_content(name, data)
    sha256 = hashlib.sha256(data).hexdigest()
    existing = collection.files.filter(sha256=sha256).first()
    if existing is not None:
        raise Conflict(f"“{name}” is already in this collection as “{existing.original_name}” ({existing.status}).")
    source = SourceFile(
        collection=collection,
        original_name=name,
        file_type=file_type,
        size=len(data),
        sha256=sha256,
        pdf_mode=pdf_mode if file_type == "pdf" else PdfMode.AUTO,
        uploaded_by=user if getattr(user, "is_authenticated", False) else None,
        attempt=1,
    )
    source.file.save(sha256, ContentFile(data), save=False)
    try:
        source.save()
    except IntegrityError:  # the same file uploaded twice at the same moment
        source.file.delete(save=False)
        raise Conflict(f"“{name}” is already in this collection.")
    _enqueue(source)
    return source


def _enqueue(source: SourceFile, *, re_extract: bool = True) -> None:
    from collections_app.tasks import ingest_file

    try:
        ingest_file.enqueue(source.id, source.attempt, re_extract)
    except Exception as exc:  # noqa: BLE001 — any queue failure: say so and keep the file retryable
        log.warning("Could not queue file %s", source.id, exc_info=True)
        SourceFile.objects.filter(pk=source.pk).update(
            status=FileStatus.FAILED, error="The file was saved but could not be queued for ingestion. Press Retry."
        )
        raise ServiceUnavailable(
            "The ingestion queue (Redis) cannot be reached right now; press Retry shortly."
        ) from exc
    announce(source)


def announce(source: SourceFile) -> None:
    source.refresh_from_db()
    publish(source.collection_id, file_event(source, source.progress_detail))


def _index(collection_id: int) -> ChunkStore:
    return ChunkStore(collection_id)


def is_stalled(source: SourceFile) -> bool:
    """Processing without any progress for INGEST_STALE_SECONDS: its worker is gone."""
    limit = timezone.now() - timedelta(seconds=settings.INGEST_STALE_SECONDS)
    return source.status == FileStatus.PROCESSING and source.updated < limit


def cancel_file(source: SourceFile) -> SourceFile:
    """Stop a queued or running file; its chunks leave the index now (the worker stops shortly)."""
    changed = SourceFile.objects.filter(pk=source.pk, status__in=ACTIVE).update(
        status=FileStatus.CANCELLED, progress_detail="Cancelled", chunk_count=0, updated=timezone.now()
    )
    if not changed:
        source.refresh_from_db()
        raise Conflict(
            f"“{source.original_name}” is {source.get_status_display().lower()}; only queued or "
            "running files can be cancelled."
        )
    _index(source.collection_id).delete_file(source.pk)
    announce(source)
    return source


def requeue(source: SourceFile, *, re_extract: bool = True, enqueue: bool = True) -> SourceFile:
    """Queue a file again as a new attempt (a worker still on the old attempt stops by itself)."""
    SourceFile.objects.filter(pk=source.pk).update(
        status=FileStatus.QUEUED,
        attempt=F("attempt") + 1,
        progress=0,
        error="",
        progress_detail="Queued",
        updated=timezone.now(),
    )
    source.refresh_from_db()
    if enqueue:
        _enqueue(source, re_extract=re_extract)
    return source


def retry_file(source: SourceFile) -> SourceFile:
    """Try a failed or cancelled file again (or one whose worker died), extracting it afresh."""
    if source.status not in (FileStatus.FAILED, FileStatus.CANCELLED) and not is_stalled(source):
        raise Conflict(
            f"“{source.original_name}” is {source.get_status_display().lower()}; only failed or "
            "cancelled files can be retried."
        )
    return requeue(source, re_extract=True)


def reindex_collection(
    collection: Collection, *, re_extract: bool = False, enqueue: bool = True, new_model: bool = False
) -> list[SourceFile]:
    """Rebuild a collection's index from its files: after a change of language or embedding model
    (`new_model`), or after Redis lost its data. The chunks already indexed stay searchable until
    their file's new chunks replace them (ChunkStore.rebuild). Stored Markdown is re-chunked
    unless `re_extract`; the files are queued for the workers unless `enqueue` is False (the
    caller runs them)."""
    ChunkStore(collection.pk).rebuild(collection.language, keep_vectors=not new_model)
    sources = collection.files.exclude(status=FileStatus.CANCELLED).order_by("pk")
    return [requeue(source, re_extract=re_extract, enqueue=enqueue) for source in sources]


INDEX_SETTINGS = {"language", "embedding_model"}  # fixed per index: changing one needs a new index


def reindex_for_changes(collection: Collection, changed: set[str]) -> list[SourceFile]:
    """After a collection's settings were saved (page, API or admin): re-index its files if a
    setting its index depends on changed; the files queued, none if nothing needed it."""
    if not INDEX_SETTINGS & changed:
        return []
    return reindex_collection(collection, new_model="embedding_model" in changed)


def delete_file(source: SourceFile) -> None:
    """Remove a file everywhere: its chunks, its stored bytes and its record."""
    SourceFile.objects.filter(pk=source.pk).update(status=FileStatus.CANCELLED)  # a running worker stops
    _index(source.collection_id).delete_file(source.pk)
    if source.file:
        source.file.delete(save=False)
    collection_id, file_id, name = source.collection_id, source.pk, source.original_name
    source.delete()
    publish(collection_id, {**file_event(source), "file_id": file_id, "name": name, "status": "deleted"})


def delete_collection(collection: Collection) -> None:
    """Remove a collection with its index, its stored files and every record."""
    collection.files.update(status=FileStatus.CANCELLED)
    _index(collection.pk).drop()
    folder = Path(settings.MEDIA_ROOT) / "collections" / str(collection.pk)
    collection.delete()
    shutil.rmtree(folder, ignore_errors=True)


def file_chunks(source: SourceFile) -> list[dict]:
    """The file's chunks as stored in the index, in reading order (what search can return)."""
    index = _index(source.collection_id)
    keys = sorted(index.client.smembers(index.file_set(source.pk)), key=lambda k: int(k.rsplit(b":", 1)[-1]))
    pipe = index.client.pipeline(transaction=False)
    fields = ["position", "text", "page_start", "page_end", "heading_path"]
    for key in keys:
        pipe.hmget(key, fields)
    chunks = []
    for values in pipe.execute():
        if values[0] is None:
            continue
        row = dict(zip(fields, (v.decode() for v in values), strict=True))
        pages = [int(row["page_start"]), int(row["page_end"])]
        chunks.append(
            {
                "position": int(row["position"]),
                "text": row["text"].replace(" \n", "\n"),  # undo the index's newline padding
                "page_start": pages[0] if pages[0] >= 0 else None,
                "page_end": pages[1] if pages[1] >= 0 else None,
                "heading_path": row["heading_path"],
            }
        )
    return chunks
