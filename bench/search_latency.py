"""Search latency at scale: the full hybrid search vs. one raw KNN query vs. a per-query BM25 index.

    .venv/bin/python bench/search_latency.py [--chunks 100000] [--queries 200] [--load]

Builds one collection of synthetic chunks in a private Redis Stack through CollectionIndex: each
chunk is 3-6 random sentences from SQuAD v1.1 dev paragraphs (real vocabulary and term
frequencies) with a random unit vector (384 dimensions, as MiniLM). Queries are SQuAD questions,
embedded by the real MiniLM. Measured in the same run, interleaved query by query:
- search: `search_collections` with curation off (5 retrievers, fusion, fetch of 15 passages),
  reported without the query embedding (the raw KNN below also starts from a vector) and with it;
- raw KNN: one FT.SEARCH KNN 15 returning the same fields, from the same query vector;
- the query embedding inside the search against the model's own `encode` of the same query, on
  the web process's threads (EMBED_QUERY_THREADS) and on torch's default (one per core);
- in-memory BM25 rebuilt per query (rank_bm25 over whitespace tokens, as Open WebUI's hybrid
  search does with langchain's BM25Retriever.from_texts), on a few queries since each takes seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import pct, start_services, stop_services  # noqa: E402

SQUAD = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "beir" / "squad-v1.1-dev"
DIMS = 384
FILE_SIZE = 1000  # chunks per synthetic file (one replace_file transaction each)


def sentences() -> list[str]:
    out = []
    with (SQUAD / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            out += [s for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if len(s) > 20]
    return out


def questions(n: int) -> list[str]:
    with (SQUAD / "queries.jsonl").open(encoding="utf-8") as fh:
        all_q = [json.loads(line)["text"] for line in fh]
    return random.Random(11).sample(all_q, n)


def build(n_chunks: int):
    """Index `n_chunks` synthetic chunks; returns the collection and the chunk texts."""
    import numpy as np

    from collections_app.models import Collection
    from rag.index import CollectionIndex, IndexedChunk

    rng, pool = random.Random(5), sentences()
    vectors = np.random.default_rng(5).standard_normal((n_chunks, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = CollectionIndex(1, "english", DIMS)
    texts: list[str] = []
    started = time.monotonic()
    for file_id in range(0, n_chunks, FILE_SIZE):
        batch = []
        for position in range(min(FILE_SIZE, n_chunks - file_id)):
            text = " ".join(rng.sample(pool, rng.randint(3, 6)))
            texts.append(text)
            batch.append(
                IndexedChunk(file_id, position, text, f"file-{file_id}.md", None, None, "", vectors[file_id + position])
            )
        index.replace_file(file_id, batch)
    _wait_indexed(index)
    print(f"indexed {n_chunks} chunks in {time.monotonic() - started:.0f}s", file=sys.stderr)
    return Collection(id=1, name="scale", language="english", embedding_model="local:all-MiniLM-L6-v2"), index, texts


def _wait_indexed(index) -> None:
    while True:
        info = index.client.ft(index.name).info()
        if float(info.get("percent_indexed", 1)) >= 1 and not int(info.get("indexing", 0)):
            return
        time.sleep(0.5)


def raw_knn(index, vector) -> float:
    import numpy as np

    from rag.index import RETURN_FIELDS

    blob = np.asarray(vector, dtype=np.float32).tobytes()
    start = time.perf_counter()
    index.client.execute_command(
        "FT.SEARCH", index.name, "*=>[KNN 15 @embedding $vec AS d]", "PARAMS", 2, "vec", blob,
        "RETURN", len(RETURN_FIELDS), *RETURN_FIELDS, "SORTBY", "d", "LIMIT", 0, 15, "DIALECT", 2,
    )  # fmt: skip
    return (time.perf_counter() - start) * 1000


def bm25_rebuilt(texts: list[str], query: str) -> float:
    from rank_bm25 import BM25Okapi

    start = time.perf_counter()
    bm25 = BM25Okapi([t.split() for t in texts])
    scores = bm25.get_scores(query.split())
    sorted(range(len(texts)), key=lambda i: -scores[i])[:15]
    return (time.perf_counter() - start) * 1000


def raw_encode(model, query: str, threads: int) -> float:
    """One query through the model's own `encode` on `threads` torch threads (ms)."""
    import torch

    torch.set_num_threads(threads)
    start = time.perf_counter()
    model.encode([query], normalize_embeddings=True, show_progress_bar=False)
    return (time.perf_counter() - start) * 1000


