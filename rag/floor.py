"""The similarity floor of the uncurated search, calibrated per collection against nonsense probes.

Without curation, a search whose words match nothing keeps the passages found by meaning only
when the best of them stands out from what nonsense finds in the same collection. A fixed
cosine floor cannot say that: the nearest passage to any query, even "zqxwv plorkt", gets more
similar the more passages a collection has (the maximum of more draws), and each embedding
model has its own scale. So the floor is measured where it is used:

    floor = max(SEARCH_MIN_SIMILARITY, mean + SEARCH_FLOOR_Z * std)

over the best similarities that `PROBES` (fixed strings of random letters, embedded as queries
by the collection's own model) reach in the collection's own index. `SEARCH_FLOOR_Z` was tuned
on public training queries (bench/floor.py, docs/BENCHMARKS.md "Nothing relevant").

The floor is cached in Redis per collection next to its index and is valid for one index
generation (`ChunkStore.generation`, raised by every write): a collection measures it again on
the first search after a file is added, replaced or removed, or after a re-index.
"""

from __future__ import annotations

import json
import logging
import random
import statistics
import string
import threading
from collections.abc import Sequence

import numpy as np
import redis

from kernel.errors import CurreChatError
from rag import config
from rag.index import ChunkStore
from rag.providers import get_embedding_model
from rag.retrievers import VECTOR, knn, parse_reply

log = logging.getLogger(__name__)

PROBE_SEED, PROBE_COUNT = 4099, 32
# The cache entry's shape; a new probe set or formula changes it, so old entries are measured again.
_CACHE_VERSION = 1


def nonsense(count: int, seed: int) -> list[str]:
    """`count` strings of one to three made-up words of 4-8 random letters ("qzmvt hrakpl").
    Deterministic per seed: the benchmark draws its test nonsense from other seeds."""
    rng = random.Random(seed)
    words = lambda n: " ".join("".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 8))) for _ in range(n))  # noqa: E731
    return [words(rng.randint(1, 3)) for _ in range(count)]


PROBES = nonsense(PROBE_COUNT, PROBE_SEED)

_lock = threading.Lock()
_probe_vectors: dict[str, list[list[float]]] = {}  # embedding model name -> the probes as queries


def probe_vectors(model_name: str) -> list[list[float]]:
    """The probes embedded as queries (with the model's query prefix), once per model and process.
    Raises the provider's CurreChatError when the model cannot be reached."""
    with _lock:
        cached = _probe_vectors.get(model_name)
    if cached is None:
        model = get_embedding_model(model_name)
        prefix = getattr(model, "query_prefix", "")
        cached = model.embed_batch([prefix + p for p in PROBES])
        with _lock:
            _probe_vectors[model_name] = cached
    return cached


def floor_from(best: Sequence[float]) -> float:
    """The floor from the probes' best similarities in one collection (none: the fixed minimum)."""
    minimum = config.search().min_similarity
    if len(best) < 2:
        return minimum
    return max(minimum, statistics.fmean(best) + config.search().floor_z * statistics.pstdev(best))


def probe_best(client: redis.Redis, index_name: str, vectors: Sequence[Sequence[float]]) -> list[float]:
    """Each probe's best cosine similarity in the index (one pipelined round trip; a probe that
    finds no vector, in an index without any, is left out)."""
    pipe = client.pipeline(transaction=False)
    for vector in vectors:
        pipe.execute_command(*knn(index_name, vector, 1))
    best = []
    for reply in pipe.execute(raise_on_error=False):
        if isinstance(reply, Exception):
            continue  # no index yet: nothing to be similar to
        hits = parse_reply(reply, VECTOR)
        if hits and hits[0].score is not None:
            best.append(hits[0].score)
    return best


def floors(client: redis.Redis, wanted: dict[int, tuple[str, str]]) -> dict[int, float]:
    """The floor of each collection in `wanted` (collection id -> (index name, embedding model)).

    Cached floors of the current index generation are read in one round trip; the others are
    measured (probe vectors once per model, one KNN round trip per collection) and stored. When
    the model cannot embed the probes the fixed minimum applies (the query could not be embedded
    either, so there are no passages found by meaning to judge)."""
    ids = list(wanted)
    stores = {cid: ChunkStore(cid, client) for cid in ids}
    pipe = client.pipeline(transaction=False)
    for cid in ids:
        pipe.get(stores[cid].generation_key())
        pipe.get(stores[cid].floor_key())
    replies = pipe.execute()
    result: dict[int, float] = {}
    for i, cid in enumerate(ids):
        generation, cached = int(replies[2 * i] or 0), replies[2 * i + 1]
        index_name, model = wanted[cid]
        entry = json.loads(cached) if cached else {}
        if entry.get("generation") == generation and entry.get("model") == model and entry.get("v") == _CACHE_VERSION:
            result[cid] = floor_from(entry["best"])
            continue
        try:
            best = probe_best(client, index_name, probe_vectors(model))
        except CurreChatError as exc:
            log.warning("Could not embed the floor's probes with %s: %s", model, exc)
            result[cid] = config.search().min_similarity
            continue
        entry = {"v": _CACHE_VERSION, "generation": generation, "model": model, "best": [round(b, 6) for b in best]}
        client.set(stores[cid].floor_key(), json.dumps(entry))
        result[cid] = floor_from(best)
    return result


def best_similarity(vector_hits) -> float:
    """The best cosine similarity among a vector retriever's hits (-1 without any)."""
    scores = [h.score for h in vector_hits if h.score is not None]
    return float(np.max(scores)) if scores else -1.0
