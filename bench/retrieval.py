"""Retrieval quality of CurreChat's search against single retrievers and Open WebUI's fusion.

    .venv/bin/python bench/retrieval.py                 # all sets, prints Markdown tables
    .venv/bin/python bench/retrieval.py --sets scifact  # one set
    .venv/bin/python bench/retrieval.py --tune          # tune RRF k and weights on training queries
    .venv/bin/python bench/retrieval.py --keywords      # short keyword queries (as a chat model writes)
    .venv/bin/python bench/retrieval.py --tune-foreign  # the foreign-language vector weight, training queries
    .venv/bin/python bench/retrieval.py --token-limit   # passages cut by characters vs. to MiniLM's 256 tokens

Each document is ingested as a Markdown upload would be (bench/datasets.py: the pipeline's
normaliser, chunker at 1000/200 and embedding input), embedded with the local all-MiniLM-L6-v2
(cached under var/bench-cache/) and written into a private Redis Stack through CollectionIndex.
Then, per query, in the same run:
- CurreChat: the real `search_collections` (curation off), and the same without the language rule
  ("no rule": the vector list keeps its full weight where MiniLM does not know the language);
- vector only: the same index's KNN; BM25 only: RediSearch BM25STD over the stemmed OR of the
  query words without stop words (the "any word" retriever alone);
- Open-WebUI-style: rank_bm25 over whitespace tokens (langchain's BM25Retriever default) of each
  chunk's heading path + text, plus the same vectors, fused by RRF with weights 0.5/0.5 and c=60
  (langchain's EnsembleRetriever).
Every method's chunk ranking becomes a document ranking by each document's best chunk.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import dedupe, evaluate, start_services, stop_services  # noqa: E402

MODEL = "local:all-MiniLM-L6-v2"
DEPTH = 50  # hits per retriever, for the baselines as for the search (SEARCH_RETRIEVER_DEPTH)
RESULT_CHUNKS = 60  # chunks asked from each method; their documents, deduplicated, are scored


class Corpus:
    """One data set indexed in Redis, plus what the in-memory baselines need."""

    def __init__(self, name: str, collection_id: int, split: str = "test", keywords: bool = False, fits=None):
        import numpy as np

        from bench.datasets import EmbeddingCache, keyword_queries, load, minilm_embed_batch
        from collections_app.models import Collection
        from rag.index import CollectionIndex, IndexedChunk

        self.ds = load(name, split, fits=fits)
        if keywords:
            self.ds.queries = keyword_queries(self.ds)
        cache = EmbeddingCache(name)
        embed = minilm_embed_batch()
        self.vectors = cache.embed([c.embed_text for c in self.ds.chunks], embed, label=f"{name} chunks")
        self.query_vectors = dict(
            zip(
                self.ds.queries,
                cache.embed(list(self.ds.queries.values()), embed, label=f"{name} queries"),
                strict=True,
            )
        )
        self.collection = Collection(id=collection_id, name=name, language=self.ds.language, embedding_model=MODEL)
        index = CollectionIndex(collection_id, self.ds.language, 384)
        self.key_doc: dict[str, str] = {}
        by_doc: dict[str, list[IndexedChunk]] = {}
        file_ids = {doc_id: i for i, doc_id in enumerate(self.ds.docs)}
        for chunk, vector in zip(self.ds.chunks, self.vectors, strict=True):
            fid = file_ids[chunk.doc_id]
            by_doc.setdefault(chunk.doc_id, []).append(
                IndexedChunk(fid, chunk.position, chunk.text, chunk.doc_id, None, None, chunk.heading, vector)
            )
            self.key_doc[index.key(fid, chunk.position)] = chunk.doc_id
        for doc_id, chunks in by_doc.items():
            index.replace_file(file_ids[doc_id], chunks)
        self.index = index
        self.chunk_keys = [index.key(file_ids[c.doc_id], c.position) for c in self.ds.chunks]
        self.matrix = np.asarray(self.vectors, dtype=np.float32)

    def docs(self, keys) -> list[str]:
        return dedupe(self.key_doc[k] for k in keys if k in self.key_doc)

    def lists(self, query: str, qid: str, enabled=None) -> dict[str, list[str]]:
        """Each retriever's ranked chunk keys for one query (the search's own retrievers)."""
        from kernel.redis_client import get_redis
        from rag import retrievers
        from rag.query import parse

        target = retrievers.Target(
            self.collection.id, self.index.name, parse(query, self.ds.language), self.query_vectors[qid]
        )
        retrievers.run(get_redis(), [target], DEPTH, enabled or retrievers.RETRIEVERS)
        if target.errors:
            print(f"  retriever error for {query!r}: {target.errors}", file=sys.stderr)
        return {name: [h.key for h in hits] for name, hits in target.lists.items()}


def open_webui_ranking(corpus: Corpus, bm25, query: str, qid: str) -> list[str]:
    import numpy as np

    from rag.fusion import weighted_rrf

    sims = corpus.matrix @ np.asarray(corpus.query_vectors[qid], dtype=np.float32)
    by_vector = [corpus.chunk_keys[i] for i in np.argsort(-sims)[:DEPTH]]
    scores = bm25.get_scores(query.split())
    by_bm25 = [corpus.chunk_keys[i] for i in np.argsort(-scores)[:DEPTH] if scores[i] > 0]
    fused = weighted_rrf({"bm25": by_bm25, "vector": by_vector}, {"bm25": 0.5, "vector": 0.5}, 60)
    return corpus.docs(f.key for f in fused)


def run_set(name: str, collection_id: int, keywords: bool = False) -> dict[str, dict[str, float]]:
    from rank_bm25 import BM25Okapi

    from rag.retrievers import ANY_WORD, VECTOR
    from rag.search import search_collections

    started = time.monotonic()
    corpus = Corpus(name, collection_id, keywords=keywords)
    bm25 = BM25Okapi([c.embed_text.split() for c in corpus.ds.chunks])  # heading + text: generous
    runs: dict[str, dict[str, list[str]]] = {m: {} for m in METHODS}
    for qid, query in corpus.ds.queries.items():
        outcome = search_collections([corpus.collection], query, limit=RESULT_CHUNKS, curate=False)
        runs["CurreChat"][qid] = corpus.docs(p.chunk_id for p in outcome.results)
        outcome = search_collections(
            [corpus.collection], query, limit=RESULT_CHUNKS, curate=False, foreign_vector_weight=1.0
        )
        runs["no rule"][qid] = corpus.docs(p.chunk_id for p in outcome.results)
        lists = corpus.lists(query, qid, (VECTOR, ANY_WORD))
        runs["vector"][qid] = corpus.docs(lists.get(VECTOR, []))
        runs["BM25"][qid] = corpus.docs(lists.get(ANY_WORD, []))
        runs["open-webui"][qid] = open_webui_ranking(corpus, bm25, query, qid)
    scores = {method: evaluate(run, corpus.ds.qrels) for method, run in runs.items()}
    print(
        f"  {name}: {len(corpus.ds.docs)} docs, {len(corpus.ds.chunks)} chunks, {len(corpus.ds.queries)} queries, "
        f"{time.monotonic() - started:.0f}s",
        file=sys.stderr,
    )
    return scores


METHODS = ("vector", "BM25", "open-webui", "no rule", "CurreChat")


def run_token_limit(name: str, collection_id: int, queries: int | None) -> dict:
    """Today's passages (characters only) against passages cut to fit MiniLM's token limit, in
    one run: the share of today's passages longer than the model reads, and retrieval on both."""
    from rag.providers.limits import limit_for
    from rag.retrievers import VECTOR
    from rag.search import search_collections

    started = time.monotonic()
    limit = limit_for(MODEL)
    row: dict = {}
    for label, fits, cid in (("before", None, collection_id), ("after", limit.fits, collection_id + 100)):
        corpus = Corpus(name, cid, fits=fits)
        qrels = corpus.ds.qrels
        if queries and len(qrels) > queries:  # a bounded run: the first queries by id
            qrels = {q: qrels[q] for q in sorted(qrels)[:queries]}
        over = sum(1 for c in corpus.ds.chunks if not limit.fits(c.embed_text))
        runs: dict[str, dict[str, list[str]]] = {"vector": {}, "CurreChat": {}}
        for qid in qrels:
            query = corpus.ds.queries[qid]
            outcome = search_collections([corpus.collection], query, limit=RESULT_CHUNKS, curate=False)
            runs["CurreChat"][qid] = corpus.docs(p.chunk_id for p in outcome.results)
            runs["vector"][qid] = corpus.docs(corpus.lists(query, qid, (VECTOR,)).get(VECTOR, []))
        row[label] = {
            "chunks": len(corpus.ds.chunks),
            "over": over,
            "queries": len(qrels),
            **{m: evaluate(run, qrels) for m, run in runs.items()},
        }
        corpus.index.drop()
    row["language"] = corpus.ds.language
    print(f"  {name}: {time.monotonic() - started:.0f}s", file=sys.stderr)
    return row