def measure(collection, index, texts, queries: list[str], bm25_queries: int) -> dict[str, list[float]]:
    import torch

    from rag.providers import get_embedding_model, threads
    from rag.search import search_collections

    embedder = get_embedding_model(collection.embedding_model)
    model = embedder._model()  # type: ignore[attr-defined]  # the local model's SentenceTransformer
    web, default = threads.for_queries(), threads.cores()
    for q in queries[:10]:  # warm-up: model load, connection pool, Redis caches
        search_collections([collection], q, curate=False)
        raw_knn(index, embedder.embed_query(q))
        raw_encode(model, q, default)
        torch.set_num_threads(web)
    samples: dict[str, list[float]] = {"search": [], "search+embed": [], "raw KNN": [], "embed": [], "stages": []}
    raw = {f"raw encode, {web} thread(s) (as a web process)": [], f"raw encode, torch's default {default} threads": []}
    per_stage: dict[str, list[float]] = {}
    for q in queries[10:]:  # interleaved query by query: the same load for each measurement
        for values, count in zip(raw.values(), (web, default), strict=True):
            values.append(raw_encode(model, q, count))
        torch.set_num_threads(web)
        vector = embedder.embed_query(q)
        samples["raw KNN"].append(raw_knn(index, vector))
        timings = search_collections([collection], q, curate=False).timings_ms
        samples["search"].append(timings["total"] - timings["embed"])
        samples["search+embed"].append(timings["total"])
        samples["embed"].append(timings["embed"])
        for stage, ms in timings.items():
            per_stage.setdefault(stage, []).append(ms)
    samples["BM25 rebuilt per query"] = [bm25_rebuilt(texts, q) for q in queries[10 : 10 + bm25_queries]]
    samples.pop("stages")
    samples.update(raw)
    print("| stage | p50 ms | p95 ms |\n|---|---|---|")
    for stage, values in per_stage.items():
        print(f"| {stage} | {pct(values, 50):.2f} | {pct(values, 95):.2f} |")
    first_raw = next(iter(raw.values()))
    ratio50, ratio95 = pct(samples["embed"], 50) / pct(first_raw, 50), pct(samples["embed"], 95) / pct(first_raw, 95)
    print(f"query embedding in the search / raw encode on the same threads: p50 {ratio50:.2f}x, p95 {ratio95:.2f}x")
    return samples


def per_retriever(collection, index, queries: list[str]) -> dict[str, list[float]]:
    """Each retriever's FT.SEARCH alone (not pipelined), to show where a search's time goes."""
    from rag import retrievers
    from rag.providers import get_embedding_model
    from rag.query import parse

    embedder = get_embedding_model(collection.embedding_model)
    times: dict[str, list[float]] = {}
    for q in queries:
        target = retrievers.Target(1, index.name, parse(q, "english"), embedder.embed_query(q))
        for name, command in retrievers.commands_for(target, 50).items():
            start = time.perf_counter()
            index.client.execute_command(*command)
            times.setdefault(f"  {name} alone", []).append((time.perf_counter() - start) * 1000)
    return times


def report(samples: dict[str, list[float]], n_chunks: int) -> None:
    knn50, knn95 = pct(samples["raw KNN"], 50), pct(samples["raw KNN"], 95)
    print(
        f"{n_chunks} chunks, {len(samples['search'])} queries (BM25 rebuilt: {len(samples['BM25 rebuilt per query'])})"
    )
    print("| measurement | p50 ms | p95 ms | p50 ratio to raw KNN | p95 ratio to raw KNN |")
    print("|---|---|---|---|---|")
    for name, values in samples.items():
        p50, p95 = pct(values, 50), pct(values, 95)
        print(f"| {name} | {p50:.2f} | {p95:.2f} | {p50 / knn50:.2f}x | {p95 / knn95:.2f}x |")
    speedup50 = pct(samples["BM25 rebuilt per query"], 50) / pct(samples["search"], 50)
    speedup50e = pct(samples["BM25 rebuilt per query"], 50) / pct(samples["search+embed"], 50)
    print(f"search is {speedup50:.0f}x faster than BM25 rebuilt per query at p50 ({speedup50e:.0f}x with embedding)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--bm25-queries", type=int, default=5)
    parser.add_argument("--load", action="store_true", help="with a CPU hog on every core meanwhile")
    args = parser.parse_args()
    server = start_services("benchl")
    from rag.providers import threads

    threads.use(threads.for_queries())  # as a web process does at start (currechat/warmup.py)
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(threads.cores() if args.load else 0)
    ]
    try:
        collection, index, texts = build(args.chunks)
        queries = questions(args.queries + 10)
        samples = measure(collection, index, texts, queries, args.bm25_queries)
        samples.update(per_retriever(collection, index, queries[10:]))
        report(samples, args.chunks)
    finally:
        for hog in hogs:
            hog.kill()
        stop_services(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
