"""Ingestion progress as typed events on the channel layer (group per collection)."""

from __future__ import annotations

import logging
from typing import Literal, TypedDict

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.utils import translation

from collections_app.fair_queue import waiting_for
from collections_app.models import Collection, SourceFile

log = logging.getLogger(__name__)


class FileProgressEvent(TypedDict):
    type: Literal["file_progress"]
    file_id: int
    name: str
    status: str
    progress: int
    done: int | None  # with `total`: the count the detail states, which the bar shows
    total: int | None
    error: str
    notes: str
    pages: int | None
    chunk_count: int
    quality_warning: str
    flagged_pages: list[dict]  # pages to check, as in the files API: [{"page": 3, "why": "…"}]
    detail: str
    waiting: str  # a queued file's place and estimate, as a sentence ("" otherwise)


def group_name(collection_id: int) -> str:
    return f"collection_{collection_id}"


def file_event(source_file, detail: str = "") -> FileProgressEvent:
    return FileProgressEvent(
        type="file_progress",
        file_id=source_file.id,
        name=source_file.original_name,
        status=source_file.status,
        progress=source_file.progress,
        done=source_file.progress_done,
        total=source_file.progress_total,
        error=source_file.error,
        notes=source_file.notes,
        pages=source_file.pages,
        chunk_count=source_file.chunk_count,
        quality_warning=source_file.quality_warning,
        flagged_pages=list(source_file.flagged_pages or []),
        detail=detail,
        waiting=_waiting(source_file),
    )


def _waiting(source_file) -> str:
    # Read afresh (not the instance's cached `waiting`): announce reuses one instance across changes.
    if source_file.status != "queued" or source_file.pk is None:
        return ""
    place = waiting_for([source_file]).get(source_file.pk)
    return place.sentence if place else ""


def publish(collection_id: int, event: FileProgressEvent) -> None:
    """Send an event to everyone watching the collection. Never fails the caller's work."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        # The consumer method that receives it is named after the channel message type.
        async_to_sync(layer.group_send)(group_name(collection_id), {"type": "progress.event", "event": event})
    except Exception:  # noqa: BLE001 — progress is best effort; the database holds the truth
        log.warning("Could not publish progress for collection %s", collection_id, exc_info=True)


def announce(source: SourceFile) -> None:
    """Reload `source` from the database and publish its state; nothing when it was deleted."""
    try:
        source.refresh_from_db()
    except SourceFile.DoesNotExist:
        return
    publish(source.collection_id, file_event(source, source.progress_detail))


def in_teachers_language(collection_id: int, language: str = "") -> translation.override:
    """The language of the sentences a worker stores for a collection's teachers to read: the one of
    the teacher who queued the file (`language`, passed with the job), else the owner's chosen
    interface language, else the site's default."""
    if language not in dict(settings.LANGUAGES):
        owner = Collection.objects.filter(pk=collection_id).values_list("owner__language", flat=True).first()
        language = owner or settings.LANGUAGE_CODE
    return translation.override(language)
