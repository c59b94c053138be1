"""Session authentication for the websockets: channels' `AuthMiddlewareStack` without its send wrapper.

channels' SessionMiddleware wraps `send` so that it can save a modified session and set its cookie
on an HTTP response (`InstanceSessionWrapper.save_message_types`: `http.response.start` only).
A websocket never sends that message, yet the wrapper looked at the session for every frame it
sent: 3–12% of a web process's CPU per streamed token with 200 chats streaming (docs/BENCHMARKS.md).
Here the session is resolved exactly as channels does it and the sends go straight to the server.
The consumers never write the session (they only read who is signed in).
"""

from __future__ import annotations

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper


class WebsocketSessionMiddleware:
    """The scope's lazily loaded `session`, as channels' SessionMiddleware gives it; `send` as is."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] != "websocket":  # HTTP may have to save the session: Django's middleware does
            raise ValueError("WebsocketSessionMiddleware serves websockets only")
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def WebsocketAuthStack(inner):  # noqa: N802 — named like channels' AuthMiddlewareStack, which it replaces
    return CookieMiddleware(WebsocketSessionMiddleware(AuthMiddleware(inner)))
