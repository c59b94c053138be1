"""What the chat model reads for a search: hits grown within their section (rag/context.py), the
number of passages per search (chat/turn/budget.passage_count), near-duplicates giving way."""

from __future__ import annotations

import re

import pytest

from chat.turn.budget import passage_chars, passage_count
from kernel.redis_client import get_redis
from rag.context import assemble, join_chunks
from rag.index import CollectionIndex, IndexedChunk
from rag.ingest.chunking import chunk_pages
from rag.ingest.job import PageText
from rag.results import Passage

COLLECTION = 9101
SENTENCES = [f"Sentence {i} says that measurement {i} was taken with care and recorded at once." for i in range(40)]
SECTION_TEXT = " ".join(SENTENCES)


@pytest.fixture(autouse=True)
def _small_chunks(settings):
    """The chunking these documents were made with (`_chunked_document`)."""
    settings.INGEST_CHUNK_SIZE, settings.INGEST_CHUNK_OVERLAP = 200, 50


def _store(file_id: int, chunks: list[IndexedChunk]) -> CollectionIndex:
    index = CollectionIndex(COLLECTION, "english", 2)
    index.replace_file(file_id, chunks)
    return index


def _chunked_document(file_id: int = 1) -> list[IndexedChunk]:
    """A PDF-like document of two sections, chunked by the real chunker (200 characters, 50 overlap),
    each chunk on its own page so page ranges are visible."""
    markdown = f"# Methods\n\n{SECTION_TEXT}\n\n# Results\n\nThe other section starts here and must stay out."
    chunks = chunk_pages([PageText(None, markdown)], chunk_size=200)
    stored = [
        IndexedChunk(file_id, c.position, c.text, "report.pdf", c.position + 1, c.position + 1, c.heading_path, (1, 0))
        for c in chunks
    ]
    _store(file_id, stored)
    return stored


def _hit(chunk: IndexedChunk, score: float = 1.0) -> Passage:
    key = CollectionIndex(COLLECTION, "english", 2).key(chunk.file_id, chunk.position)
    return Passage(
        key, COLLECTION, chunk.file_id, chunk.file_name, chunk.page_start, chunk.page_end, chunk.heading_path,
        chunk.text, score, {"vector": 1},
    )  # fmt: skip


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"Sentence (\d+) says", text)]


