"""The per-collection Redis index: language-aware full text, vectors, atomic file swaps."""

from __future__ import annotations

import pytest
from redis.commands.search.query import Query

from rag.index import CollectionIndex, IndexedChunk


def chunk(file_id: int, position: int, text: str, vector=(1.0, 0.0, 0.0, 0.0)) -> IndexedChunk:
    return IndexedChunk(file_id, position, text, "notes.md", 1, 1, "Intro", list(vector))


def count(index: CollectionIndex, query: str) -> int:
    return index.client.ft(index.name).search(Query(query).dialect(2)).total


def test_finnish_collection_stems_finnish_words():
    index = CollectionIndex(901, "finnish", 4)
    index.replace_file(1, [chunk(1, 0, "Taloissa asuu ihmisiä ja koiria.")])
    assert count(index, "talo") == 1  # "Taloissa" is an inflection of "talo"
    assert count(index, "ja") == 0  # a Finnish stop word is not indexed


def test_replacing_a_file_swaps_all_chunks_at_once():
    index = CollectionIndex(902, "english", 4)
    index.replace_file(7, [chunk(7, 0, "old alpha"), chunk(7, 1, "old beta"), chunk(7, 2, "old gamma")])
    index.replace_file(8, [chunk(8, 0, "other file stays")])
    index.replace_file(7, [chunk(7, 0, "new alpha")])
    assert count(index, "old") == 0
    assert count(index, "new") == 1
    assert index.file_chunk_count(7) == 1
    assert count(index, "stays") == 1


def test_deleting_a_file_and_dropping_the_collection_remove_chunks():
    index = CollectionIndex(903, "english", 4)
    index.replace_file(1, [chunk(1, 0, "keep me")])
    index.replace_file(2, [chunk(2, 0, "remove me")])
    index.delete_file(2)
    assert count(index, "remove") == 0 and count(index, "keep") == 1
    index.drop()
    assert not index.exists()
    assert list(index.client.scan_iter(match="*:c903:*")) == []


def test_wrong_vector_size_is_refused():
    index = CollectionIndex(904, "english", 4)
    with pytest.raises(ValueError, match="expects 4"):
        index.replace_file(1, [chunk(1, 0, "x", vector=(1.0, 0.0))])
