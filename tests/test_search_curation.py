"""LLM curation, scripted through the Ollama-protocol test server over real HTTP."""

from __future__ import annotations

import json
import time

import pytest

from rag.curation import SCHEMA
from rag.search import search_collections
from tests.fake_ollama import Reply
from tests.fixtures_search import index_texts

TEXTS = [
    "Variance is the average squared deviation from the mean.",  # 0
    "The variance of a sum of independent variables is the sum of their variances.",  # 1
    "Variance appears in the weather report as a word, nothing more.",  # 2
]


def passage_of(request: dict) -> str:
    user = request["messages"][-1]["content"]
    return user.split("<passage>\n", 1)[1].rsplit("\n</passage>", 1)[0]


def verdict(score: int, include: bool, reason: str) -> Reply:
    return Reply(content=json.dumps({"score": score, "include": include, "reason": reason}))


def judge(request: dict) -> Reply:
    """A curation model: the definition is best, the weather mention is irrelevant."""
    text = passage_of(request)
    if "weather" in text:
        return verdict(1, False, "Only mentions the word.")
    if "average squared" in text:
        return verdict(10, True, "Defines variance.")
    return verdict(6, True, "A property of variance.")


@pytest.fixture
def texts(search_collection):
    index_texts(search_collection, TEXTS)
    return search_collection


def position(chunk_id: str) -> int:
    return int(chunk_id.rsplit(":", 1)[1])


def test_curation_drops_excluded_passages_and_orders_the_rest_by_score(texts, ollama):
    ollama.responder = judge
    outcome = search_collections([texts], "variance", curate=True)
    assert outcome.status == "ok"
    assert [position(p.chunk_id) for p in outcome.results] == [0, 1]
    assert [p.curation_score for p in outcome.results] == [10.0, 6.0]
    assert outcome.results[0].curation_reason == "Defines variance."
    assert [(position(p.chunk_id), p.included, p.curation_reason) for p in outcome.dropped] == [
        (2, False, "Only mentions the word.")
    ]
    assert "curate" in outcome.timings_ms


def test_each_passage_is_judged_once_with_a_json_schema_and_the_passage_fenced(texts, ollama):
    ollama.responder = judge
    search_collections([texts], "variance", curate=True, curation_model="qwen3:8b")
    calls = ollama.chat_requests()
    assert len(calls) == 3
    assert all(c["format"] == SCHEMA and c["model"] == "qwen3:8b" for c in calls)
    assert sorted(passage_of(c) for c in calls) == sorted(TEXTS)
    assert "Query: variance" in calls[0]["messages"][-1]["content"]


def test_verdicts_are_cached_by_model_query_and_chunk(texts, ollama):
    ollama.responder = judge
    first = search_collections([texts], "variance", curate=True)
    second = search_collections([texts], "variance", curate=True)
    assert len(ollama.chat_requests()) == 3  # the second search asked nothing
    assert [p.chunk_id for p in second.results] == [p.chunk_id for p in first.results]
    search_collections([texts], "variance formula", curate=True)
    assert len(ollama.chat_requests()) == 6  # another query is judged afresh


def test_when_curation_excludes_everything_the_outcome_is_nothing_relevant(texts, ollama):
    ollama.responder = lambda request: verdict(2, False, "Off topic.")
    outcome = search_collections([texts], "variance", curate=True)
    assert outcome.status == "nothing_relevant" and outcome.nothing_relevant
    assert outcome.results == []
    assert len(outcome.dropped) == 3


def test_a_low_score_counts_as_excluded(texts, ollama, settings):
    settings.SEARCH_CURATION_MIN_SCORE = 5
    ollama.responder = lambda request: verdict(3, True, "Barely related.")
    assert search_collections([texts], "variance", curate=True).nothing_relevant


def _fail_on_sum(request: dict) -> Reply:
    if "sum of independent" in passage_of(request):
        return Reply(status=500, error="model crashed")
    return judge(request)


@pytest.mark.parametrize(
    "failure",
    [
        _fail_on_sum,
        lambda r: Reply(content="I think it is relevant!") if "sum of" in passage_of(r) else judge(r),
        lambda r: verdict(11, "yes", "bad types") if "sum of" in passage_of(r) else judge(r),  # type: ignore[arg-type]
    ],
    ids=["server-error", "not-json", "wrong-types"],
)
def test_a_failed_curation_call_keeps_the_passage_at_its_search_rank(texts, ollama, failure):
    plain = [position(p.chunk_id) for p in search_collections([texts], "variance", curate=False).results]
    # Its slot among the passages curation keeps (chunk 2 is excluded by the judge).
    fused_position = [n for n in plain if n != 2].index(1)
    ollama.responder = failure
    outcome = search_collections([texts], "variance", curate=True)
    assert outcome.status == "ok"
    ids = [p.chunk_id for p in outcome.results]
    failed = next(p for p in outcome.results if position(p.chunk_id) == 1)
    assert failed.curation_score is None and failed.included
    assert ids.index(failed.chunk_id) == fused_position
    assert any("failed for 1 passage" in n for n in outcome.notes)


def test_a_slow_curation_call_times_out_without_failing_the_search(texts, ollama, settings):
    settings.SEARCH_CURATION_TIMEOUT = 1.0

    def slow_on_definition(request):
        if "average squared" in passage_of(request):
            return Reply(content=json.dumps({"score": 10, "include": True, "reason": "late"}), delay=1.0)
        return judge(request)

    ollama.responder = slow_on_definition
    started = time.monotonic()
    outcome = search_collections([texts], "variance", curate=True)
    assert time.monotonic() - started < 3.0
    assert outcome.status == "ok"
    slow = next(p for p in outcome.results if position(p.chunk_id) == 0)
    assert slow.curation_score is None
    assert any("timed out for 1 passage" in n for n in outcome.notes)


def test_a_missing_curation_model_leaves_the_search_results_uncurated(texts, ollama):
    outcome = search_collections([texts], "variance average", curate=False)
    curated = search_collections([texts], "variance average", curate=True, curation_model="not-pulled:1b")
    assert curated.status == "ok"
    assert [p.chunk_id for p in curated.results] == [p.chunk_id for p in outcome.results]
    assert any("the model that checks results is not on the model server" in n for n in curated.notes)
    assert ollama.chat_requests() == []  # nothing was asked of a model that is not there


def test_one_failed_look_at_the_model_list_does_not_leave_the_search_uncurated(texts, ollama, settings):
    from rag.providers import is_available

    settings.HEALTH_CACHE_SECONDS = 60
    ollama.tags_failures = 1  # the model server was busy for a moment: the process keeps that look
    assert not is_available(settings.CURATION_MODEL, fresh=True)
    ollama.responder = judge
    outcome = search_collections([texts], "variance", curate=True)
    assert not any("Curation was skipped" in n for n in outcome.notes)
    assert [p.curation_score for p in outcome.results] == [10.0, 6.0]
    # A server that answered without the model is not asked again for every search.
    listed = len([path for path, _body in ollama.requests if path == "/api/tags"])
    search_collections([texts], "variance", curate=True, curation_model="not-pulled:1b")
    search_collections([texts], "variance", curate=True, curation_model="not-pulled:1b")
    assert len([path for path, _body in ollama.requests if path == "/api/tags"]) == listed


def test_curation_off_asks_no_model(texts, ollama):
    search_collections([texts], "variance", curate=False)
    assert ollama.chat_requests() == []
