"""Is the answer in what the chat model reads? Today's passages vs the section assembly vs Open WebUI.

    .venv/bin/python bench/context.py                       # test questions, prints a Markdown table
    .venv/bin/python bench/context.py --split train --grid  # tune the assembly settings (training questions)
    .venv/bin/python bench/context.py --questions 100 --sets squad --queries keywords

For TyDi Finnish and English and SQuAD (../shared/data/beir), each question's answer strings are
looked for (normalised as indexed text is, case-folded, whitespace collapsed) in the text a chat
model would receive from one search, at results budgets of 1,500, 3,000 and 6,000 tokens
(chat/budget's 3 characters a token and 24 tokens a passage), in the same run, for two kinds of
search: the whole question, and its 4 rarest content words (`--queries`; bench/datasets.keywords_of,
a stand-in for the short searches a chat model writes). Methods:
- today: the search's first CHAT_SEARCH_LIMIT (15) passages (curation off) in rank order, kept
  while they fit (chat/turn/tools before the section assembly);
- assembly: the search's hits as deep as chat/turn/tools asks without curation (CHAT_SEARCH_CANDIDATES)
  through chat/turn/tools.context_for, exactly as a turn runs it (rag/context.assemble);
- open-webui: rank_bm25 over whitespace tokens + the same MiniLM vectors, RRF 0.5/0.5 with c=60
  (langchain's EnsembleRetriever), its top chunks kept while they fit.
The documents are uploaded as articles: a data set's paragraphs with the same title become one
Markdown file (`# title`, then the paragraphs in order), chunked by the ingestion chunker at
1000/200 and embedded with all-MiniLM-L6-v2 (cached under var/bench-cache/). Questions are split
into training and test halves by a fixed shuffle; the default sample keeps a run to a few minutes
on a shared 2-core machine. SQuAD uses a fixed sample of its articles to keep embedding short.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import start_services, stop_services  # noqa: E402

MODEL = "local:all-MiniLM-L6-v2"
BUDGETS = (1500, 3000, 6000)
SETS = ("tydiqa-fi", "tydiqa-en", "squad")
SQUAD_ARTICLES = 10
METHODS = ("today", "assembly", "open-webui")


@dataclass
class Corpus:
    name: str
    language: str
    questions: dict[str, str]
    answers: dict[str, list[str]]
    keys: list[str]  # chunk keys in corpus order
    texts: list[str]
    matrix: object  # chunk vectors
    collection: object


def _normal(text: str) -> str:
    """Text as compared: the ingestion's normaliser (quotation marks, NFC...: the answer strings are
    raw, the indexed text is not), then case-folded with whitespace collapsed."""
    from rag.text import normalize_text

    return " ".join(normalize_text(text).casefold().split())


def build(name: str, collection_id: int, split: str, questions: int) -> Corpus:
    """Index the set's articles in Redis; the questions of `split` (a fixed sample of `questions`)."""
    import numpy as np

    from bench.datasets import DATASETS, EmbeddingCache, _read_jsonl, _splitter, minilm_embed_batch
    from collections_app.models import Collection
    from rag.index import CollectionIndex, IndexedChunk

    folder, language, _ = DATASETS[name]
    paragraphs = _read_jsonl(folder / "corpus.jsonl")
    titles = list(dict.fromkeys(p["title"] for p in paragraphs))
    if name == "squad":
        titles = sorted(random.Random(5).sample(titles, SQUAD_ARTICLES), key=titles.index)
    chosen = set(titles)
    articles: dict[str, list[str]] = {}
    for p in paragraphs:
        if p["title"] in chosen:
            articles.setdefault(p["title"], []).append(p["text"].strip())
    split_text = _splitter()
    index = CollectionIndex(collection_id, language, 384)
    cache = EmbeddingCache(name)
    embed = minilm_embed_batch()
    files = []
    for file_id, (title, body) in enumerate(articles.items(), start=1):
        pieces = split_text(f"# {title.replace('_', ' ')}\n\n" + "\n\n".join(body))
        files.append((file_id, title, pieces))
    flat = [(fid, title, pos, piece) for fid, title, pieces in files for pos, piece in enumerate(pieces)]
    vectors = cache.embed([p[2] for *_, p in flat], embed, label=f"{name} chunks")
    by_file: dict[int, list] = {}
    for (fid, title, pos, (text, heading, _)), vector in zip(flat, vectors, strict=True):
        by_file.setdefault(fid, []).append(IndexedChunk(fid, pos, text, title, None, None, heading, vector))
    for fid, chunks in by_file.items():
        index.replace_file(fid, chunks)
    # Questions written on the chosen articles' paragraphs, split in halves by a fixed shuffle.
    in_corpus = {p["_id"] for p in paragraphs if p["title"] in chosen}
    qrels = {}
    for line in (folder / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, _ = line.split("\t")
        qrels[qid] = did
    rows = [q for q in _read_jsonl(folder / "queries.jsonl") if qrels.get(q["_id"]) in in_corpus]
    rows = [q for q in rows if q.get("metadata", {}).get("answers")]
    random.Random(21).shuffle(rows)
    half = rows[: len(rows) // 2] if split == "train" else rows[len(rows) // 2 :]
    sample = half[:questions]
    return Corpus(
        name,
        language,
        {q["_id"]: q["text"] for q in sample},
        {q["_id"]: [_normal(a) for a in q["metadata"]["answers"]] for q in sample},
        [index.key(fid, pos) for fid, _, pos, _ in flat],
        [p[0] for *_, p in flat],
        np.asarray(vectors, dtype=np.float32),
        Collection(id=collection_id, name=name, language=language, embedding_model=MODEL),
    )


def greedy(texts: list[str], budget: int) -> list[str]:
    """Passages in rank order while they fit (chat/tools' rule before the assembly)."""
    from chat.metering.tokens import estimate_tokens
    from chat.turn.budget import PASSAGE_OVERHEAD

    kept, left = [], budget
    for text in texts:
        cost = estimate_tokens(text) + PASSAGE_OVERHEAD
        if cost > left:
            break
        kept.append(text)
        left -= cost
    return kept


def assembled(hits, budget: int) -> list[str]:
    """The assembly exactly as chat/turn/tools runs it for a turn with `budget` tokens free for results."""
    from chat.turn.tools import context_for
    from kernel.redis_client import get_redis

    result = context_for(get_redis(), hits, budget, budget)
    return greedy([p.text for p in result.passages], budget)  # the tool's own budget check


def open_webui(corpus: Corpus, bm25, query: str, query_vector) -> list[str]:
    import numpy as np

    from rag.fusion import weighted_rrf

    sims = corpus.matrix @ np.asarray(query_vector, dtype=np.float32)
    by_vector = [corpus.keys[i] for i in np.argsort(-sims)[:50]]
    scores = bm25.get_scores(query.split())
    by_bm25 = [corpus.keys[i] for i in np.argsort(-scores)[:50] if scores[i] > 0]
    fused = weighted_rrf({"bm25": by_bm25, "vector": by_vector}, {"bm25": 0.5, "vector": 0.5}, 60)
    text_of = dict(zip(corpus.keys, corpus.texts, strict=True))
    return [text_of[f.key] for f in fused]


def queries_of(corpus: Corpus, mode: str) -> dict[str, str]:
    """The searches: the whole question, or its 4 rarest content words (bench/datasets.keywords_of,
    a stand-in for the short searches a chat model writes)."""
    from bench.datasets import keywords_of

    return corpus.questions if mode == "whole" else keywords_of(corpus.questions, corpus.texts, corpus.language)


def run_set(corpus: Corpus, mode: str, configs: dict[str, Callable[[], None]] | None = None) -> dict:
    """Answer-in-context share and tokens per question, per method (or assembly config) and budget."""
    from django.conf import settings
    from rank_bm25 import BM25Okapi

    from bench.datasets import EmbeddingCache, minilm_embed_batch
    from chat.metering.tokens import estimate_tokens
    from chat.turn.budget import PASSAGE_OVERHEAD
    from chat.turn.tools import further_hits
    from rag.search import search_collections

    bm25 = BM25Okapi([t.split() for t in corpus.texts])
    queries = queries_of(corpus, mode)
    qvectors = EmbeddingCache(corpus.name).embed(list(queries.values()), minilm_embed_batch(), label="q")
    searched = {}
    # One search a question, as deep as the tool asks without curation: its first CHAT_SEARCH_LIMIT
    # hits are exactly what a search limited to them returns (today's), then the further ones.
    deepest = max([further_hits(curate=False), *(_further(apply) for apply in (configs or {}).values())])
    for (qid, query), vector in zip(queries.items(), qvectors, strict=True):
        outcome = search_collections(
            [corpus.collection], query, limit=settings.CHAT_SEARCH_LIMIT, further=deepest, curate=False
        )
        searched[qid] = (outcome.results, open_webui(corpus, bm25, query, vector))
    variants: dict[str, Callable[[list, list, int], list[str]]] = {
        "today": lambda hits, ow, b: greedy([h.text for h in hits[: settings.CHAT_SEARCH_LIMIT]], b),
        "open-webui": lambda hits, ow, b: greedy(ow, b),
    }
    configs = configs or {"assembly": lambda: None}
    table: dict[str, dict[int, tuple[float, float]]] = {}
    for label, apply in [*((m, lambda: None) for m in variants), *configs.items()]:
        apply()
        method = variants.get(
            label, lambda hits, ow, b: assembled(hits[: settings.CHAT_SEARCH_LIMIT + further_hits(curate=False)], b)
        )
        table[label] = {}
        for budget in BUDGETS:
            found = tokens = 0
            for qid, (hits, ow) in searched.items():
                texts = method(hits, ow, budget)
                context = _normal("\n".join(texts))
                found += any(a in context for a in corpus.answers[qid])
                tokens += sum(estimate_tokens(t) + PASSAGE_OVERHEAD for t in texts)
            n = max(len(searched), 1)
            table[label][budget] = (found / n, tokens / n)
    return table


def _further(apply: Callable[[], None]) -> int:
    """The further hits a grid config asks for."""
    from django.conf import settings

    from chat.turn.tools import further_hits
    from currechat import ragconfig

    saved = settings.CHAT_SEARCH_CANDIDATES, settings.CHAT_NEIGHBOUR_WEIGHT
    apply()
    depth = further_hits(curate=False)
    settings.CHAT_SEARCH_CANDIDATES, settings.CHAT_NEIGHBOUR_WEIGHT = saved
    ragconfig.configure_rag()
    return depth


def grid() -> dict[str, Callable[[], None]]:
    """Assembly settings tried on training questions: search candidates, neighbour weight, and
    whether the last of the room goes to parts of chunks (rag.context.MIN_PART_CHARS)."""
    from django.conf import settings

    from currechat import ragconfig
    from rag import context

    parts_at = context.MIN_PART_CHARS

    def setter(candidates: int, weight: float, parts: bool = True) -> Callable[[], None]:
        def apply() -> None:
            settings.CHAT_SEARCH_CANDIDATES, settings.CHAT_NEIGHBOUR_WEIGHT = candidates, weight
            context.MIN_PART_CHARS = parts_at if parts else 10**9
            ragconfig.configure_rag()  # the library reads its copy (rag.config), not the settings

        return apply

    combos = [(15, 0.1), *((40, w) for w in (0.0, 0.05, 0.1, 0.2, 0.5)), (25, 0.1), (60, 0.1)]
    configs = {f"candidates {c}, neighbour weight {w}": setter(c, w) for c, w in combos}
    configs["candidates 40, neighbour weight 0.1, no parts"] = setter(40, 0.1, parts=False)
    return configs


def markdown(results: dict[tuple[str, str], dict], n: dict[str, int], methods: tuple[str, ...] = METHODS) -> str:
    lines = [
        "| set (questions) | queries | budget | "
        + " | ".join(f"{m}: answer in context / tokens" for m in methods)
        + " |",
        "|---|---|---:|" + "---|" * len(methods),
    ]
    for (name, mode), table in results.items():
        for budget in BUDGETS:
            cells = [f"{table[m][budget][0]:.3f} / {table[m][budget][1]:.0f}" for m in methods]
            lines.append(f"| {name} ({n[name]}) | {mode} | {budget:,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--split", choices=("train", "test"), default="test")
    parser.add_argument("--questions", type=int, default=200, help="questions a set (a fixed sample)")
    parser.add_argument("--queries", default="whole,keywords", help="whole (the question) and/or keywords")
    parser.add_argument("--grid", action="store_true", help="try several assembly settings (use on train)")
    args = parser.parse_args()
    server = start_services("benchc")
    started = time.monotonic()
    try:
        results, sizes = {}, {}
        for i, name in enumerate(args.sets.split(","), start=1):
            corpus = build(name, i, args.split, args.questions)
            sizes[name] = len(corpus.questions)
            for mode in args.queries.split(","):
                results[(name, mode)] = run_set(corpus, mode, grid() if args.grid else None)
            print(f"  {name}: {len(corpus.keys)} chunks, {sizes[name]} questions", file=sys.stderr)
        if args.grid:
            print(markdown(results, sizes, ("today", *grid())))
        else:
            print(markdown(results, sizes))
        print(f"({time.monotonic() - started:.0f}s)", file=sys.stderr)
    finally:
        stop_services(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
