"""Keyword search finds every word in every alphabet: capitalised non-ASCII words, stress marks,
guillemets, Turkish dotted and dotless i, all on a real index through the whole search."""

from __future__ import annotations

import pytest

from rag.index import FORMAT_VERSION, ChunkStore, CollectionIndex, IndexedChunk
from rag.search import search_collections
from rag.text import search_form
from tests.fixtures_search import index_texts

KEYWORD = ("exact", "all_words", "any_word", "substring")

# (language, indexed sentence, what a user types, the word it must find)
CASES = [
    ("russian", "Москва — столица России.", "москва", "Москва"),
    ("russian", "Москва — столица России.", "россии", "России"),
    ("russian", "Слово госуда́рство с ударением.", "государство", "госуда́рство"),
    ("russian", "Он сказал «Москва» и ушёл.", "москва", "«Москва»"),
    ("greek", "Η ΑΘΗΝΑ είναι η πρωτεύουσα.", "αθηνα", "ΑΘΗΝΑ"),
    ("greek", "Ο Σωκράτης ήταν φιλόσοφος.", "σωκράτης", "Σωκράτης"),
    ("turkish", "İstanbul büyük bir şehirdir.", "istanbul", "İstanbul"),
    ("turkish", "IŞIK hızı sabittir.", "ışık", "IŞIK"),
    ("german", "Österreich liegt in Europa. Über alles.", "österreich", "Österreich"),
    ("german", "Die Ärzte arbeiten im Krankenhaus.", "ärzte", "Ärzte"),
    ("german", "Die STRASSE ist lang.", "straße", "STRASSE"),
    ("spanish", "Ángel vive en Madrid.", "ángel", "Ángel"),
    ("french", "École publique et «laïcité» en France.", "école", "École"),
    ("french", "École publique et «laïcité» en France.", "laïcité", "«laïcité»"),
    ("french", "Il a dit ‹bonjour› et „merci“.", "bonjour", "‹bonjour›"),
]


@pytest.mark.parametrize(("language", "text", "typed", "word"), CASES)
def test_a_typed_word_finds_the_material_however_it_is_written(make_collection, language, text, typed, word):
    collection = make_collection(language=language)
    index_texts(collection, [text, "Unrelated filler sentence number two."])
    outcome = search_collections([collection], typed, curate=False)
    found = [p for p in outcome.results if set(p.sources) & set(KEYWORD)]
    assert [p.text for p in found] == [text], f"{typed!r} should find {word!r} by its words"
    assert found[0].text == text  # the display text keeps its case, marks and quotes


@pytest.mark.parametrize(("language", "text", "typed", "word"), CASES)
def test_the_word_as_written_in_the_material_finds_it_too(make_collection, language, text, typed, word):
    collection = make_collection(language=language)
    index_texts(collection, [text])
    outcome = search_collections([collection], word, curate=False)
    assert any(set(p.sources) & set(KEYWORD) for p in outcome.results)


def test_capitalised_words_keep_their_case_for_display_and_citations(make_collection):
    collection = make_collection(language="russian")
    index_texts(collection, ["Москва — столица России."], section="Глава 1 > Города", page=3)
    (passage,) = search_collections([collection], "москва", curate=False).results
    assert (passage.text, passage.section, passage.page) == ("Москва — столица России.", "Глава 1 > Города", 3)


def test_section_titles_are_searched_case_folded(make_collection):
    collection = make_collection(language="german")
    index_texts(collection, ["Ein Absatz ohne das Wort."], section="Übersicht > Ärzte")
    outcome = search_collections([collection], "übersicht", curate=False)
    assert outcome.results and "any_word" in outcome.results[0].sources


def test_search_form_folds_case_marks_and_quotes():
    assert search_form("«Москва»") == " москва "
    assert search_form("госуда́рство") == "государство"
    assert search_form("İstanbul") == "istanbul"
    assert search_form("IŞIK", "turkish") == "ışık"
    assert search_form("IŞIK", "english") == "işik"  # outside Turkish, I is the capital of i
    assert search_form("Straße") == "strasse"
    assert search_form("École, é́") == "école, é"  # é is spelled with its accent and keeps it


def test_a_new_index_records_its_format_and_an_old_one_is_stale():
    index = CollectionIndex(960, "english", 4)
    index.replace_file(1, [IndexedChunk(1, 0, "Some text", "n.md", None, None, "", [1.0, 0.0, 0.0, 0.0])])
    store = ChunkStore(960)
    assert store.format_version() == FORMAT_VERSION and not store.is_stale()
    index.client.delete(store.format_key())  # as an index built before versions were recorded
    assert store.is_stale()
    assert store.file_chunks(1)[0].text == "Some text"


def test_a_chunk_of_the_old_format_reads_back_until_reindexed():
    index = CollectionIndex(961, "english", 4)
    index.ensure()
    # What version 1 wrote: the display text in `text` (a space before each newline), no `body`.
    index.client.hset(
        index.key(1, 0),
        mapping={"text": "Line one \nLine two", "file_id": "1", "file_name": "old.md", "position": 0,
                 "page_start": -1, "page_end": -1, "heading_path": "Intro"},
    )  # fmt: skip
    index.client.sadd(index.file_set(1), index.key(1, 0))
    (chunk,) = ChunkStore(961).file_chunks(1)
    assert (chunk.text, chunk.heading_path, chunk.page_start) == ("Line one\nLine two", "Intro", None)


def test_a_search_over_an_old_index_says_it_needs_rebuilding(make_collection):
    collection = make_collection(language="russian")
    index_texts(collection, ["Москва — столица России."])
    store = ChunkStore(collection.pk)
    assert not any("older version" in n for n in search_collections([collection], "столица", curate=False).notes)
    store.client.delete(store.format_key())
    notes = search_collections([collection], "столица", curate=False).notes
    assert any("reindex --stale" in n for n in notes)


@pytest.mark.django_db
def test_reindex_stale_rebuilds_only_the_old_indexes(fast_collection, ingest_upload):
    import io

    from django.core.management import call_command

    ingest_upload(fast_collection, "# Intro\n\nMoscow is called Москва.\n".encode(), "notes.md")
    store = ChunkStore(fast_collection.pk)
    out = io.StringIO()
    call_command("reindex", stale=True, stdout=out)
    assert "0 ready" in out.getvalue()  # nothing was stale
    store.client.delete(store.format_key())
    call_command("reindex", stale=True, stdout=out)
    assert "1 ready" in out.getvalue() and not store.is_stale()
    assert search_collections([fast_collection], "москва", curate=False).results
