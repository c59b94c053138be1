"""How often the calibrated similarity floor (rag/floor.py) empties real questions, and nonsense.

    .venv/bin/python bench/floor.py                     # test queries of every set, Markdown table
    .venv/bin/python bench/floor.py --sets scifact      # some sets
    .venv/bin/python bench/floor.py --tune              # SEARCH_FLOOR_Z on training queries

Each set is indexed as bench/retrieval.py does (the ingestion chunker, the local all-MiniLM-L6-v2,
a private Redis Stack). Its queries, and nonsense queries (random-letter words drawn from other
seeds than the floor's probes, plus "zqxwv plorkt"), then go through the search's own retrievers:
- "emptied": what the uncurated search does. No keyword retriever matched and the best passage
  by meaning is below the collection's floor, so the result is "nothing relevant". The test run
  checks these figures with the real `search_collections`, query by query.
- "below floor": the stricter figure. The best passage by meaning is below the floor, whatever
  the words matched: how often a question would be emptied if none of its words were in the
  material. `--tune` picks the largest SEARCH_FLOOR_Z whose "below floor" share of real training
  questions (SciFact train, SQuAD outside its test sample) is at most 1%.
Both are also given for the fixed floor of 0.2 that the calibrated one replaced.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import start_services, stop_services  # noqa: E402

NONSENSE_PER_SET = 300
FIXED = 0.2  # the floor before calibration
TARGET = 0.01  # at most this share of real training questions below the floor
Z_GRID = [x / 4 for x in range(0, 33)]  # 0 .. 8


@dataclass
class Probe:
    """One query's outcome in the retrievers: any keyword hit, and the best similarity by meaning."""

    keyword: bool
    best: float


@dataclass
class Measured:
    name: str
    chunks: int
    probes: list[float]  # the floor's probes' best similarities in this collection
    real: list[Probe]
    nonsense: list[Probe]
    searched: dict[str, float] | None = None  # from search_collections: emptied shares


def floor_at(probes: list[float], z: float, minimum: float) -> float:
    if len(probes) < 2:
        return minimum
    return max(minimum, statistics.fmean(probes) + z * statistics.pstdev(probes))


def shares(m: Measured, floor: float) -> dict[str, float]:
    def below(items: list[Probe]) -> float:
        return sum(1 for p in items if p.best < floor) / max(len(items), 1)

    def emptied(items: list[Probe]) -> float:
        return sum(1 for p in items if not p.keyword and p.best < floor) / max(len(items), 1)

    return {
        "real below": below(m.real),
        "real emptied": emptied(m.real),
        "nonsense below": below(m.nonsense),
        "nonsense emptied": emptied(m.nonsense),
    }


def nonsense_queries(set_no: int) -> list[str]:
    from rag.floor import PROBE_SEED, nonsense

    seed = 10_000 + set_no  # never the probes' seed
    assert seed != PROBE_SEED
    return ["zqxwv plorkt", *nonsense(NONSENSE_PER_SET - 1, seed)]


def outcomes(corpus, texts: dict[str, str], vectors: dict) -> list[Probe]:
    from kernel.redis_client import get_redis
    from rag import retrievers
    from rag.floor import best_similarity
    from rag.query import parse

    client, out = get_redis(), []
    for qid, text in texts.items():
        target = retrievers.Target(
            corpus.collection.id, corpus.index.name, parse(text, corpus.ds.language), vectors[qid]
        )
        retrievers.run(client, [target], 50)
        keyword = any(hits for r, hits in target.lists.items() if r != retrievers.VECTOR)
        out.append(Probe(keyword, best_similarity(target.lists.get(retrievers.VECTOR, []))))
    return out


def measure(name: str, set_no: int, split: str, search: bool) -> Measured:
    from bench.datasets import EmbeddingCache, minilm_embed_batch
    from bench.retrieval import MODEL, Corpus
    from kernel.redis_client import get_redis
    from rag.floor import probe_best, probe_vectors

    started = time.monotonic()
    corpus = Corpus(name, set_no, split=split)
    noise = nonsense_queries(set_no)
    noise_vectors = EmbeddingCache("nonsense").embed(noise, minilm_embed_batch(), label="nonsense")
    noise_ids = {f"n{i}": text for i, text in enumerate(noise)}
    m = Measured(
        name=name,
        chunks=len(corpus.ds.chunks),
        probes=probe_best(get_redis(), corpus.index.name, probe_vectors(MODEL)),
        real=outcomes(corpus, corpus.ds.queries, corpus.query_vectors),
        nonsense=outcomes(corpus, noise_ids, dict(zip(noise_ids, noise_vectors, strict=True))),
    )
    if search:
        m.searched = searched_shares(corpus, noise)
    corpus.index.drop()
    print(f"  {name} ({split}): {m.chunks} chunks, {len(m.real)} queries, {time.monotonic() - started:.0f}s",
          file=sys.stderr, flush=True)  # fmt: skip
    return m


