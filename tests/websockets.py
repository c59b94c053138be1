"""Open a websocket to the real ASGI app as a logged-in user (session cookie) or anonymously."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client


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
