"""A collection's files as teachers handle them: upload one, read its chunks.

Every change of a file's status (cancel, retry, requeue, re-index, delete, and the worker's own)
lives in `collections_app.lifecycle`; its public functions are re-exported here because pages,
the API, the admin and management commands call them as `files.<name>`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.db import IntegrityError
from django.utils.translation import gettext as _

from collections_app.lifecycle import (
    announce,
    cancel_file,
    delete_collection,
    delete_file,
    is_stalled,
    queue_for_ingestion,
    reindex_collection,
    reindex_for_changes,
    requeue,
    retry_file,
    stored_index,
)
from collections_app.models import Collection, PdfMode, SourceFile
from kernel.errors import Conflict, ServiceUnavailable
from kernel.formats import file_size
from rag.index import IndexedChunk
from rag.ingest import pdf, sniff
from rag.ingest.image import NEEDS_VISION, image_png
from rag.ingest.job import IngestFailed, TooLarge, UnsupportedContent
from rag.providers import is_available

__all__ = [
    "add_file",
    "announce",
    "cancel_file",
    "check_content",
    "delete_collection",
    "delete_file",
    "file_chunks",
    "is_stalled",
    "reindex_collection",
    "reindex_for_changes",
    "requeue",
    "retry_file",
]


def _read_upload(upload, name: str) -> bytes:
    size = upload.size or 0
    if size > settings.UPLOAD_MAX_BYTES:
        raise TooLarge(
            _(
                "“%(name)s” is %(size)s; the limit is %(limit)s. "
                "Split it into smaller files, or for a PDF, save it with smaller images."
            )
            % {"name": name, "size": file_size(size), "limit": file_size(settings.UPLOAD_MAX_BYTES)}
        )
    data = b"".join(upload.chunks())
    if not data:
        raise IngestFailed(_("“%(name)s” is empty. Check that you picked the right file.") % {"name": name})
    return data


def check_content(name: str, data: bytes) -> str:
    """The file type, after the checks that are cheap enough to make during the upload request."""
    file_type = sniff.detect_upload_type(name, data)
    if file_type == "pdf":
        pdf.open_pdf(data, check_streams=False).close()  # password, damage, page limit; streams in the worker
    elif file_type == "image":
        image_png(data, name)  # damaged, or too many pixels
        if not is_available(settings.VLM_MODEL):
            raise UnsupportedContent(NEEDS_VISION % {"name": name, "model": settings.VLM_MODEL})
    elif file_type in ("text", "markdown", "html", "transcript"):
        sniff.decode_text(data, name)
    return file_type


def _duplicate_sentence(name: str, existing: SourceFile) -> str:
    """Why an upload of a file already in the collection is refused, and what to do instead."""
    refused = _("“%(name)s” is already in this collection as “%(existing)s” (%(status)s).") % {
        "name": name,
        "existing": existing.original_name,
        "status": existing.get_status_display().lower(),
    }
    if existing.file_type == "pdf":
        advice = _(
            "To read it another way, open that file and choose “Read again with fast extraction” or “Read again "
            "with the vision model”; there is no need to delete it and upload it again."
        )
    else:
        advice = _("The same content is already there; open that file to see how it was read.")
    return f"{refused} {advice}"


def add_file(collection: Collection, upload, user, pdf_mode: str = PdfMode.AUTO) -> SourceFile:
    """Store an upload and queue its ingestion. Raises with a sentence for the teacher when refused."""
    name = Path(upload.name or "upload").name[:255] or "upload"
    data = _read_upload(upload, name)
    file_type = check_content(name, data)
    sha256 = hashlib.sha256(data).hexdigest()
    existing = collection.files.filter(sha256=sha256).first()
    if existing is not None:
        raise Conflict(_duplicate_sentence(name, existing))
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
        raise Conflict(_("“%(name)s” is already in this collection.") % {"name": name})
    try:
        queue_for_ingestion(source)
    except ServiceUnavailable as exc:
        # Refused uploads leave nothing behind: uploading the same file again must work, not 409.
        source.file.delete(save=False)
        source.delete()
        raise ServiceUnavailable(
            _(
                "“%(name)s” was not added: the ingestion queue (Redis) cannot be reached right now. "
                "Upload it again shortly."
            )
            % {"name": name}
        ) from exc
    return source


def file_chunks(source: SourceFile) -> list[IndexedChunk]:
    """The file's chunks as stored in the index, in reading order (what search can return)."""
    return stored_index(source.collection_id).file_chunks(source.pk)
