"""REST endpoints for collections and their files. Thin: check, parse, call the model layer."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.db import transaction
from django.urls import reverse
from ninja import Field, File, Form, Router, Schema, Status
from ninja.files import UploadedFile

from accounts.models import User
from accounts.permissions import get_collection_for_edit, get_file_for_edit, require_teacher
from collections_app import files
from collections_app.models import Collection, SourceFile
from currechat.errors import CurreChatError
from rag.languages import LANGUAGES
from rag.providers.registry import get_embedding_model

router = Router(tags=["collections"])


class CollectionIn(Schema):
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    language: str = "english"
    embedding_model: str | None = None
    co_owners: list[str] = Field(default_factory=list, description="Usernames of teachers who co-own it.")


class CollectionPatch(Schema):
    name: str | None = Field(default=None, min_length=1, max_length=200)
    description: str | None = None
    language: str | None = None
    embedding_model: str | None = None
    co_owners: list[str] | None = None


class CollectionOut(Schema):
    id: int
    name: str
    description: str
    language: str
    embedding_model: str
    owner: str
    co_owners: list[str]
    file_count: int
    created: datetime
    updated: datetime


def collection_out(collection: Collection) -> dict:
    return {
        "id": collection.id,
        "name": collection.name,
        "description": collection.description,
        "language": collection.language,
        "embedding_model": collection.embedding_model,
        "owner": collection.owner.username,
        "co_owners": [u.username for u in collection.co_owners.all()],
        "file_count": collection.files.count(),
        "created": collection.created,
        "updated": collection.updated,
    }


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise CurreChatError(f"'{language}' is not a supported language; choose one of: {', '.join(LANGUAGES)}.")


def _check_embedding_model(name: str) -> None:
    # Raises UnknownModel (a 400) for a name no provider knows; it never contacts a model server.
    get_embedding_model(name)


def _teachers(usernames: list[str], owner) -> list:
    users = list(User.objects.filter(username__in=usernames))
    missing = sorted(set(usernames) - {u.username for u in users})
    if missing:
        raise CurreChatError(f"No such user: {', '.join(missing)}.")
    not_teachers = [u.username for u in users if not u.is_teacher]
    if not_teachers:
        raise CurreChatError(f"Only teachers can co-own a collection: {', '.join(not_teachers)} is not a teacher.")
    return [u for u in users if u.pk != owner.pk]


@router.get("/collections", response=list[CollectionOut])
def list_collections(request):
    require_teacher(request.user)
    collections = Collection.objects.editable_by(request.user).select_related("owner").prefetch_related("co_owners")
    return [collection_out(c) for c in collections]


@router.post("/collections", response={201: CollectionOut})
def create_collection(request, data: CollectionIn):
    require_teacher(request.user)
    _check_language(data.language)
    embedding = data.embedding_model or Collection._meta.get_field("embedding_model").get_default()
    _check_embedding_model(embedding)
    with transaction.atomic():
        collection = Collection.objects.create(
            name=data.name.strip(),
            description=data.description,
            language=data.language,
            embedding_model=embedding,
            owner=request.user,
        )
        collection.co_owners.set(_teachers(data.co_owners, request.user))
    return Status(201, collection_out(collection))


@router.get("/collections/{int:collection_id}", response=CollectionOut)
def get_collection(request, collection_id: int):
    return collection_out(get_collection_for_edit(request.user, collection_id))


@router.patch("/collections/{int:collection_id}", response=CollectionOut)
def update_collection(request, collection_id: int, data: CollectionPatch):
    collection = get_collection_for_edit(request.user, collection_id)
    changes = data.dict(exclude_unset=True)
    before = {"language": collection.language, "embedding_model": collection.embedding_model}
    if "language" in changes:
        _check_language(changes["language"])
    if "embedding_model" in changes:
        _check_embedding_model(changes["embedding_model"])
    with transaction.atomic():
        for field in ("name", "description", "language", "embedding_model"):
            if changes.get(field) is not None:
                setattr(collection, field, changes[field])
        collection.save()
        if changes.get("co_owners") is not None:
            if request.user != collection.owner and not request.user.is_superuser:
                raise CurreChatError("Only the collection's owner can change its co-owners.")
            collection.co_owners.set(_teachers(changes["co_owners"], collection.owner))
    files.reindex_for_changes(collection, {k for k, v in changes.items() if v is not None and v != before.get(k)})
    return collection_out(collection)


@router.delete("/collections/{int:collection_id}", response={204: None})
def delete_collection(request, collection_id: int):
    collection = get_collection_for_edit(request.user, collection_id)
    files.delete_collection(collection)
    return Status(204, None)


# --- Files -----------------------------------------------------------------------------------


class FileOut(Schema):
    id: int
    collection_id: int
    name: str
    file_type: str
    size: int
    sha256: str
    status: str = Field(description="queued, processing, ready, failed or cancelled")
    progress: int = Field(description="0-100")
    progress_detail: str
    error: str = Field(description="Why ingestion failed, as a sentence for the teacher")
    notes: str = Field(description="Warnings that did not stop ingestion")
    pdf_mode: str
    extractor: str
    pages: int | None
    chunk_count: int
    url: str
    created: datetime
    updated: datetime


class ChunkOut(Schema):
    position: int
    text: str
    page_start: int | None
    page_end: int | None
    heading_path: str


def file_out(source: SourceFile) -> dict:
    return {
        "id": source.id,
        "collection_id": source.collection_id,
        "name": source.original_name,
        "file_type": source.file_type,
        "size": source.size,
        "sha256": source.sha256,
        "status": source.status,
        "progress": source.progress,
        "progress_detail": source.progress_detail,
        "error": source.error,
        "notes": source.notes,
        "pdf_mode": source.pdf_mode,
        "extractor": source.extractor,
        "pages": source.pages,
        "chunk_count": source.chunk_count,
        "url": reverse("file_detail", args=[source.id]),
        "created": source.created,
        "updated": source.updated,
    }


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
    return Status(201, file_out(files.add_file(collection, file, request.user, pdf_mode)))


@router.get("/collections/{collection_id}/files", response=list[FileOut])
def list_files(request, collection_id: int):
    collection = get_collection_for_edit(request.user, collection_id)
    return [file_out(f) for f in collection.files.all()]


@router.get("/files/{file_id}", response=FileOut)
def get_file(request, file_id: int):
    return file_out(get_file_for_edit(request.user, file_id))


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
    return file_out(files.cancel_file(get_file_for_edit(request.user, file_id)))


@router.post("/files/{file_id}/retry", response=FileOut)
def retry_file(request, file_id: int):
    """Ingest a failed or cancelled file again. 409 for other files."""
    return file_out(files.retry_file(get_file_for_edit(request.user, file_id)))
