"""Index sizing: bytes per passage, search latency against passages per shard, 1 shard against 3.

    .venv/bin/python bench/scale.py [--sizes 10000 40000] [--dims 384] [--memory-passages 5000]
                                    [--total 30000] [--queries 100]

Synthetic passages, written through CollectionIndex (the app's own schema and write path) into
private Redis Stack servers: ~130 made-up words each (~900 characters, the length of a chunk)
drawn with a Zipf-like skew from a 20,000-word vocabulary, and random unit vectors. A query is
the search's five retrievers (rag/retrievers.py: KNN, exact phrase, substring, all words, any
word) for two vocabulary words and a random vector, sent as the app sends them; p50/p95 over
`--queries` queries after 10 of warm-up.

1. memory: used_memory per passage for 384- and 1024-dimension vectors (one collection);
2. latency: one collection of N passages on one node, for each N in --sizes; the slope between
   the two largest sizes extrapolates to 100,000 and 1,000,000 (printed as such);
3. shards: --total passages in 3 collections, on one node, then on a 3-primary cluster (one
   collection per shard, searched together through one pipelined round trip per shard).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.harness import pct, start_services, stop_services  # noqa: E402

WORDS_PER_PASSAGE, VOCABULARY, FILE_SIZE = 130, 20_000, 1000


def vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(3, 10))) for _ in range(VOCABULARY)]


def passages(count: int, dims: int, seed: int):
    """(text, vector) pairs; word ranks follow 1/rank roughly, as in real text."""
    import numpy as np

    rng = random.Random(seed)
    words = vocabulary(random.Random(1))
    weights = [1 / (rank + 1) for rank in range(VOCABULARY)]
    vectors = np.random.default_rng(seed).standard_normal((count, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for number in range(count):
        yield " ".join(rng.choices(words, weights, k=WORDS_PER_PASSAGE)), vectors[number]


def fill(client, collection_id: int, count: int, dims: int) -> float:
    """Write `count` passages into the collection's index; seconds taken (until indexed)."""
    from rag.index import CollectionIndex, IndexedChunk

    index = CollectionIndex(collection_id, "english", dims, client=client)
    started, batch, file_id = time.monotonic(), [], 0
    for position, (text, vector) in enumerate(passages(count, dims, seed=collection_id)):
        batch.append(IndexedChunk(file_id, position, text, f"f{file_id}.md", None, None, "", vector))
        if len(batch) == FILE_SIZE:
            index.replace_file(file_id, batch)
            batch, file_id = [], file_id + 1
    if batch:
        index.replace_file(file_id, batch)
    return time.monotonic() - started


def memory_per_passage(server, dims: int, count: int) -> float:
    import redis

    client = redis.Redis.from_url(server.url, socket_timeout=300)
    client.flushall()
    before = client.info("memory")["used_memory"]
    fill(client, 1, count, dims)
    return (client.info("memory")["used_memory"] - before) / count


def latencies(client, collection_ids: list[int], dims: int, queries: int) -> list[float]:
    import numpy as np

    from rag import retrievers
    from rag.index import ChunkStore
    from rag.query import parse

    rng, words = random.Random(7), vocabulary(random.Random(1))
    out = []
    for number in range(queries + 10):
        text = " ".join(rng.choices(words[:2000], k=2))
        vector = np.random.default_rng(number).standard_normal(dims).astype(np.float32)
        targets = [
            retrievers.Target(
                cid, ChunkStore.index_name(cid), parse(text, "english"), list(vector / np.linalg.norm(vector))
            )
            for cid in collection_ids
        ]
        start = time.perf_counter()
        retrievers.run(client, targets, 50)
        if number >= 10:
            out.append((time.perf_counter() - start) * 1000)
    return out


def one_per_shard(cluster) -> list[int]:
    """Three collection ids whose slots belong to three different primaries."""
    from redis.crc import key_slot

    from rag.index import ChunkStore

    chosen: dict[int, int] = {}
    for cid in range(1, 200):
        owner = cluster.owner_of(key_slot(ChunkStore.index_name(cid).encode())).port
        chosen.setdefault(owner, cid)
        if len(chosen) == 3:
            return list(chosen.values())
    raise RuntimeError("no three collections on three shards")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 40_000])
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--memory-passages", type=int, default=5000)
    parser.add_argument("--total", type=int, default=30_000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    server = start_services("scale")
    try:
        import redis

        for dims in (384, 1024):
            print(
                f"memory  dims={dims:5d}  {memory_per_passage(server, dims, args.memory_passages):8.0f} bytes/passage",
                flush=True,
            )
        client = redis.Redis.from_url(server.url, socket_timeout=300)
        points = []
        for size in args.sizes:
            client.flushall()
            seconds = fill(client, 1, size, args.dims)
            ms = latencies(client, [1], args.dims, args.queries)
            points.append((size, pct(ms, 50), pct(ms, 95)))
            print(
                f"latency passages={size:8d} dims={args.dims} p50={points[-1][1]:6.1f} ms p95={points[-1][2]:6.1f} ms "
                f" (written in {seconds:.0f}s)",
                flush=True,
            )
        if len(points) >= 2:
            (n1, a50, a95), (n2, b50, b95) = points[-2], points[-1]
            if b50 <= a50:  # noise (a loaded machine) hides growth: a line through it says nothing
                print("latency did not grow between the two largest sizes: no extrapolation")
                points = []
            for target in (100_000, 1_000_000) if points else ():
                f50 = b50 + (b50 - a50) / (n2 - n1) * (target - n2)
                f95 = b95 + (b95 - a95) / (n2 - n1) * (target - n2)
                print(
                    f"latency passages={target:8d} EXTRAPOLATED (linear, two largest sizes): "
                    f"p50≈{f50:6.1f} ms p95≈{f95:6.1f} ms"
                )
        shards(client, args)
    finally:
        stop_services(server)


def shards(client, args) -> None:
    from redis.cluster import RedisCluster

    from scripts.redis_cluster import RedisClusterNodes

    client.flushall()
    per = args.total // 3
    for cid in (1, 2, 3):
        fill(client, cid, per, args.dims)
    ms = latencies(client, [1, 2, 3], args.dims, args.queries)
    print(
        f"shards=1 total={args.total} in 3 collections: p50={pct(ms, 50):6.1f} ms p95={pct(ms, 95):6.1f} ms", flush=True
    )
    client.flushall()
    nodes = RedisClusterNodes(Path(tempfile.mkdtemp(prefix="currechat-scale-")), primaries=3, replicas=0).start()
    try:
        cluster = RedisCluster(host="127.0.0.1", port=nodes.servers[0].port, protocol=2, socket_timeout=300)
        ids = one_per_shard(nodes)
        for cid in ids:
            fill(cluster, cid, per, args.dims)
        ms = latencies(cluster, ids, args.dims, args.queries)
        print(
            f"shards=3 total={args.total} one collection per shard: p50={pct(ms, 50):6.1f} ms p95={pct(ms, 95):6.1f} ms"
        )
        memory = [nodes.client(s).info("memory")["used_memory"] for s in nodes.servers]
        print(f"shards=3 used_memory per shard: {', '.join(f'{m / 2**20:.0f} MiB' for m in memory)}")
    finally:
        nodes.stop()


if __name__ == "__main__":
    main()
