"""Fixtures for the search tests: collections indexed directly through CollectionIndex.

Chunks are embedded by the collection's own embedding model: an Ollama-named model served by the
test server (deterministic bag-of-words vectors), so searches exercise real HTTP and real Redis.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from collections_app.models import Collection
from rag.index import CollectionIndex, IndexedChunk
from rag.providers import get_embedding_model

TEST_EMBEDDER = "ollama:snowflake-arctic-embed2"


def index_texts(
    collection: Collection,
    texts: Sequence[str],
    *,
    file_id: int = 1,
    file_name: str = "notes.md",
    section: str = "",
    page: int | None = None,
) -> list[str]:
    """Write `texts` as one file's chunks (positions 0..n-1); returns their chunk ids (Redis keys)."""
    vectors = get_embedding_model(collection.embedding_model).embed_batch(list(texts))
    index = CollectionIndex.for_collection(collection)
    chunks = [
        IndexedChunk(file_id, i, text, file_name, page, page, section, vector)
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    index.replace_file(file_id, chunks)
    return [index.key(file_id, i) for i in range(len(texts))]


@pytest.fixture
def make_collection(owner, ollama):
    """A collection in a language, embedded by the test server's model."""

    def make(name: str = "Course notes", language: str = "english", **extra) -> Collection:
        return Collection.objects.create(
            name=name, language=language, owner=owner, **{"embedding_model": TEST_EMBEDDER, **extra}
        )

    return make


@pytest.fixture
def search_collection(collection, ollama):
    """The shared `collection` fixture (owner, co-owner, joined by `student`), on the test embedder."""
    collection.embedding_model = TEST_EMBEDDER
    collection.save(update_fields=["embedding_model"])
    return collection
