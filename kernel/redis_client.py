"""The Redis clients of a process, one pool each: the shared one (index, health, pages) and the quick
one for calls made while an answer streams. The queue and channels keep theirs."""

from __future__ import annotations

import redis
from django.conf import settings
from redis.backoff import NoBackoff
from redis.retry import Retry

_clients: dict[str, redis.Redis] = {}
_quick_clients: dict[str, redis.Redis] = {}


def get_redis() -> redis.Redis:
    url = settings.REDIS_URL
    if url not in _clients:
        # Short timeouts: a page must say "Redis is down" quickly instead of hanging.
        # Every chat-turn thread may hold a connection at once (its Stop check, its token counts):
        # redis-py's default cap of 100 failed turns with "Too many connections" under 200 chats.
        _clients[url] = redis.Redis.from_url(
            url,
            socket_connect_timeout=2,
            socket_timeout=10,
            health_check_interval=30,
            retry_on_timeout=True,
            max_connections=settings.CHAT_WORKER_THREADS + 64,
        )
    return _clients[url]


def quick_redis() -> redis.Redis:
    """A client for the calls made while an answer streams (Stop checks, token counts, the turn
    lock's release): it fails at once when Redis is away instead of retrying for seconds as the
    shared client does, so a Redis outage never stalls the tokens (chat/turn/limits.defer_until_redis
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
