"""Embeddings in batches, cached in Redis by (model, text hash) so unchanged text is embedded once.

The cache is shared by all collections and files: re-uploading a file, retrying a failed one or
re-indexing after a chunking change only embeds the chunks whose text actually changed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence

import numpy as np
import redis

from kernel.redis_client import get_redis
from rag import config
from rag.ingest.job import IngestCancelled
from rag.providers import get_embedding_model

log = logging.getLogger(__name__)

# A batch is one request to the model server (or one call into the local model) and cannot be
# interrupted, so its length bounds how long a Cancel waits: batches start small and grow only while
# each takes under BATCH_SECONDS. A second per request still amortises the request's overhead, which
# is milliseconds on a server and nothing in-process.
FIRST_BATCH = 4
BATCH_SECONDS = 1.0


def _key(model_name: str, text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{config.index().prefix}:emb:{model_name}:{digest}"


class EmbeddingCache:
    """`model_name` should carry the model's version (see `cache_name`): vectors of a model pulled
    again under the same name are other vectors."""

    def __init__(self, model_name: str, client: redis.Redis | None = None):
        self.model_name = model_name
        self.client = client or get_redis()
        self.ttl = config.ingestion().embed_cache_days * 86400

    def get_many(self, texts: Sequence[str]) -> list[list[float] | None]:
        """The cached vectors (None where there is none). Redis away counts as all missing: the
        cache only saves work, and the embedding goes on while Redis is restarted."""
        pipe = self.client.pipeline(transaction=False)
        for text in texts:
            pipe.getex(_key(self.model_name, text), ex=self.ttl)  # used again: keep it longer
        try:
            raws = pipe.execute()
        except (redis.ConnectionError, redis.TimeoutError):
            log.warning("Embedding cache unreachable; embedding %s texts without it", len(texts))
            return [None] * len(texts)
        return [None if raw is None else np.frombuffer(raw, dtype=np.float32).tolist() for raw in raws]

    def put_many(self, texts: Sequence[str], vectors: Sequence[Sequence[float]]) -> None:
        pipe = self.client.pipeline(transaction=False)
        for text, vector in zip(texts, vectors, strict=True):
            pipe.set(_key(self.model_name, text), np.asarray(vector, dtype=np.float32).tobytes(), ex=self.ttl)
        try:
            pipe.execute()
        except (redis.ConnectionError, redis.TimeoutError):  # not cached this time; nothing else lost
            log.warning("Embedding cache unreachable; %s vectors not cached", len(texts))


def cache_name(model_name: str, version: str) -> str:
    return f"{model_name}@{version[:19]}" if version else model_name


def embed_texts(
    texts: Sequence[str],
    model_name: str,
    *,
    progress: Callable[[int], None] = lambda done: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[list[list[float]], int]:
    """Vectors for `texts` (same order) and how many came from the cache."""
    model = get_embedding_model(model_name)
    cache = EmbeddingCache(cache_name(model_name, model.version))
    vectors: list[list[float] | None] = cache.get_many(texts) if texts else []
    # Longest first, so that each batch holds passages of about one length: a batch is padded to
    # its longest passage, and a file's short ones (headings, captions) no longer pay for a long one.
    missing = sorted((i for i, vector in enumerate(vectors) if vector is None), key=lambda i: -len(texts[i]))
    cached = len(texts) - len(missing)
    progress(cached)
    done, size = 0, min(FIRST_BATCH, config.ingestion().embed_batch)
    while done < len(missing):
        if cancelled():
            raise IngestCancelled
        indexes = missing[done : done + size]
        started = time.monotonic()
        fresh = model.embed_batch([texts[i] for i in indexes])
        size = next_batch_size(size, len(indexes), time.monotonic() - started)
        cache.put_many([texts[i] for i in indexes], fresh)
        for i, vector in zip(indexes, fresh, strict=True):
            vectors[i] = vector
        done += len(indexes)
        progress(cached + done)
    return [v for v in vectors if v is not None], cached


def next_batch_size(size: int, texts: int, seconds: float) -> int:
    """The size of the next batch after `texts` took `seconds`: doubled while batches are quick,
    never more than INGEST_EMBED_BATCH, nor more than fits in BATCH_SECONDS at the speed seen."""
    per_text = seconds / max(texts, 1)
    fits = int(BATCH_SECONDS / per_text) if per_text > 0 else config.ingestion().embed_batch
    return max(1, min(size * 2, config.ingestion().embed_batch, fits))