def searched_shares(corpus, noise: list[str]) -> dict[str, float]:
    """The emptied shares as the real uncurated search gives them (the query embedded live)."""
    from rag.search import search_collections

    def emptied(queries) -> float:
        out = [search_collections([corpus.collection], q, curate=False).nothing_relevant for q in queries]
        return sum(out) / max(len(out), 1)

    return {"real emptied": emptied(corpus.ds.queries.values()), "nonsense emptied": emptied(noise)}


def tune(sets: list[Measured], minimum: float) -> float:
    """The largest z whose pooled share of real training questions below the floor is <= TARGET."""
    print("| z | " + " | ".join(f"{m.name}: real below / nonsense emptied" for m in sets) + " | pooled real below |")
    print("|---" * (len(sets) + 2) + "|")
    best = Z_GRID[0]
    for z in Z_GRID:
        rows = [shares(m, floor_at(m.probes, z, minimum)) for m in sets]
        pooled = sum(r["real below"] * len(m.real) for r, m in zip(rows, sets, strict=True)) / sum(
            len(m.real) for m in sets
        )
        cells = [f"{r['real below']:.2%} / {r['nonsense emptied']:.1%}" for r in rows]
        print(f"| {z} | " + " | ".join(cells) + f" | {pooled:.2%} |", flush=True)
        if pooled <= TARGET:
            best = z
    print(f"\nbest SEARCH_FLOOR_Z: {best} (largest z with at most {TARGET:.0%} of real training questions below)")
    return best


def report(results: list[Measured], minimum: float, z: float) -> None:
    print(f"Calibrated floor: max({minimum}, mean + {z} x std of {len(results[0].probes)} probes' best similarity)\n")
    print("| set | passages | probes' best, mean / std | floor | real questions | real emptied: fixed 0.2 → "
          "calibrated (search) | real below floor: fixed → calibrated | nonsense emptied: fixed → calibrated "
          "(search) | nonsense with a keyword hit |")  # fmt: skip
    print("|---|---:|---|---:|---:|---|---|---|---:|")
    for m in results:
        floor = floor_at(m.probes, z, minimum)
        old, new = shares(m, FIXED), shares(m, floor)
        s = m.searched or {}
        searched = {k: f"{s.get(k, float('nan')):.1%}" for k in ("real emptied", "nonsense emptied")}
        kw = sum(1 for p in m.nonsense if p.keyword) / max(len(m.nonsense), 1)
        print(
            f"| {m.name} | {m.chunks} | {statistics.fmean(m.probes):.3f} / {statistics.pstdev(m.probes):.3f} | "
            f"{floor:.3f} | {len(m.real)} | {old['real emptied']:.2%} → {new['real emptied']:.2%} "
            f"({searched['real emptied']}) | {old['real below']:.2%} → {new['real below']:.2%} | "
            f"{old['nonsense emptied']:.1%} → {new['nonsense emptied']:.1%} ({searched['nonsense emptied']}) "
            f"| {kw:.1%} |",
            flush=True,
        )
    real = [p for m in results for p in m.real]
    print(f"\nall sets: {len(real)} real test questions")


def main() -> int:
    from bench.datasets import DATASETS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="", help="comma-separated (default: all; with --tune: scifact,squad): "
                        + ", ".join(DATASETS))  # fmt: skip
    parser.add_argument("--tune", action="store_true", help="tune SEARCH_FLOOR_Z on training queries")
    parser.add_argument("--no-search", action="store_true", help="skip the end-to-end search_collections check")
    args = parser.parse_args()
    server = start_services("benchf")
    try:
        from django.conf import settings

        minimum = settings.SEARCH_MIN_SIMILARITY
        if args.tune:
            names = (args.sets or "scifact,squad").split(",")
            sets = [measure(n, i, "train", False) for i, n in enumerate(names, 1)]
            tune(sets, minimum)
            return 0
        names = (args.sets or ",".join(DATASETS)).split(",")
        results = [measure(n, i, "test", not args.no_search) for i, n in enumerate(names, 1)]
        report(results, minimum, settings.SEARCH_FLOOR_Z)
    finally:
        stop_services(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
