"""A Redis Cluster of the bundled Redis Stack for the cluster tests: 3 primaries, 3 replicas.

Each test that uses it gets a cluster of its own (they kill nodes and move slots), on free loopback
ports. Every node is tied to this test process by Linux's parent-death signal
(scripts/redis_cluster.py), so a test process killed hard leaves no server behind, and the
fixture stops them all when the test ends. `index_cluster` points REDIS_INDEX_URL at it; the
queue and the rest of the app stay on the test process's own Redis (tests/services.py).
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import pytest
import redis

from kernel import redis_client
from scripts.redis_cluster import RedisClusterNodes


@pytest.fixture
def redis_cluster():
    base = Path(tempfile.mkdtemp(prefix="currechat-cluster-"))
    nodes = RedisClusterNodes(base, primaries=3, replicas=1, node_timeout_ms=1000)
    try:
        yield nodes.start()
    finally:
        nodes.stop()
        import shutil

        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def index_cluster(redis_cluster, settings):
    """The search index on `redis_cluster` (REDIS_INDEX_URL), everything else where it was."""
    settings.REDIS_INDEX_URL = redis_cluster.url
    settings.REDIS_INDEX_CLUSTER = True
    yield redis_cluster
    client = redis_client._index_clients.pop(redis_cluster.url, None)
    if client is not None:
        with contextlib.suppress(redis.RedisError):
            client.close()
