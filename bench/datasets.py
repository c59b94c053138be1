"""BEIR-layout data sets from ../shared/data, chunked and embedded once (embeddings cached on disk).

Used by bench/retrieval.py and bench/search_latency.py. Embedding all corpora with the local MiniLM
takes about 15 minutes on 2 cores, so vectors are cached by text hash under var/bench-cache/ and
reused across runs (`python bench/datasets.py` warms the cache).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.shared_data import shared_data  # noqa: E402

DATA = shared_data(ROOT)
CACHE = ROOT / "var" / "bench-cache"

# name -> (folder, language, max test queries or None for all)
DATASETS: dict[str, tuple[Path, str, int | None]] = {
    "scifact": (DATA / "scifact", "english", None),
    "openstax-statistics": (DATA / "beir" / "openstax-introductory-statistics-2e", "english", None),
    "openstax-physics": (DATA / "beir" / "openstax-university-physics-volume-1", "english", None),
    # Sets in languages MiniLM was not trained for are split as SQuAD is: a fixed random test sample,
    # and the other questions for training (the foreign-language vector weight is tuned on those).
    "tydiqa-fi": (DATA / "beir" / "tydiqa-goldp-dev-fi", "finnish", 400),
    "tydiqa-en": (DATA / "beir" / "tydiqa-goldp-dev-en", "english", None),
    # 10,570 questions; a fixed random 1,500 keep a full run under 20 minutes. Its "train" split
    # (for tuning) is another fixed random 1,500 of the remaining questions.
    "squad": (DATA / "beir" / "squad-v1.1-dev", "english", 1500),
    "xquad-tr": (DATA / "beir" / "xquad-tr", "turkish", 595),
    "xquad-el": (DATA / "beir" / "xquad-el", "greek", 595),
}
FOREIGN_TO_MINILM = ("tydiqa-fi", "xquad-tr", "xquad-el")


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    position: int
    text: str
    heading: str
    embed_text: str  # what the embedding model sees: heading path + text, as ingestion does


@dataclass
class Dataset:
    name: str
    language: str
    docs: dict[str, dict]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]  # query id -> doc id -> relevance
    chunks: list[Chunk]


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def _splitter(fits=None):
    """The ingestion pipeline's normaliser, chunker and embedding input, as for a Markdown upload;
    `fits` is an embedding model's token limit test (rag/providers/limits.py), None for characters only."""
    from rag.ingest.chunking import chunk_pages
    from rag.ingest.job import PageText
    from rag.ingest.steps import embedding_input
    from rag.text import normalize_text

    def split(text: str) -> list[tuple[str, str, str]]:
        chunks = chunk_pages([PageText(None, normalize_text(text))], chunk_size=1000, overlap=200, fits=fits)
        return [(c.text, c.heading_path, embedding_input(c)) for c in chunks]

    return split


def load(name: str, split: str = "test", fits=None) -> Dataset:
    folder, language, max_queries = DATASETS[name]
    docs = {d["_id"]: d for d in _read_jsonl(folder / "corpus.jsonl")}
    all_queries = {q["_id"]: q["text"] for q in _read_jsonl(folder / "queries.jsonl")}
    sampled = split == "train" and max_queries and not (folder / "qrels" / "train.tsv").exists()
    qrels = read_qrels(folder / "qrels" / ("test.tsv" if sampled else f"{split}.tsv"))
    qrels = {q: rel for q, rel in qrels.items() if q in all_queries}
    if max_queries and len(qrels) > max_queries:
        keep = sorted(random.Random(7).sample(sorted(qrels), max_queries))  # the test sample
        if sampled:  # no training split of its own: other questions than the test sample's (SQuAD)
            rest = sorted(set(qrels) - set(keep))
            keep = sorted(random.Random(8).sample(rest, min(max_queries, len(rest))))
        qrels = {q: qrels[q] for q in keep}
    split_text = _splitter(fits)
    chunks = []
    for doc_id, doc in docs.items():
        title = (doc.get("title") or "").strip()
        body = doc.get("text") or ""
        # Each document is uploaded as Markdown with its title as heading: the chunker gives every
        # chunk the title as heading path, and the embedding input starts with it (rag/ingest).
        text = f"# {title}\n\n{body}" if title and not body.startswith("#") else body
        for position, (piece, heading, embed_text) in enumerate(split_text(text)):
            chunks.append(Chunk(doc_id, position, piece, heading, embed_text))
    return Dataset(name, language, docs, {q: all_queries[q] for q in qrels}, qrels, chunks)


