"""Tune RRF k and the retriever weights on *training* queries (never the test queries).

Called by `bench/retrieval.py --tune`, on two kinds of query: SciFact's 809 training claims (long
statements) and 1,500 SQuAD questions outside its test sample (short questions, where exact
phrase and all-words matches fire far more often). Each training query's five ranked lists are
fetched once from Redis; then coordinate ascent tries each parameter's candidate values in turn,
maximising the mean over all training queries of nDCG@10 and R@15 (both are targets), with the
spec's constraint that exact match weighs most.

A parameter leaves its current value only when the gain is larger than one standard error of the
per-query differences (paired). Without that rule the tuner followed noise: a gain of 0.002 on
809 English queries moved the substring weight from 0.5 to 0.25, a weight no English set can
judge (substring matching is for compound words and rich inflection); on the Finnish test set,
seen after the fact, that cost 0.02 nDCG@10 (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import math
import sys
import time

from bench.harness import evaluate, ndcg_at, recall_at
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


def _runs(corpus, lists: dict, params: dict) -> dict[str, list[str]]:
    """Each training query's fused document ranking under `params`."""
    weights = {r: w for r, w in params.items() if r != "k"}
    return {qid: corpus.docs(f.key for f in weighted_rrf(per, weights, params["k"])) for qid, per in lists.items()}


def _score(corpus, lists: dict, params: dict) -> dict[str, float]:
    return {k: round(v, 4) for k, v in evaluate(_runs(corpus, lists, params), corpus.ds.qrels).items()}


def _per_query(sets: list, params: dict) -> list[float]:
    """Each training query's objective (the mean of its nDCG@10 and R@15), over all sets."""
    out = []
    for corpus, lists in sets:
        runs = _runs(corpus, lists, params)
        out += [
            (ndcg_at(runs.get(qid, []), rel) + recall_at(runs.get(qid, []), rel)) / 2
            for qid, rel in corpus.ds.qrels.items()
        ]
    return out


def _clear_gain(trial: list[float], best: list[float]) -> bool:
    """Is the mean per-query gain larger than its standard error?"""
    diffs = [t - b for t, b in zip(trial, best, strict=True)]
    mean = sum(diffs) / len(diffs)
    var = sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1)
    return mean > math.sqrt(var / len(diffs))


def _valid(params: dict) -> bool:
    return all(params["exact"] >= w for r, w in params.items() if r not in ("k", "exact"))


def tune(corpora: list, rounds: int = 3) -> dict:
    started = time.monotonic()
    sets = [(corpus, {qid: corpus.lists(q, qid) for qid, q in corpus.ds.queries.items()}) for corpus in corpora]
    for corpus, lists in sets:
        fired = {r: round(sum(1 for per in lists.values() if per.get(r)) / len(lists), 3) for r in GRID if r != "k"}
        print(f"{corpus.ds.name} train queries: {len(lists)}; share with hits per retriever: {fired}", file=sys.stderr)

    def scores(params: dict) -> str:
        return "; ".join(f"{c.ds.name} {_score(c, lists, params)}" for c, lists in sets)

    best = dict(START)
    best_per_query = _per_query(sets, best)
    print(f"start {best} -> {scores(best)}", file=sys.stderr)
    for round_no in range(rounds):
        changed = False
        for name, values in GRID.items():
            for value in values:
                trial = {**best, name: value}
                if value == best[name] or not _valid(trial):
                    continue
                per_query = _per_query(sets, trial)
                if _clear_gain(per_query, best_per_query):
                    best, best_per_query, changed = trial, per_query, True
        print(f"round {round_no + 1}: {best} -> {scores(best)}", file=sys.stderr)
        if not changed:
            break
    names = " + ".join(f"{len(lists)} {c.ds.name}" for c, lists in sets)
    print(f"tuned on {names} training queries in {time.monotonic() - started:.0f}s")
    print(f"best: {best}")
    print(f"train scores: {scores(best)}")
    for name in ("vector", "any_word"):
        solo = {r: (1.0 if r == name else 0.0) for r in GRID if r != "k"}
        print(f"train {name} alone: {scores({**solo, 'k': 60})}")
    return best


FOREIGN_GRID = [0.0, 0.1, 0.25, 0.5, 0.75, 1.0]


def tune_foreign(corpora: list) -> float:
    """SEARCH_FOREIGN_VECTOR_WEIGHT on training queries of sets whose language the embedding model
    does not know: each factor scales the vector weight of the current settings. The factor with
    the best mean objective wins over 1.0 (no rule) only by a gain larger than its standard error."""
    from django.conf import settings

    started = time.monotonic()
    sets = [(corpus, {qid: corpus.lists(q, qid) for qid, q in corpus.ds.queries.items()}) for corpus in corpora]
    base = {**settings.SEARCH_WEIGHTS, "k": settings.SEARCH_RRF_K}
    per_factor = {f: _per_query(sets, {**base, "vector": base["vector"] * f}) for f in FOREIGN_GRID}
    print("| factor | " + " | ".join(f"{c.ds.name} nDCG@10 / R@15" for c, _ in sets) + " | mean objective |")
    print("|---" * (len(sets) + 2) + "|")
    for factor in FOREIGN_GRID:
        params = {**base, "vector": base["vector"] * factor}
        cells = [f"{s['nDCG@10']:.3f} / {s['R@15']:.3f}" for s in (_score(c, lists, params) for c, lists in sets)]
        objective = sum(per_factor[factor]) / len(per_factor[factor])
        print(f"| {factor} | " + " | ".join(cells) + f" | {objective:.4f} |")
    best = max(FOREIGN_GRID, key=lambda f: sum(per_factor[f]))
    if best != 1.0 and not _clear_gain(per_factor[best], per_factor[1.0]):
        best = 1.0
    names = " + ".join(f"{len(lists)} {c.ds.name}" for c, lists in sets)
    print(f"\ntuned on {names} training queries in {time.monotonic() - started:.0f}s; best factor: {best}")
    return best
