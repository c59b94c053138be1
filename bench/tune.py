"""Tune RRF k and the retriever weights on SciFact's *training* queries (never the test queries).

Called by `bench/retrieval.py --tune`. Each training query's five ranked lists are fetched once
from Redis; then coordinate ascent tries each parameter's candidate values in turn, keeping the
best mean of nDCG@10 and R@15 (both are targets), with the spec's constraint that exact match
weighs most.
"""

from __future__ import annotations

import sys
import time

from bench.harness import evaluate
from rag.fusion import weighted_rrf

GRID = {
    "k": [1, 2, 3, 5, 8, 10, 15, 20, 30, 45, 60, 90],
    "vector": [0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5, 3.0],
    "exact": [0.5, 1.0, 2.0, 3.0, 4.0, 6.0],
    "substring": [0.0, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5],
    "all_words": [0.0, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0],
    "any_word": [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0],
}
START = {"k": 60, "vector": 1.0, "exact": 3.0, "substring": 0.5, "all_words": 1.0, "any_word": 1.0}


def _score(corpus, lists: dict, params: dict) -> dict[str, float]:
    weights = {r: w for r, w in params.items() if r != "k"}
    runs = {
        qid: corpus.docs(f.key for f in weighted_rrf(per_query, weights, params["k"]))
        for qid, per_query in lists.items()
    }
    return evaluate(runs, corpus.ds.qrels)


def _objective(score: dict[str, float]) -> float:
    return (score["nDCG@10"] + score["R@15"]) / 2


def _valid(params: dict) -> bool:
    return all(params["exact"] >= w for r, w in params.items() if r not in ("k", "exact"))


def tune(corpus, rounds: int = 3) -> dict:
    started = time.monotonic()
    lists = {qid: corpus.lists(q, qid) for qid, q in corpus.ds.queries.items()}
    fired = {r: sum(1 for per in lists.values() if per.get(r)) / len(lists) for r in GRID if r != "k"}
    print(f"train queries: {len(lists)}; share with hits per retriever: {fired}", file=sys.stderr)
    best = dict(START)
    best_score = _score(corpus, lists, best)
    print(f"start {best} -> {best_score}", file=sys.stderr)
    for round_no in range(rounds):
        changed = False
        for name, values in GRID.items():
            for value in values:
                trial = {**best, name: value}
                if value == best[name] or not _valid(trial):
                    continue
                score = _score(corpus, lists, trial)
                if _objective(score) > _objective(best_score):
                    best, best_score, changed = trial, score, True
        print(f"round {round_no + 1}: {best} -> {best_score}", file=sys.stderr)
        if not changed:
            break
    print(f"tuned on {len(lists)} SciFact training queries in {time.monotonic() - started:.0f}s")
    print(f"best: {best}")
    print(f"train scores: {best_score}")
    for name in ("vector", "any_word"):
        solo = {r: (1.0 if r == name else 0.0) for r in GRID if r != "k"}
        print(f"train {name} alone: {_score(corpus, lists, {**solo, 'k': 60})}")
    return best
