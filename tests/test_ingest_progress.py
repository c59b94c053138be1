"""Live progress over /ws/collections/{id}/: only the collection's teachers hear it, and it moves."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from tests.fixtures_ingest import upload
from tests.websockets import EVENT_SECONDS, open_websocket

pytestmark = pytest.mark.django_db(transaction=True)


async def connect(user, collection_id: int) -> tuple[WebsocketCommunicator, bool, int | None]:
    return await open_websocket(user, f"/ws/collections/{collection_id}/")


@pytest.fixture
def people(owner, co_owner, other_teacher, enrolled_student):
    return {"owner": owner, "co_owner": co_owner, "other_teacher": other_teacher, "enrolled_student": enrolled_student}


@pytest.mark.parametrize(
    ("who", "allowed"),
    [("owner", True), ("co_owner", True), ("other_teacher", False), ("enrolled_student", False), (None, False)],
)
async def test_only_the_collections_teachers_can_watch_progress(who, allowed, people, fast_collection):
    user = people.get(who)
    communicator, connected, code = await connect(user, fast_collection.pk)
    assert connected == allowed
    if not allowed:
        assert code == 4403
    await communicator.disconnect()


async def test_a_refused_socket_ends_as_soon_as_its_browser_goes(collection):
    """Refused at once, the consumer's channel-layer receive is cancelled while it still connects to
    Redis; it must end, not poll Redis on (Python 3.11 lost that cancel: kernel/channel_layer.py)."""
    from currechat.asgi import application

    path = f"/ws/collections/{collection.pk}/"
    communicator = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://127.0.0.1")])
    assert await communicator.connect(timeout=EVENT_SECONDS) == (False, 4403)
    await communicator.send_input({"type": "websocket.disconnect", "code": 4403})
    ended, _ = await asyncio.wait([communicator.future], timeout=EVENT_SECONDS)
    await communicator.wait()  # cancels the consumer if it is still there
    assert ended, "the refused socket's consumer was still waiting on Redis"


async def test_progress_events_move_from_queued_to_ready(fast_collection, owner, client_for):
    communicator, connected, _ = await connect(owner, fast_collection.pk)
    assert connected
    text = ("# Waves\n\n" + "A wave carries energy without carrying matter. " * 300).encode()

    def ingest() -> int:
        from collections_app.lifecycle import run_ingest

        file_id = upload(client_for(owner), fast_collection, text, "waves.md").json()["id"]
        # The queued job's body, run here: RQ's worker needs the main thread, which the event loop holds.
        run_ingest(file_id, attempt=1)
        return file_id

    file_id = await sync_to_async(ingest)()
    events = []
    while not events or events[-1]["status"] not in ("ready", "failed"):
        events.append(json.loads(await communicator.receive_from(timeout=EVENT_SECONDS)))
    await communicator.disconnect()

    assert {e["file_id"] for e in events} == {file_id}
    assert events[0]["status"] == "queued"
    progress = [e["progress"] for e in events if e["status"] == "processing"]
    assert progress and progress == sorted(progress), "the bar only moves forward"
    assert any("made searchable" in e["detail"] for e in events)
    # The bar is drawn from `done` of `total`: the very numbers the text states ("15 of 55 passages").
    counted = [e for e in events if re.match(r"\d+ of \d+ passages made searchable", e["detail"])]
    assert counted and all(
        [e["done"], e["total"]] == [int(n) for n in re.findall(r"\d+", e["detail"])] for e in counted
    )
    assert all(e["done"] is None for e in events if e["status"] != "processing")
    assert events[-1]["status"] == "ready" and events[-1]["progress"] == 100 and events[-1]["chunk_count"] > 5
