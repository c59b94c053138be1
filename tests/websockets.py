"""Open a websocket to the real ASGI app as a logged-in user (session cookie) or anonymously."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

T = TypeVar("T")

# How long a test waits for a websocket event (or a row a turn writes) before it fails: a budget for
# a loaded 2-core machine, not a measurement; an event that comes ends the wait at once.
EVENT_SECONDS = 30.0


async def until(check: Callable[[], Awaitable[T]], what: str, timeout: float = EVENT_SECONDS) -> T:
    """Await `check()` until it gives something true, and return that; fail naming `what` after
    `timeout` seconds. For what no message announces (a row the turn's thread writes)."""
    deadline = time.monotonic() + timeout
    while not (value := await check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)
    return value


async def open_websocket(user, path: str, headers=()) -> tuple[WebsocketCommunicator, bool, int | None]:
    """Connect to `path` as `user` (None: anonymous); returns the communicator, whether it got in,
    and the close code when it did not. `headers` are sent too (e.g. the browser's Accept-Language)."""
    from currechat.asgi import application

    headers = [(b"origin", b"http://127.0.0.1"), *headers]
    if user is not None:
        client = Client()
        await database_sync_to_async(client.force_login)(user)
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    # channels waits 1 s by default: on a busy 2-core machine a handshake with its DB checks can take longer.
    connected, code = await communicator.connect(timeout=10)
    return communicator, connected, code