def truncation_shares(names: list[str]) -> None:
    """Per set: today's passages (characters only) whose embedding input MiniLM would cut, and how
    many passages the token-aware chunker makes instead. Chunking and counting only, no embedding."""
    from bench.datasets import load
    from rag.providers.limits import limit_for

    limit = limit_for(MODEL)
    print("| set | language | passages today | over 256 tokens | share | passages fitted | "
          "tokens today, median / max |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---|")
    for name in names:
        today = load(name)
        counts = sorted(limit.count(c.embed_text) for c in today.chunks)
        over = sum(1 for n in counts if n > limit.tokens)
        fitted = load(name, fits=limit.fits)
        assert all(limit.fits(c.embed_text) for c in fitted.chunks), name
        print(
            f"| {name} | {today.language} | {len(counts)} | {over} | {over / max(len(counts), 1):.1%} | "
            f"{len(fitted.chunks)} | {counts[len(counts) // 2]} / {counts[-1]} |",
            flush=True,
        )


def print_token_limit_table(results: dict[str, dict], header: bool = True) -> None:
    if header:
        print("| set | language | queries | passages today / fitted | today's over 256 tokens | "
              "vector before / after | CurreChat before / after |")  # fmt: skip
        print("|---|---|---:|---|---:|---|---|")
    for name, row in results.items():
        b, a = row["before"], row["after"]

        def pair(method: str, b=b, a=a) -> str:
            return " → ".join(f"{r[method]['nDCG@10']:.3f} / {r[method]['R@15']:.3f}" for r in (b, a))

        print(
            f"| {name} | {row['language']} | {b['queries']} | {b['chunks']} / {a['chunks']} | "
            f"{b['over'] / max(b['chunks'], 1):.1%} | {pair('vector')} | {pair('CurreChat')} |",
            flush=True,
        )


