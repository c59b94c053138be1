"""The Redis clients of a process, one pool each: the shared one (health, pages, locks, caches), the
quick one for calls made while an answer streams, and the search index's (`get_index_redis`,
REDIS_INDEX_URL: the shared client itself unless the index lives elsewhere). The queue and channels
keep theirs."""

from __future__ import annotations

from typing import cast

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

_clients: dict[str, redis.Redis] = {}
_quick_clients: dict[str, redis.Redis] = {}
_index_clients: dict[str, redis.Redis] = {}


# Short timeouts: a page must say "Redis is down" quickly instead of hanging.
_TIMEOUTS = {"socket_connect_timeout": 2, "socket_timeout": 10, "health_check_interval": 30}


def _pool_size() -> int:
    # Every chat-turn thread may hold a connection at once (its Stop check, its token counts):
    # redis-py's default cap of 100 failed turns with "Too many connections" under 200 chats.
    # Per node for a cluster.
    return settings.CHAT_WORKER_THREADS + 64


def _client(url: str) -> redis.Redis:
    """A client of the shared kind (its own pool) for one Redis at `url`."""
    return redis.Redis.from_url(url, retry_on_timeout=True, max_connections=_pool_size(), **_TIMEOUTS)


def get_redis() -> redis.Redis:
    url = settings.REDIS_URL
    if url not in _clients:
        _clients[url] = _client(url)
    return _clients[url]


def quick_redis() -> redis.Redis:
    """A client for the calls made while an answer streams (Stop checks, token counts, the turn
    lock's release): it fails at once when Redis is away instead of retrying for seconds as the
    shared client does, so a Redis outage never stalls the tokens (kernel/outages.defer_until_redis
    settles what could not be written)."""
    url = settings.REDIS_URL
    if url not in _quick_clients:
        _quick_clients[url] = redis.Redis.from_url(
            url,
            socket_connect_timeout=0.5,
            socket_timeout=2,
            retry=Retry(NoBackoff(), 0),
            max_connections=settings.CHAT_WORKER_THREADS + 16,
        )
    return _quick_clients[url]


def get_index_redis() -> redis.Redis:
    """The client of the search index (rag/index.py): REDIS_INDEX_URL, one node or a Redis Cluster.

    A cluster client (redis-py's RedisCluster) sends each command to the shard of its key or index
    name, and a pipeline to every shard it touches at once (all requests written before any reply
    is read), so a search over collections on three shards waits for the slowest, not the sum. It
    answers the same commands as a one-node client; it is typed as one so callers need no branch."""
    url = settings.REDIS_INDEX_URL or settings.REDIS_URL
    if url == settings.REDIS_URL and not settings.REDIS_INDEX_CLUSTER:
        return get_redis()  # one Redis for everything: one pool, as before there were two settings
    if url not in _index_clients:
        if settings.REDIS_INDEX_CLUSTER:
            plain = url.replace("+cluster://", "://", 1)
            # RESP2 as the one-node client speaks, so replies parse the same.
            client = RedisCluster.from_url(plain, protocol=2, max_connections=_pool_size(), **_TIMEOUTS)
            _index_clients[url] = cast(redis.Redis, client)
        else:
            _index_clients[url] = _client(url)
    return _index_clients[url]


def is_cluster(client: redis.Redis) -> bool:
    return isinstance(client, RedisCluster)
