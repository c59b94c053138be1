"""Weighted RRF arithmetic, budget apportionment, and a search over several collections."""

from __future__ import annotations

import pytest

from rag.fusion import budgets, hamilton, weighted_rrf
from rag.query import parse
from rag.search import search_collections
from tests.fixtures_search import index_texts


def test_weighted_rrf_adds_weight_over_k_plus_rank():
    lists = {"exact": ["a"], "vector": ["b", "a", "c"], "any_word": ["c", "a"]}
    weights = {"exact": 3.0, "vector": 1.0, "any_word": 0.5}
    fused = {f.key: f for f in weighted_rrf(lists, weights, k=10)}
    assert fused["a"].score == pytest.approx(3 / 11 + 1 / 12 + 0.5 / 12)
    assert fused["b"].score == pytest.approx(1 / 11)
    assert fused["c"].score == pytest.approx(1 / 13 + 0.5 / 11)
    assert fused["a"].ranks == {"exact": 1, "vector": 2, "any_word": 2}
    assert [f.key for f in weighted_rrf(lists, weights, k=10)] == ["a", "c", "b"]


def test_a_zero_weight_retriever_adds_nothing_and_ties_keep_first_seen_order():
    fused = weighted_rrf({"vector": ["x", "y"], "substring": ["z"]}, {"vector": 1.0, "substring": 0.0}, k=60)
    assert [f.key for f in fused] == ["x", "y"]
    tied = weighted_rrf({"a": ["p"], "b": ["q"]}, {"a": 1.0, "b": 1.0}, k=60)
    assert [f.key for f in tied] == ["p", "q"]


def test_exact_match_outranks_a_chunk_first_in_two_weaker_lists_with_default_weights(settings):
    # The tuned defaults (currechat/settings/); if they change, work the example below out again.
    assert settings.SEARCH_RRF_K == 2.0
    assert settings.SEARCH_WEIGHTS == {"vector": 1.0, "exact": 3.0, "substring": 0.5, "all_words": 1.0, "any_word": 1.0}
    lists = {"exact": ["e"], "vector": ["v", "s", "e"], "any_word": ["v", "e"], "substring": ["s", "v"]}
    fused = weighted_rrf(lists, settings.SEARCH_WEIGHTS, settings.SEARCH_RRF_K)
    # Worked by hand, score = sum of weight / (2 + rank):
    #   e: exact 3/3 + vector 1/5 + any_word 1/4 = 1.45
    #   v: vector 1/3 + any_word 1/3 + substring 0.5/4 = 0.7917 (first in two lists, still second)
    #   s: vector 1/4 + substring 0.5/3 = 0.4167
    assert [f.key for f in fused] == ["e", "v", "s"]
    assert [round(f.score, 4) for f in fused] == [1.45, 0.7917, 0.4167]


def test_hamilton_gives_remaining_seats_to_the_largest_remainders():
    assert hamilton({1: 5.0, 2: 3.0, 3: 2.0}, 15) == {1: 8, 2: 4, 3: 3}  # quotas 7.5, 4.5, 3.0
    assert hamilton({1: 1.0, 2: 1.0, 3: 1.0}, 4) == {1: 2, 2: 1, 3: 1}
    assert hamilton({1: 0.0, 2: 0.0}, 5) == {1: 0, 2: 0}


def test_budgets_pass_seats_a_collection_cannot_fill_to_the_others():
    assert budgets({1: 1.0, 2: 1.0}, {1: 3, 2: 50}, 15) == {1: 3, 2: 12}
    assert budgets({1: 1.0, 2: 1.0}, {1: 3, 2: 4}, 15) == {1: 3, 2: 4}
    assert budgets({1: 2.0, 2: 1.0, 3: 0.0}, {1: 20, 2: 20, 3: 20}, 9) == {1: 6, 2: 3, 3: 0}


def test_clauses_never_use_a_literal_and_word():
    parsed = parse("mean AND median OR mode", "german")  # not stop words in German
    # Space is RediSearch's intersection, `|` its union.
    assert parsed.all_words() == r"(\+mean|mean) (\+and|and) (\+median|median) (\+or|or) (\+mod|mod)"
    assert parsed.any_word() == r"((\+mean|mean)|(\+and|and)|(\+median|median)|(\+or|or)|(\+mod|mod))"
    assert " AND " not in (parsed.exact() or "")


def test_search_over_two_collections_splits_the_budget_and_fuses_by_score(make_collection):
    stats = make_collection("Statistics")
    physics = make_collection("Physics")
    index_texts(stats, [f"variance of sample {i} and the mean" for i in range(8)])
    index_texts(physics, [f"variance of the measured velocity {i}" for i in range(8)])
    outcome = search_collections([stats, physics], "variance", limit=6, curate=False)
    per_collection = {c.id: sum(1 for p in outcome.results if p.collection_id == c.id) for c in (stats, physics)}
    assert sum(per_collection.values()) == 6
    assert per_collection[stats.id] == per_collection[physics.id] == 3  # equal evidence, equal budget
    scores = [p.score for p in outcome.results]
    assert scores == sorted(scores, reverse=True)


def test_a_collection_with_stronger_evidence_gets_a_larger_budget(make_collection):
    strong = make_collection("Strong")
    weak = make_collection("Weak")
    index_texts(strong, [f"hypothesis test power and significance level {i}" for i in range(10)])
    index_texts(weak, [f"unrelated words about cooking pasta {i}" for i in range(10)])
    outcome = search_collections([strong, weak], "hypothesis test power", limit=10, curate=False)
    counts = {c.id: sum(1 for p in outcome.results if p.collection_id == c.id) for c in (strong, weak)}
    assert counts[strong.id] > counts[weak.id]
    assert all(p.collection_id == strong.id for p in outcome.results[: counts[strong.id]])


def test_further_hits_come_after_the_split_and_leave_it_as_it_was(make_collection):
    strong = make_collection("Strong")
    weak = make_collection("Weak")
    index_texts(strong, [f"hypothesis test power and significance level {i}" for i in range(10)])
    index_texts(weak, [f"hypothesis about cooking pasta {i}" for i in range(10)])
    split = search_collections([strong, weak], "hypothesis test power", limit=6, curate=False).results
    deeper = search_collections([strong, weak], "hypothesis test power", limit=6, further=4, curate=False).results
    assert [p.chunk_id for p in deeper[:6]] == [p.chunk_id for p in split], "the budget's split is kept"
    assert len(deeper) == 10 and not {p.chunk_id for p in deeper[6:]} & {p.chunk_id for p in split}
    further = [p.score for p in deeper[6:]]
    assert further == sorted(further, reverse=True)