def print_table(results: dict[str, dict[str, dict[str, float]]]) -> None:
    methods = list(METHODS)
    header = "| set | " + " | ".join(f"{m} nDCG@10 / R@15 / MRR@10" for m in methods) + " |"
    print(header)
    print("|" + "---|" * (len(methods) + 1))
    for name, scores in results.items():
        cells = [" / ".join(f"{scores[m][k]:.3f}" for k in ("nDCG@10", "R@15", "MRR@10")) for m in methods]
        best_single = max(scores["vector"]["nDCG@10"], scores["BM25"]["nDCG@10"])
        mark = "" if scores["CurreChat"]["nDCG@10"] > best_single else " (not above best single)"
        print(f"| {name} | " + " | ".join(cells) + mark + " |")


def main() -> int:
    from bench.datasets import DATASETS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(DATASETS), help="comma-separated: " + ", ".join(DATASETS))
    parser.add_argument("--tune", action="store_true", help="tune k and weights on SciFact and SQuAD training queries")
    parser.add_argument(
        "--keywords",
        action="store_true",
        help="search with each query's 4 rarest content words (the short searches a chat model writes)",
    )
    parser.add_argument(
        "--tune-foreign",
        action="store_true",
        help="tune SEARCH_FOREIGN_VECTOR_WEIGHT on the training queries of the sets MiniLM does not know",
    )
    parser.add_argument(
        "--token-limit",
        action="store_true",
        help="passages cut by characters (today) vs. cut to fit MiniLM's token limit, same run",
    )
    parser.add_argument("--truncation", action="store_true", help="only the share of passages over MiniLM's limit")
    parser.add_argument("--queries", type=int, default=None, help="with --token-limit: at most this many queries a set")
    args = parser.parse_args()
    server = start_services("benchq")
    if args.truncation:
        try:
            truncation_shares(args.sets.split(","))
        finally:
            stop_services(server)
        return 0
    try:
        if args.tune:
            from bench.tune import tune

            tune([Corpus("scifact", 1, split="train"), Corpus("squad", 2, split="train")])
            return 0
        if args.tune_foreign:
            from bench.datasets import FOREIGN_TO_MINILM
            from bench.tune import tune_foreign

            tune_foreign([Corpus(name, i, split="train") for i, name in enumerate(FOREIGN_TO_MINILM, start=1)])
            return 0
        if args.token_limit:
            rows = {}
            for i, name in enumerate(args.sets.split(","), 1):
                rows[name] = run_token_limit(name, i, args.queries)
                print_token_limit_table({name: rows[name]}, header=i == 1)  # each set as it ends
            return 0
        results = {}
        for i, name in enumerate(args.sets.split(","), start=1):
            results[name] = run_set(name, i, args.keywords)
        print_table(results)
    finally:
        stop_services(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
