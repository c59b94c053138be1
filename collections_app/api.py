"""REST endpoints for collections and their files. Thin: check, parse, call the model layer."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.http import HttpResponse
from django.urls import reverse
from ninja import Field, File, Form, Query, Router, Schema, Status
from ninja.files import UploadedFile

from access.rules import get_collection_for_edit, get_file_for_edit, require_teacher
from collections_app import files, reread, review, writes
from collections_app.fair_queue import mark_waiting, waiting_of
from collections_app.listing import FileFilter
from collections_app.models import Collection, SourceFile

router = Router(tags=["collections"])


# Lengths and values are checked by collections_app.writes (as for the pages and the admin), so
# every channel refuses a bad value with the same sentence.
class CollectionIn(Schema):
    name: str
    description: str = ""
    language: str = "english"
    embedding_model: str | None = None
    co_owners: list[str] = Field(
        default_factory=list, description="Usernames or email addresses of teachers who co-own it."
    )


class CollectionPatch(Schema):
    name: str | None = None
    description: str | None = None
    language: str | None = None
    embedding_model: str | None = None
    co_owners: list[str] | None = Field(
        None, description="Usernames or email addresses of teachers who co-own it (only the owner changes them)."
    )


class CollectionOut(Schema):
    id: int
    name: str
    description: str
    language: str
    embedding_model: str
    owner: str = Field(alias="owner.username")
    co_owners: list[str]
    file_count: int
    created: datetime
    updated: datetime

    @staticmethod
    def resolve_co_owners(collection: Collection) -> list[str]:
        return [u.username for u in collection.co_owners.all()]

    @staticmethod
    def resolve_file_count(collection: Collection) -> int:
        return collection.files.count()


@router.get("/collections", response=list[CollectionOut])
def list_collections(request):
    require_teacher(request.user)
    return Collection.objects.editable_by(request.user).select_related("owner").prefetch_related("co_owners")


@router.post("/collections", response={201: CollectionOut})
def create_collection(request, data: CollectionIn):
    require_teacher(request.user)
    return Status(201, writes.create_collection(request.user, data.dict()))


@router.get("/collections/{int:collection_id}", response=CollectionOut)
def get_collection(request, collection_id: int):
    return get_collection_for_edit(request.user, collection_id)


@router.patch("/collections/{int:collection_id}", response=CollectionOut)
def update_collection(request, collection_id: int, data: CollectionPatch):
    collection = get_collection_for_edit(request.user, collection_id)
    # A property sent as null is left as it is, like one not sent at all.
    changes = {name: value for name, value in data.dict(exclude_unset=True).items() if value is not None}
    return writes.update_collection(request.user, collection, changes).collection


@router.delete("/collections/{int:collection_id}", response={204: None})
def delete_collection(request, collection_id: int):
    collection = get_collection_for_edit(request.user, collection_id)
    files.delete_collection(collection)
    return Status(204, None)


# --- Files -----------------------------------------------------------------------------------


class FileOut(Schema):
    id: int
    collection_id: int
    name: str = Field(alias="original_name")
    file_type: str
    size: int
    sha256: str
    status: str = Field(description="queued, processing, ready, failed or cancelled")
    progress: int = Field(description="0-100")
    progress_detail: str
    progress_done: int | None = Field(description="With progress_total: the count progress_detail states")
    progress_total: int | None = Field(description="Pages to read or passages to embed in the current step")
    error: str = Field(description="Why ingestion failed, as a sentence for the teacher")
    notes: str = Field(description="Warnings that did not stop ingestion")
    pdf_mode: str
    extractor: str
    pages: int | None
    chunk_count: int
    empty_pages: list[int] = Field(description="Pages that gave no text")
    repeated_pages: list[int] = Field(description="Pages whose text repeats on many other pages (a placeholder)")
    flagged_pages: list[dict] = Field(
        description='Pages the vision model probably read wrongly: [{"page": 3, "why": "unknown_words"}]'
    )
    quality_warning: str = Field(description='"12 of 94 pages had no readable text" for a ready file, else ""')
    queue_place: int | None = Field(
        description="For a queued file, its place in the shared ingestion queue (1: next); else null"
    )
    queue_wait_seconds: int | None = Field(
        description="For a queued file, about how long until a worker takes it; null when unknown or not queued"
    )
    waiting: str = Field(description='Place and estimate as a sentence for the teacher ("" unless queued)')
    url: str
    created: datetime
    updated: datetime

    @staticmethod
    def resolve_url(source: SourceFile) -> str:
        return reverse("file_detail", args=[source.id])

    @staticmethod
    def resolve_queue_place(source: SourceFile) -> int | None:
        waiting = waiting_of(source)
        return waiting.place if waiting else None

    @staticmethod
    def resolve_queue_wait_seconds(source: SourceFile) -> int | None:
        waiting = waiting_of(source)
        wait = waiting.wait if waiting else None
        return round(wait.total_seconds()) if wait is not None else None

    @staticmethod
    def resolve_waiting(source: SourceFile) -> str:
        waiting = waiting_of(source)
        return waiting.sentence if waiting else ""


class ChunkOut(Schema):
    position: int
    text: str
    page_start: int | None
    page_end: int | None
    heading_path: str


@router.post("/collections/{collection_id}/files", response={201: FileOut})
def upload_file(
    request,
    collection_id: int,
    file: File[UploadedFile],
    pdf_mode: Form[Literal["auto", "vlm", "fast"]] = "auto",
):
    """Upload one file (text, Markdown, HTML or PDF); ingestion runs in the background.

    Refused with 400 (empty, damaged or password-protected), 409 (already in the collection),
    413 (over the size or page limit) or 415 (not text and not a PDF).
    """
    collection = get_collection_for_edit(request.user, collection_id)
    return Status(201, files.add_file(collection, file, request.user, pdf_mode))


@router.get("/collections/{collection_id}/files", response=list[FileOut])
def list_files(
    request,
    response: HttpResponse,
    collection_id: int,
    q: str = "",
    status: str = "",
    sort: str = "newest",
    limit: int | None = Query(None, ge=1, le=1000),
    offset: int = Query(0, ge=0),
):
    """The collection's files, newest first. All parameters are optional: `q` (words in the file
    name), `status` (queued, processing, ready, failed, cancelled, or `attention` for failed files
    and ready ones with unreadable pages), `sort` (newest, oldest, name, -name, size), `limit` and
    `offset`. The number of matching files is in the `X-Total-Count` header."""
    collection = get_collection_for_edit(request.user, collection_id)
    matching = FileFilter.parse(q, status, sort).apply(collection.files.all())
    response["X-Total-Count"] = str(matching.count())
    listed = matching[offset : offset + limit] if limit is not None else matching[offset:]
    return mark_waiting(list(listed))  # one reading of the queue for every queued file listed


@router.get("/files/{file_id}", response=FileOut)
def get_file(request, file_id: int):
    return get_file_for_edit(request.user, file_id)


@router.get("/files/{file_id}/chunks", response=list[ChunkOut])
def get_file_chunks(request, file_id: int):
    """The file's passages as indexed, in reading order, with page(s) and heading path."""
    return files.file_chunks(get_file_for_edit(request.user, file_id))