def test_a_hit_grows_into_its_section_without_repeating_the_overlap(db):
    chunks = _chunked_document()
    middle = chunks[len(chunks) // 2]
    [passage] = assemble(get_redis(), [_hit(middle)], count=1, max_chars=1200).passages

    assert middle.text in passage.text
    numbers = _numbers(passage.text)
    assert len(numbers) > len(_numbers(middle.text)), "neighbours were added"
    assert numbers == list(range(numbers[0], numbers[-1] + 1)), "every sentence once, in reading order"
    assert passage.text in SECTION_TEXT or passage.text.replace("\n\n", " ") in SECTION_TEXT
    assert len(passage.text) <= 1200


def test_the_budget_is_held_and_a_hit_is_never_cut(db):
    chunks = _chunked_document()
    hit = _hit(chunks[5])
    for budget in (250, 400, 700):
        [passage] = assemble(get_redis(), [hit], count=1, max_chars=budget).passages
        assert len(passage.text) <= budget
    [alone] = assemble(get_redis(), [hit], count=1, max_chars=10).passages
    assert alone.text == hit.text


def test_the_passage_cites_the_hit_with_the_pages_it_now_covers(db):
    chunks = _chunked_document()
    hit = _hit(chunks[4])
    [passage] = assemble(get_redis(), [hit], count=1, max_chars=900).passages

    assert (passage.chunk_id, passage.file_id, passage.file_name) == (hit.chunk_id, 1, "report.pdf")
    assert passage.section == "Methods" and passage.score == hit.score
    assert passage.page < hit.page <= passage.page_end and passage.page_end > hit.page_end
    merged = [c.page_start for c in chunks if set(_numbers(c.text)) & set(_numbers(passage.text))]  # parts too
    assert (passage.page, passage.page_end) == (min(merged), max(merged))


def test_neighbours_of_another_section_stay_out(db):
    chunks = _chunked_document()
    last_of_methods = [c for c in chunks if c.heading_path == "Methods"][-1]
    [passage] = assemble(get_redis(), [_hit(last_of_methods)], count=1, max_chars=1500).passages
    assert "other section" not in passage.text
    assert 1200 < len(passage.text) <= 1500, "the room went to the section's earlier chunks instead"
    assert _numbers(passage.text)[-1] == 39


def test_hits_side_by_side_become_one_passage_and_the_next_hit_takes_the_free_place(db):
    chunks = _chunked_document()
    hits = [_hit(chunks[3], 0.9), _hit(chunks[4], 0.8), _hit(chunks[12], 0.7)]
    passages = assemble(get_redis(), hits, count=2, max_chars=700).passages

    assert [p.chunk_id for p in passages] == [hits[0].chunk_id, hits[2].chunk_id]
    first, second = (_numbers(p.text) for p in passages)
    assert not set(first) & set(second), "no sentence is given twice"


def test_a_near_duplicate_gives_way_to_different_material(db):
    text = "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen in the chloroplasts."
    other = "Cellular respiration releases the energy stored in sugar inside the mitochondria."
    copies = [IndexedChunk(f, 0, text, f"copy-{f}.md", None, None, "", (1, 0)) for f in (1, 2)]
    for chunk in copies:
        _store(chunk.file_id, [chunk])
    different = IndexedChunk(3, 0, other, "cells.md", None, None, "", (0, 1))
    _store(3, [different])
    hits = [_hit(copies[0], 0.9), _hit(copies[1], 0.8), _hit(different, 0.5)]

    passages = assemble(get_redis(), hits, count=2, max_chars=1000, duplicate_share=0.9).passages
    assert [p.file_name for p in passages] == ["copy-1.md", "cells.md"]
    kept_all = assemble(get_redis(), hits, count=2, max_chars=1000, duplicate_share=1.1).passages  # above 1: off
    assert [p.file_name for p in kept_all] == ["copy-1.md", "copy-2.md"]


def test_hits_come_before_growth_and_the_room_holds_them_all(db):
    chunks = _chunked_document()
    hits = [_hit(chunks[i], 1.0 - i / 100) for i in (2, 8, 14, 19)]
    total = sum(len(h.text) + 10 for h in hits)
    # Room for the hits and little more: every hit has its place before any passage grows.
    tight = assemble(get_redis(), hits, count=2, max_chars=2000, room_chars=total + 50, overhead_chars=10)
    assert [p.chunk_id for p in tight.passages] == [h.chunk_id for h in hits] and tight.no_room == 0
    assert sum(len(p.text) + 10 for p in tight.passages) <= total + 50
    # Less room than the hits need: the best ones, and a count of those left out.
    short = assemble(get_redis(), hits, count=2, max_chars=2000, room_chars=total - 100, overhead_chars=10)
    assert [p.chunk_id for p in short.passages] == [h.chunk_id for h in hits[:3]] and short.no_room == 1
    # Plenty of room: each passage grows to its share, no further.
    roomy = assemble(get_redis(), hits, count=4, max_chars=500, room_chars=5000, overhead_chars=10)
    assert all(len(h.text) < len(p.text) <= 500 for h, p in zip(hits, roomy.passages, strict=True))


def test_a_hit_replaced_since_the_search_is_kept_as_found(db):
    chunks = _chunked_document()
    hit = _hit(chunks[2])
    _store(1, [])  # the file was re-ingested to nothing between search and assembly
    assert assemble(get_redis(), [hit], count=3, max_chars=2000).passages == [hit]


def test_join_chunks_removes_only_a_real_overlap():
    assert join_chunks(["Alpha beta gamma delta.", "gamma delta. Epsilon zeta."], 50) == (
        "Alpha beta gamma delta. Epsilon zeta."
    )
    # A short coincidence ("a") is not the chunker's overlap: nothing is lost.
    assert join_chunks(["It was a", "a new day."], 50) == "It was a\n\na new day."
    assert join_chunks(["No overlap here.", "Next paragraph."], 0) == "No overlap here.\n\nNext paragraph."


def test_the_passage_count_rises_smoothly_with_the_free_context(settings):
    settings.CHAT_PASSAGES_MIN, settings.CHAT_PASSAGES_MAX, settings.CHAT_PASSAGES_MIDPOINT_TOKENS = 3, 11, 4000
    counts = [passage_count(free) for free in range(-2000, 40000, 100)]
    assert counts[0] == 3 and counts[-1] == 11
    assert all(b >= a for a, b in zip(counts, counts[1:], strict=False)), "more room never means fewer"
    assert all(b - a <= 1 for a, b in zip(counts, counts[1:], strict=False)), "no jumps"
    assert passage_count(4000) == 7, "half way at the midpoint"
    assert passage_count(10**12) == 11 and passage_count(-(10**12)) == 3


def test_each_passage_gets_an_equal_share_of_the_room_up_to_its_cap(settings):
    settings.CHAT_PASSAGE_TOKENS = 500
    assert passage_chars(3000, 5) == 500 * 3, "capped"
    assert passage_chars(1000, 5) == (200 - 24) * 3
    assert passage_chars(10, 5) == 0


@pytest.fixture
def long_material(collection, ollama):
    """One section whose answer lies in the chunk after the one the question's words find."""
    from tests.fixtures_chat import TEST_EMBEDDER

    collection.embedding_model = TEST_EMBEDDER
    collection.save()
    texts = [
        "Standard error and sample size: how the spread of the mean shrinks.",
        "It shrinks with the square root of n, so quadrupling the sample halves it.",
        "Unrelated closing remarks about the exam schedule.",
    ]
    index = CollectionIndex.for_collection(collection)
    from rag.providers import get_embedding_model

    vectors = get_embedding_model(TEST_EMBEDDER).embed_batch(texts)
    pairs = enumerate(zip(texts, vectors, strict=True))
    index.replace_file(7, [IndexedChunk(7, i, t, "errors.md", None, None, "Errors", v) for i, (t, v) in pairs])
    return collection


def test_the_chat_model_reads_the_section_around_a_hit(long_material, prompt, student, ollama):
    from chat.models import ChatSession
    from chat.turn.agent import run_turn, start_turn
    from chat.turn.events import ListSink
    from tests.fake_ollama import Reply
    from tests.fixtures_chat import search_call

    prompt.curation_enabled = False
    prompt.save()
    session = ChatSession.objects.create(prompt=prompt, user=student)
    ollama.script(Reply(tool_calls=[search_call("standard error sample size")]), Reply(content="Halved [1]."))
    reply = run_turn(start_turn(session, "How does the standard error change?"), ListSink())

    read = ollama.chat_requests()[1]["messages"][-1]["content"]
    assert "square root of n" in read, "the next chunk of the hit's section reached the model"
    [passage] = [p for p in reply.tool_results[0]["passages"] if "Standard error and sample size" in p["text"]]
    assert "square root of n" in passage["text"] and passage["section"] == "Errors"


def test_further_hits_take_only_the_room_the_first_hits_leave(db):
    chunks = _chunked_document()
    hits = [_hit(chunks[i], 1.0 - i / 100) for i in (2, 8, 14, 19)]
    cost = [len(h.text) + 10 for h in hits]
    # The first two hits are today's passages; the room holds them and one more: the third hit
    # (the search's next best) takes it, the fourth finds no room.
    some = assemble(get_redis(), hits, count=2, max_chars=10, room_chars=sum(cost[:3]), overhead_chars=10, first=2)
    assert [p.chunk_id for p in some.passages] == [h.chunk_id for h in hits[:3]]
    assert some.no_room == 0, "a further hit without room is not one of the search's passages left out"
    assert sum(len(p.text) + 10 for p in some.passages) <= sum(cost[:3])
    # Room for the first two only: nothing beyond them.
    none = assemble(get_redis(), hits, count=2, max_chars=10, room_chars=sum(cost[:2]), overhead_chars=10, first=2)
    assert [p.chunk_id for p in none.passages] == [h.chunk_id for h in hits[:2]]


def test_the_first_hits_keep_their_place_whatever_their_neighbours_are_worth(db):
    chunks = _chunked_document()
    hits = [_hit(chunks[3], 1.0), _hit(chunks[12], 0.01)]
    room = sum(len(h.text) + 10 for h in hits) + 150  # a little more than both hits need
    passages = assemble(
        get_redis(), hits, count=1, max_chars=2000, room_chars=room, overhead_chars=10, first=2, neighbour_weight=1.0
    ).passages
    assert [p.chunk_id for p in passages] == [h.chunk_id for h in hits], "hit 2 is placed before hit 1 grows"


def test_the_room_left_goes_to_what_the_search_scores_higher(db):
    chunks = _chunked_document()
    strong, weak = _hit(chunks[3], 1.0), _hit(chunks[14], 0.2)
    room = 1000
    # A neighbour of the strong hit is worth 1.0 x weight per chunk: above the weak further hit (0.2)
    # for several chunks at 0.9, below it at once at 0.1.
    for weight, grows_first in ((0.9, True), (0.1, False)):
        passages = assemble(
            get_redis(), [strong, weak], count=1, max_chars=room, room_chars=room, overhead_chars=10, first=1,
            neighbour_weight=weight,
        ).passages  # fmt: skip
        first = _numbers(passages[0].text)
        assert set(_numbers(strong.text)) < set(first), "the strong hit is whole and first"
        assert (len(passages) == 1) is grows_first, f"weight {weight}"
        assert sum(len(p.text) + 10 for p in passages) <= room
        if len(passages) == 2:
            assert passages[1].chunk_id == weak.chunk_id and not set(first) & set(_numbers(passages[1].text))


def test_further_hits_and_their_growth_never_repeat_text_and_cite_their_own_pages(db):
    chunks = _chunked_document()
    hits = [_hit(chunks[i], 1.0 - i / 100) for i in (4, 5, 10, 11, 16)]
    assembly = assemble(
        get_redis(), hits, count=2, max_chars=600, room_chars=4000, overhead_chars=10, first=1, neighbour_weight=0.3
    )
    seen: list[int] = []
    for passage in assembly.passages:
        numbers = _numbers(passage.text)
        assert numbers == list(range(numbers[0], numbers[-1] + 1)), "whole sentences in reading order"
        seen += numbers
        merged = [c.page_start for c in chunks if set(_numbers(c.text)) & set(_numbers(passage.text))]  # parts too
        assert (passage.page, passage.page_end) == (min(merged), max(merged))
        assert passage.chunk_id in {h.chunk_id for h in hits} and passage.section == "Methods"
    assert len(seen) == len(set(seen)), "no sentence is given twice"
    assert sum(len(p.text) + 10 for p in assembly.passages) <= 4000


def test_without_curation_the_search_hands_the_assembly_further_hits(settings):
    from chat.turn.tools import further_hits

    settings.CHAT_SEARCH_LIMIT, settings.CHAT_SEARCH_CANDIDATES = 15, 40
    assert further_hits(curate=True) == 0, "curation judges each hit with a model call"
    assert further_hits(curate=False) == 25
    settings.CHAT_SEARCH_CANDIDATES = 5
    assert further_hits(curate=False) == 0, "never fewer than the search limit"


def test_the_last_of_the_room_goes_to_whole_sentences_of_the_next_chunk(db):
    chunks = _chunked_document()
    hit = _hit(chunks[6])
    # Room for the hit and about half of its next chunk's new text (a whole one adds ~150 characters).
    room = len(hit.text) + 10 + 100
    [passage] = assemble(get_redis(), [hit], count=1, max_chars=2000, room_chars=room, overhead_chars=10).passages
    assert passage.text.startswith(hit.text) and len(passage.text) + 10 <= room
    added = passage.text[len(hit.text) :]
    assert len(added) >= 80 and added.rstrip().endswith("at once."), "whole sentences only"
    numbers = _numbers(passage.text)
    assert numbers == list(range(numbers[0], numbers[-1] + 1))


def test_a_passage_stops_one_chunk_short_of_another(db):
    chunks = _chunked_document()
    # Hits two chunks apart: growing either into the chunk between would repeat the border text
    # the chunker copies into both of its neighbours.
    hits = [_hit(chunks[5], 1.0), _hit(chunks[7], 0.9)]
    passages = assemble(get_redis(), hits, count=2, max_chars=2000, room_chars=5000, overhead_chars=10).passages
    first, second = (_numbers(p.text) for p in passages)
    assert not set(first) & set(second), "no sentence is given twice"
    assert max(first) < min(second)


def test_a_search_without_curation_gives_the_model_further_hits_when_room_allows(session, ollama, settings):
    from chat.turn.agent import run_turn, start_turn
    from chat.turn.events import ListSink
    from tests.fake_ollama import Reply
    from tests.fixtures_chat import search_call

    settings.CHAT_SEARCH_LIMIT = 1
    for candidates, expected in ((1, 1), (4, 4)):
        settings.CHAT_SEARCH_CANDIDATES = candidates
        ollama.script(Reply(tool_calls=[search_call("sample size bias regression")]), Reply(content="See [1]."))
        reply = run_turn(start_turn(session, f"What matters for samples? ({candidates})"), ListSink())
        passages = reply.tool_results[0]["passages"]
        assert len(passages) == expected
        assert len({p["text"] for p in passages}) == expected, "each hit once"