def keyword_queries(ds: Dataset, words: int = 4) -> dict[str, str]:
    """Each query as the short keyword search a chat model writes: its `words` rarest content
    words (stop words removed, rarity = fewest chunks containing the word), in their order.
    "What is the capital city of Finland?" becomes "capital city finland"."""
    return keywords_of(ds.queries, [c.text for c in ds.chunks], ds.language, words)


def keywords_of(queries: dict[str, str], texts: list[str], language: str, words: int = 4) -> dict[str, str]:
    """`keyword_queries` for any queries over the chunk texts `texts` (rarity counted in them)."""
    from collections import Counter

    from rag.languages import stopwords
    from rag.query import normalise, tokenize

    stop = stopwords(language)
    df = Counter(t for text in texts for t in set(tokenize(normalise(text), language)))
    out = {}
    for qid, text in queries.items():
        content = list(dict.fromkeys(t for t in tokenize(normalise(text), language) if t not in stop))
        keep = set(sorted(content, key=lambda t: (df.get(t, 0), content.index(t)))[:words])
        out[qid] = " ".join(t for t in content if t in keep) or text
    return out


class EmbeddingCache:
    """Vectors by sha1(text) for one model, stored as one .npz per data set."""

    def __init__(self, dataset: str, model_name: str = "all-MiniLM-L6-v2"):
        self.path = CACHE / model_name / f"{dataset}.npz"
        self.vectors: dict[str, np.ndarray] = {}
        if self.path.exists():
            data = np.load(self.path)
            self.vectors = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.array(list(self.vectors), dtype="U40")
        vectors = np.stack(list(self.vectors.values())) if self.vectors else np.zeros((0, 384), np.float32)
        np.savez(self.path.with_suffix(".tmp.npz"), keys=keys, vectors=vectors)
        self.path.with_suffix(".tmp.npz").replace(self.path)

    def embed(self, texts: list[str], embed_batch, batch: int = 256, label: str = "") -> np.ndarray:
        missing = sorted({t for t in texts if self.key(t) not in self.vectors}, key=len)
        started = time.monotonic()
        for i in range(0, len(missing), batch):
            part = missing[i : i + batch]
            for text, vector in zip(part, embed_batch(part), strict=True):
                self.vectors[self.key(text)] = np.asarray(vector, dtype=np.float32)
            self.save()
            done = i + len(part)
            rate = done / max(time.monotonic() - started, 1e-9)
            print(f"  {label}: embedded {done}/{len(missing)} ({rate:.1f}/s)", file=sys.stderr, flush=True)
        return np.stack([self.vectors[self.key(t)] for t in texts]) if texts else np.zeros((0, 384), np.float32)


def minilm_embed_batch():
    from rag.providers.local import MiniLMEmbedder

    return MiniLMEmbedder().embed_batch


def warm(names: list[str]) -> None:
    embed_batch = minilm_embed_batch()
    for name in names:
        ds = load(name)
        cache = EmbeddingCache(name)
        queries = list(ds.queries.values())
        if name == "scifact":  # tuning uses the training queries too
            queries += list(load(name, "train").queries.values())
        cache.embed(queries, embed_batch, label=f"{name} queries")
        cache.embed([c.embed_text for c in ds.chunks], embed_batch, label=f"{name} chunks ({len(ds.chunks)})")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    warm(sys.argv[1:] or list(DATASETS))
