"""The per-collection Redis index: language-aware full text, vectors, atomic file swaps."""

from __future__ import annotations

from dataclasses import replace

import pytest
from redis.commands.search.query import Query

from rag.fusion import Fused
from rag.index import ChunkStore, CollectionIndex, IndexedChunk
from rag.search import fetch


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


AWKWARD = [
    "Line one\nline two\n\nA paragraph after a blank line.\n",
    "Name\tValue\t\nmean\t4.2",
    "| x | p(x) |\n|---|---|\n| 1 | 0.5 |",
    "Sisällys: järjestys, työ, öljy ja ääni.  \n  Rivinvaihto ",
    "$$\\bar{x} = \\frac{1}{n}\\sum_{i=1}^{n} x_i$$ and $a \\lt b$\n\n\n",
    "\n leading newline, then text",
]


def awkward_chunks(file_id: int) -> list[IndexedChunk]:
    chunks = [
        IndexedChunk(
            file_id, i, text, "Tilastot – luku 2.pdf", i + 1, i + 2, "Luku 2 > 2.1 Otanta", [1.0, 0.0, 0.0, 0.0]
        )
        for i, text in enumerate(AWKWARD)
    ]
    chunks.append(
        IndexedChunk(file_id, len(AWKWARD), "No page here.\n", "notes.md", None, None, "", [0.0, 1.0, 0.0, 0.0])
    )
    return chunks


def test_stored_chunks_read_back_exactly_as_written_by_the_file_page_and_by_search():
    written = awkward_chunks(3)
    index = CollectionIndex(905, "finnish", 4)
    index.replace_file(3, written)
    expected = [replace(c, embedding=()) for c in written]

    assert ChunkStore(905).file_chunks(3) == expected  # the file page's list, built from the id alone

    chosen = [(905, Fused(index.key(3, c.position), 1.0 / (c.position + 1))) for c in written]
    passages = fetch(index.client, chosen)  # what search returns
    assert [(p.text, p.page, p.page_end, p.section, p.file_name, p.file_id) for p in passages] == [
        (c.text, c.page_start, c.page_end, c.heading_path, c.file_name, c.file_id) for c in written
    ]


def test_words_either_side_of_a_newline_are_searchable():
    index = CollectionIndex(906, "english", 4)
    index.replace_file(1, [chunk(1, 0, "alpha\nbravo\n\ncharlie")])
    assert count(index, "alpha") == count(index, "bravo") == count(index, "charlie") == 1


def test_a_store_without_schema_deletes_and_drops():
    index = CollectionIndex(907, "english", 4)
    index.replace_file(1, [chunk(1, 0, "keep me")])
    index.replace_file(2, [chunk(2, 0, "remove me")])
    store = ChunkStore(907)
    store.delete_file(2)
    assert [c.text for c in store.file_chunks(1)] == ["keep me"] and store.file_chunks(2) == []
    store.drop()
    assert not index.exists()
