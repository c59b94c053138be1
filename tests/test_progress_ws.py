"""`/ws/collections/{id}/` forwards ingestion progress to the collection's owners and no one else."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from collections_app.models import SourceFile
from collections_app.progress import file_event, publish
from currechat.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(user, collection_id: int) -> tuple[WebsocketCommunicator, bool]:
    headers = [(b"origin", b"http://127.0.0.1")]
    if user is not None:
        client = Client()
        await database_sync_to_async(client.force_login)(user)
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        headers.append((b"cookie", cookie.encode()))
    communicator = WebsocketCommunicator(application, f"/ws/collections/{collection_id}/", headers=headers)
    connected, _ = await communicator.connect()
    return communicator, connected


async def test_owner_and_co_owner_receive_progress(owner, co_owner, collection):
    source = await database_sync_to_async(SourceFile.objects.create)(
        collection=collection, original_name="notes.md", file_type="markdown", size=10, sha256="a" * 64, progress=40
    )
    watchers = [await connect(owner, collection.id), await connect(co_owner, collection.id)]
    assert all(ok for _, ok in watchers)
    await database_sync_to_async(publish)(collection.id, file_event(source, detail="page 4 of 10"))
    for communicator, _ in watchers:
        event = await communicator.receive_json_from(timeout=5)
        assert event["file_id"] == source.id and event["progress"] == 40 and event["detail"] == "page 4 of 10"
        await communicator.disconnect()


@pytest.fixture(params=["other_teacher", "student", "anonymous"])
def outsider(request, prompt):
    return None if request.param == "anonymous" else request.getfixturevalue(request.param)


async def test_outsiders_cannot_watch_a_collection(outsider, collection):
    user = outsider
    communicator, connected = await connect(user, collection.id)
    assert not connected
    await communicator.disconnect()
