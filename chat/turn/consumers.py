"""`/ws/chats/{id}/`: a chat's live answers. Authenticates, checks permission, forwards events.

The session's student may send `{"type": "user_message", "content": ...}`, `{"type": "retry"}`
(after a failed answer), `{"type": "regenerate"}` (answer the last question again) or
`{"type": "stop"}`; the first three may carry `"model"`, one of the prompt's models to answer with
(chat/course/model_choice.py); the prompt's teacher may connect but only to read. Events are those of
`chat.turn.events`. Every message is checked against the current state (the user still signed in,
active, in the course; the prompt open): access taken away stops an open socket's next message.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging

import orjson
from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation.trans_real import parse_accept_lang_header

from access.rules import get_session_for_read
from accounts.middleware import saved_language
from chat.turn.agent import stop_turn
from chat.turn.runner import SignedOut, error_event, start_turn_async, stream_turn
from kernel.errors import CurreChatError, NotAuthenticated
from kernel.sessions import signed_in

log = logging.getLogger(__name__)

# Close codes in the application range, so the page can tell "not allowed" from a network drop.
CLOSE_NOT_ALLOWED = 4403
KINDS = ("user_message", "retry", "regenerate", "stop")


def scope_language(scope) -> str:
    """The language of a websocket's sentences, chosen as LocaleMiddleware and UserLanguageMiddleware
    choose a page's (Channels runs no Django middleware): the user's saved choice, the language
    cookie, then the browser's Accept-Language; the site's default otherwise."""
    saved = saved_language(scope.get("user"))
    if saved:
        return saved
    cookie = scope.get("cookies", {}).get(settings.LANGUAGE_COOKIE_NAME, "")
    accept = dict(scope.get("headers", [])).get(b"accept-language", b"").decode("latin-1")
    wanted = [cookie] + [code for code, _q in parse_accept_lang_header(accept)]
    for code in filter(None, wanted):
        with contextlib.suppress(LookupError):
            return translation.get_supported_language_variant(code)
    return settings.LANGUAGE_CODE


class ChatConsumer(AsyncJsonWebsocketConsumer):
    # No channel layer: events come from the turn's own thread, never through Redis, so a Redis
    # blip must not close every open chat (channels closes a consumer whose layer read fails, 1011).
    channel_layer_alias = "__none__"

    async def dispatch(self, message):
        # channels' dispatch first runs close_old_connections in a thread for every message of every
        # socket (the handshake, each question, the close), all on asgiref's one shared thread: a
        # question waited its turn there before reaching its handler, for nothing. Every database use
        # of ours closes its thread's old connections itself, before and after (channels'
        # database_sync_to_async, and runner's pool threads).
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self):
        self.session_id = self.scope["url_route"]["kwargs"]["session_id"]
        self.turns: set[asyncio.Task] = set()
        try:
            await database_sync_to_async(get_session_for_read)(self.scope["user"], self.session_id)
        except CurreChatError:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.language = scope_language(self.scope)
        await self.accept()

    async def disconnect(self, code):
        # Stop forwarding; the turn itself finishes in its thread and is stored.
        for task in getattr(self, "turns", ()):
            task.cancel()

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        # A frame that is not JSON text (a binary one, a typo) gets the sentence an unknown kind
        # gets: channels' own decoding would end the consumer with a server error and close the socket.
        content = None
        if text_data is not None:
            try:
                content = orjson.loads(text_data)
            except orjson.JSONDecodeError:
                # orjson refuses half a surrogate pair, which JSON allows: read so, the message check names it.
                with contextlib.suppress(ValueError):
                    content = json.loads(text_data)
        # The refusals sent back are sentences the student reads (the turn's work happens in
        # sync_to_async threads, which inherit the active language).
        with translation.override(self.language):
            await self._receive(content)

    async def _receive(self, content):
        kind = content.get("type") if isinstance(content, dict) else None
        if kind not in KINDS:
            await self.send_json(error_event(CurreChatError(_("Send {'type': 'user_message', 'content': '...'}."))))
            return
        text = content.get("content")
        if kind == "user_message" and not isinstance(text, str):
            await self.send_json(error_event(CurreChatError(_("'content' must be text."))))
            return
        model = content.get("model")
        if model is not None and not isinstance(model, str):
            await self.send_json(error_event(CurreChatError(_("'model' must be a model's name."))))
            return
        if kind == "stop":
            if await database_sync_to_async(self._signed_in)():
                await self._stop()
            else:
                await self._signed_out(NotAuthenticated(_("You were signed out. Log in again to continue.")))
            return
        try:
            # Signed in still: checked in the same thread hop as the permission (runner.SignedOut).
            turn = await start_turn_async(
                self.scope["user"],
                self.session_id,
                text,
                retry=kind == "retry",
                regenerate=kind == "regenerate",
                model=model,
                browser=self.scope.get("session"),
            )
        except SignedOut as exc:
            await self._signed_out(exc)
            return
        except CurreChatError as exc:
            await self.send_json(error_event(exc))
            return
        task = asyncio.create_task(self._forward(turn))
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)

    def _signed_in(self) -> bool:
        # Token-less websockets are browser sessions; a test client may pass a user without one. The
        # session and the user are read afresh: a sign-out, deactivation or password change ends this
        # socket at its next message, as it ends the browser's next request. The socket keeps the key
        # it was opened with; the browser that changed the password has a new one, and its page opens
        # a new socket with it (static/js/chat.js).
        session = self.scope.get("session")
        return session is None or signed_in(session.session_key, self.scope["user"].pk) is not None

    async def _signed_out(self, exc: NotAuthenticated) -> None:
        refusal = error_event(exc)
        refusal["signed_out"] = True  # nothing was stored: the page may send it again (static/js/chat.js)
        await self.send_json(refusal)
        await self.close(code=CLOSE_NOT_ALLOWED)

    async def _stop(self) -> None:
        try:
            await database_sync_to_async(stop_turn)(self.scope["user"], self.session_id)
        except CurreChatError as exc:
            await self.send_json(error_event(exc))

    async def _forward(self, turn):
        # OSError: the socket closed under a send (uvicorn's ClientDisconnected: the browser went, or
        # the server is restarting). The turn goes on in its thread and is stored either way.
        with contextlib.suppress(asyncio.CancelledError, OSError):
            async for event in stream_turn(turn):
                # Straight to the server, encoded by orjson: this runs for every streamed frame,
                # and `send_json` adds three coroutine layers and the slower standard encoder.
                await self.base_send({"type": "websocket.send", "text": orjson.dumps(event).decode()})
