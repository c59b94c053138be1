"""The channel layer's Redis connections: redis-py's own classes, made to keep a cancel.

On Python 3.11, `asyncio.wait_for` returns the awaited result instead of raising when a cancel
arrives just as that result is ready (CPython gh-86296, fixed in 3.12 by building it on
`asyncio.timeout`). redis-py sends every command through `wait_for` when it has a socket timeout,
so a cancel that lands as a send completes is lost. channels starts a consumer's channel-layer
receive before `connect()` decides; a websocket refused at once cancels that receive while it is
still connecting to Redis, the cancel was lost, and the receive polled Redis on (a 5 s blocking
pop, again and again): the consumer never ended, and kept its task and a Redis connection until
the server gave up on it (a test waited its 30 s for it at every refusal).
"""

from __future__ import annotations

import asyncio
from typing import Any

from channels_redis import core
from channels_redis.utils import decode_hosts
from redis.asyncio.connection import AbstractConnection, Connection, parse_url


class _KeepsCancel(AbstractConnection):
    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        task = asyncio.current_task()
        asked = task.cancelling() if task is not None else 0
        await super().send_packed_command(command, check_health)
        if task is not None and task.cancelling() > asked:
            # A cancel came during the send and was swallowed. The command went out, but its
            # reply will not be read: drop the connection, as redis-py does when a cancel raises.
            await self.disconnect(nowait=True)
            raise asyncio.CancelledError


_classes: dict[type[AbstractConnection], type[AbstractConnection]] = {}


def _keeping_cancel(base: type[AbstractConnection]) -> type[AbstractConnection]:
    if base not in _classes:
        _classes[base] = type(f"CancelKeeping{base.__name__}", (_KeepsCancel, base), {})
    return _classes[base]


def _host(entry: dict[str, Any]) -> dict[str, Any]:
    """A channels_redis host entry, `{"address": url, **redis-py options}`, on our classes."""
    options = dict(entry)
    params: dict[str, Any] = dict(parse_url(options.pop("address")))
    base = params.pop("connection_class", Connection)  # by the scheme: redis://, rediss://, unix://
    return {**params, **options, "connection_class": _keeping_cancel(base)}


class RedisChannelLayer(core.RedisChannelLayer):
    """channels_redis's layer, its connections keeping a cancel (settings' CHANNEL_LAYERS)."""

    def __init__(self, hosts: list[Any] | None = None, **options: Any) -> None:
        entries = [_host(h) if "address" in h else h for h in decode_hosts(hosts)]
        super().__init__(hosts=entries, **options)
