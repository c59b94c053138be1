"""`/ws/collections/{id}/`: live ingestion progress. Authenticates, checks permission, forwards.

Every event is checked against the current state before it is forwarded: the browser session the
socket was opened with still signs the user in (not signed out, deactivated, nor its password
changed since) and the user may still edit the collection. Otherwise the socket is closed.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from access.rules import get_collection_for_edit
from collections_app.progress import group_name
from kernel.errors import CurreChatError
from kernel.sessions import signed_in

# Close codes in the application range, so the page can tell "not allowed" from a network drop.
CLOSE_NOT_ALLOWED = 4403


class CollectionProgressConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        self.collection_id = self.scope["url_route"]["kwargs"]["collection_id"]
        try:
            await database_sync_to_async(get_collection_for_edit)(self.scope["user"], self.collection_id)
        except CurreChatError:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.group = group_name(self.collection_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data=None, bytes_data=None, **kwargs):
        """The socket only listens: what a browser sends is ignored, JSON or not (channels' own
        decoding would end the consumer with a server error on a frame that is not JSON)."""

    async def progress_event(self, message):
        if not await database_sync_to_async(self._may_watch)():
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        await self.send_json(message["event"])

    def _may_watch(self) -> bool:
        """Whether the socket's user, as they are now, may still hear the collection's progress."""
        user = self.scope["user"]
        session = self.scope.get("session")
        if session is not None:  # a browser session (a test client may pass a user without one)
            now = signed_in(session.session_key, user.pk)  # the key it was opened with (kernel/sessions.py)
            if now is None:
                return False
            user = now.user
        try:
            get_collection_for_edit(user, self.collection_id)
        except CurreChatError:
            return False
        return True
