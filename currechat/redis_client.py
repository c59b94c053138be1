"""The one Redis connection pool of a process (index, health); the queue and channels keep theirs."""

from __future__ import annotations

import redis
from django.conf import settings

_clients: dict[str, redis.Redis] = {}


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
