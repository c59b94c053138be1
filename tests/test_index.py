"""The per-collection Redis index: language-aware full text, vectors, atomic file swaps."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
import redis
from django.conf import settings
from redis.commands.search.query import Query

from rag.fusion import Fused
from rag.index import ChunkStore, CollectionIndex, IndexedChunk
from rag.languages import LANGUAGES, stopwords
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


def total_of(raw) -> int:
    """The hit count of a raw FT.SEARCH reply (RESP3 map or RESP2 list)."""
    return int(raw[b"total_results"] if isinstance(raw, dict) else raw[0])


def test_a_reader_during_a_swap_sees_only_the_old_or_only_the_new_chunks():
    """A second Redis client searches the file over and over while a large swap runs: every look
    finds all 300 old chunks or all 200 new ones, never a mix, a part, or an empty file."""
    index = CollectionIndex(905, "english", 4)
    filler = " ".join(["padding"] * 60)  # long chunks make the swap big enough to take a while
    old = [chunk(7, i, f"old chunk {i} {filler}") for i in range(300)]
    new = [chunk(7, i, f"new chunk {i} {filler}") for i in range(200)]
    index.replace_file(7, old)
    reader = redis.Redis.from_url(settings.REDIS_URL)
    seen: list[tuple[int, int]] = []
    started, stop = threading.Event(), threading.Event()

    def look() -> tuple[int, int]:
        # One transaction: both counts come from the same moment.
        pipe = reader.pipeline(transaction=True)
        pipe.ft(index.name).search(Query("@file_id:{7}").paging(0, 0).dialect(2))
        pipe.ft(index.name).search(Query("old").paging(0, 0).dialect(2))
        total, old_count = pipe.execute()
        return total_of(total), total_of(old_count)

    def poll() -> None:
        try:
            while not stop.is_set():
                seen.append(look())
                started.set()
            seen.append(look())
        finally:
            started.set()

    poller = threading.Thread(target=poll)
    poller.start()
    started.wait(5)
    for _ in range(3):
        index.replace_file(7, new)
        index.replace_file(7, old)
    index.replace_file(7, new)
    stop.set()
    poller.join(10)

    assert seen[0] == (300, 300) and seen[-1] == (200, 0)
    assert set(seen) <= {(300, 300), (200, 0)}, f"a reader saw a half-done swap: {set(seen)}"
    assert len(seen) > 10  # the reader really looked while the swaps ran


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


# One word pair per offered language: the text says one inflection, the query another of the same stem.
INFLECTIONS = {
    "arabic": ("المعلمون", "المعلم"),
    "basque": ("mendiak", "mendian"),
    "catalan": ("gats", "gat"),
    "danish": ("husene", "huset"),
    "dutch": ("boeken", "boek"),
    "english": ("sampled", "sampling"),
    "finnish": ("taloissa", "talo"),
    "french": ("chanteurs", "chanteur"),
    "german": ("häuser", "haus"),
    "greek": ("δρόμους", "δρόμος"),
    "hungarian": ("házakban", "ház"),
    "indonesian": ("bukunya", "buku"),
    "italian": ("gatti", "gatto"),
    "nepali": ("घरहरू", "घर"),
    "norwegian": ("bilene", "bilen"),
    "portuguese": ("livros", "livro"),
    "romanian": ("profesorilor", "profesorul"),
    "russian": ("книгами", "книга"),
    "spanish": ("libros", "libro"),
    "swedish": ("bilarna", "bilen"),
    "tamil": ("வீடுகள்", "வீடு"),
    "turkish": ("kitaplar", "kitap"),
}


def test_every_offered_language_has_an_inflection_example():
    assert set(INFLECTIONS) == set(LANGUAGES)
    assert {"english", "finnish", "german", "swedish"} <= set(LANGUAGES)
    assert "chinese" not in LANGUAGES  # RediSearch does not stem it


@pytest.mark.parametrize("language", sorted(INFLECTIONS))
def test_each_offered_language_stems_and_drops_its_stop_words(language):
    written, asked = INFLECTIONS[language]
    stop_word = sorted(stopwords(language))[0]
    index = CollectionIndex(910 + sorted(INFLECTIONS).index(language), language, 4)
    index.replace_file(1, [chunk(1, 0, f"{written} {stop_word}")])
    assert count(index, written) == 1
    assert count(index, asked) == 1, f"{language}: {asked!r} should find {written!r} through the stemmer"
    assert count(index, "zzzunrelated") == 0
    assert count(index, stop_word) == 0, f"{language}: the stop word {stop_word!r} should not be indexed"
