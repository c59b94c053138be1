"""The documents a search may be asked about by name: the ready files of the collections in scope,
as rag/documents.py matches them against a question."""

from __future__ import annotations

from collections.abc import Iterable

from collections_app.models import FileStatus, SourceFile
from rag.documents import Document, named_in


def documents_in(collections: Iterable) -> list[Document]:
    """The ready files of `collections`, in one query."""
    rows = SourceFile.objects.filter(collection__in=list(collections), status=FileStatus.READY)
    return [Document(cid, fid, name) for fid, cid, name in rows.values_list("id", "collection_id", "original_name")]


def named_documents(collections: Iterable, text: str) -> list[Document]:
    """The ready files of `collections` that `text` names."""
    return named_in(text, documents_in(collections))
