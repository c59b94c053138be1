"""`/ws/collections/{id}/`: live ingestion progress. Authenticates, checks permission, forwards."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from access.rules import get_collection_for_edit
from collections_app.progress import group_name
from kernel.errors import CurreChatError

# Close codes in the application range, so the page can tell "not allowed" from a network drop.
CLOSE_NOT_ALLOWED = 4403


class CollectionProgressConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        collection_id = self.scope["url_route"]["kwargs"]["collection_id"]
        try:
            await database_sync_to_async(get_collection_for_edit)(self.scope["user"], collection_id)
        except CurreChatError:
            await self.close(code=CLOSE_NOT_ALLOWED)
            return
        self.group = group_name(collection_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def progress_event(self, message):
        await self.send_json(message["event"])
