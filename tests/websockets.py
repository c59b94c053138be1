"""Open a websocket to the real ASGI app as a logged-in user (session cookie) or anonymously."""

from __future__ import annotations

import asyncio
import contextlib
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


async def open_websocket(
    user, path: str, headers=(), *, client: Client | None = None
) -> tuple[WebsocketCommunicator, bool, int | None]:
    """Connect to `path` as `user` (None: anonymous); returns the communicator, whether it got in,
    and the close code when it did not. `headers` are sent too (e.g. the browser's Accept-Language).
    With `client`, the socket is that browser's: opened with its session cookie."""
    from currechat.asgi import application

    headers = [(b"origin", b"http://127.0.0.1"), *headers]
    if user is not None or client is not None:
        if client is None:
            client = Client()
            await database_sync_to_async(client.force_login)(user)
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(application, path, headers=headers)
    try:
        # channels waits 1 s by default: on a busy 2-core machine a handshake with its DB checks can take longer.
        connected, code = await communicator.connect(timeout=EVENT_SECONDS)
    except BaseException:
        await _let_go(communicator)
        raise
    if not connected:
        # A server tells the app the socket is gone once it refused the handshake; the test client
        # does not, so the consumer would wait on, in the middle of a channel-layer receive. The
        # loop's shutdown then cancels that receive, and channels_redis can wait forever for the
        # cancelled read: a whole run hung so on a loaded machine.
        await _let_go(communicator, code)
    return communicator, connected, code


async def _let_go(communicator: WebsocketCommunicator, code: int | None = None) -> None:
    """Tell the app the socket closed, as a server does, and wait for it to end."""
    with contextlib.suppress(Exception):
        await communicator.disconnect(code=code or 1000, timeout=EVENT_SECONDS)
