"""`/ws/chats/{id}/`: a chat's live answers. Authenticates, checks permission, forwards events.

The session's student may send `{"type": "user_message", "content": ...}` or `{"type": "retry"}`;
the prompt's teacher may connect but only to read. Events are those of `chat.events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from accounts.permissions import get_session_for_read
from chat.runner import error_event, start_turn_async, stream_turn
from currechat.errors import CurreChatError

log = logging.getLogger(__name__)

# Close codes in the application range, so the page can tell "not allowed" from a network drop.
CLOSE_NOT_ALLOWED = 4403


class ChatConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.session_id = self.scope["url_route"]["kwargs"]["session_id"]
        self.turns: set[asyncio.Task] = set()
        try:
            await database_sync_to_async(get_session_for_read)(self.scope["user"], self.session_id)
        except CurreChatError:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        await self.accept()

    async def disconnect(self, code):
        # Stop forwarding; the turn itself finishes in its thread and is stored.
        for task in getattr(self, "turns", ()):
            task.cancel()

    async def receive_json(self, content, **kwargs):
        kind = content.get("type") if isinstance(content, dict) else None
        if kind not in ("user_message", "retry"):
            await self.send_json(error_event(CurreChatError("Send {'type': 'user_message', 'content': '...'}.")))
            return
        text = content.get("content")
        if kind == "user_message" and not isinstance(text, str):
            await self.send_json(error_event(CurreChatError("'content' must be text.")))
            return
        try:
            turn = await start_turn_async(self.scope["user"], self.session_id, text, retry=kind == "retry")
        except CurreChatError as exc:
            await self.send_json(error_event(exc))
            return
        task = asyncio.create_task(self._forward(turn))
        self.turns.add(task)
        task.add_done_callback(self.turns.discard)

    async def _forward(self, turn):
        with contextlib.suppress(asyncio.CancelledError):
            async for event in stream_turn(turn):
                await self.send_json(event)