@router.delete("/files/{file_id}", response={204: None})
def delete_file(request, file_id: int):
    files.delete_file(get_file_for_edit(request.user, file_id))
    return Status(204, None)


@router.post("/files/{file_id}/cancel", response=FileOut)
def cancel_file(request, file_id: int):
    """Stop a queued or running file; its passages leave the index. 409 if it is not running."""
    return files.cancel_file(get_file_for_edit(request.user, file_id))


@router.post("/files/{file_id}/retry", response=FileOut)
def retry_file(request, file_id: int):
    """Ingest a failed or cancelled file again. 409 for other files."""
    return files.retry_file(get_file_for_edit(request.user, file_id))


class RereadIn(Schema):
    method: Literal["fast", "vision"] = Field(
        description="fast: the PDF's own text layer; vision: the vision model reads each page image."
    )


@router.post("/files/{file_id}/reread", response=FileOut)
def reread_file(request, file_id: int, data: RereadIn):
    """Read a PDF again with the chosen method, which stays the file's method. Its passages stay
    searchable until the new ones replace them, and page corrections are kept. 409 for a file that
    is not a PDF or is being read now; 503 for "vision" when no vision model is available."""
    return reread.reread_file(get_file_for_edit(request.user, file_id), data.method)


class PageCorrectionIn(Schema):
    markdown: str = Field(description="The page's corrected text, in Markdown.")


class PageCorrectionOut(Schema):
    page: int
    markdown: str
    user: str | None
    created: datetime

    @staticmethod
    def resolve_user(correction) -> str | None:
        return str(correction.user) if correction.user else None


@router.put("/files/{file_id}/pages/{page}", response=PageCorrectionOut)
def correct_page(request, file_id: int, page: int, data: PageCorrectionIn):
    """Correct one page's extracted text (0 for a file without pages): the file is re-chunked and
    re-embedded with it, and the correction stays across Retry and re-index."""
    return review.correct_page(request.user, get_file_for_edit(request.user, file_id), page, data.markdown)
