"""Liveness and readiness for load balancers: cheap, unauthenticated, telling nothing internal."""

from __future__ import annotations

import json

import pytest
from channels.testing import HttpCommunicator

from currechat import probes
from currechat.asgi import application
from kernel import draining
from scripts.redis_stack import free_port

pytestmark = pytest.mark.django_db(transaction=True)


async def probe(path: str, host: bytes = b"10.0.0.7:8001") -> tuple[int, dict]:
    # Asked by address, over plain http: probes pass no host check and no HTTPS redirect.
    communicator = HttpCommunicator(application, "GET", path, headers=[(b"host", host)])
    response = await communicator.get_response()
    return response["status"], json.loads(response["body"])


@pytest.fixture
def serving():
    draining.reset_for_tests()
    probes.forget_for_tests()
    yield
    draining.reset_for_tests()
    probes.forget_for_tests()


async def test_liveness_answers_anyone_with_nothing_internal(serving):
    status, body = await probe("/healthz")
    assert (status, body) == (200, {"status": "alive"})


async def test_readiness_says_ready_when_database_redis_and_queue_answer(serving):
    status, body = await probe("/readyz")
    assert (status, body) == (200, {"status": "ready"})


async def test_readiness_names_redis_and_the_queue_when_they_are_away_without_addresses(serving, settings):
    nowhere = f"redis://:secret@127.0.0.1:{free_port()}/0"
    settings.REDIS_URL = nowhere
    settings.RQ_QUEUES = {name: {"URL": nowhere} for name in settings.TASK_QUEUES}
    status, body = await probe("/readyz")
    assert status == 503
    assert body == {"status": "unavailable", "failing": ["redis", "queue"]}
    assert "secret" not in json.dumps(body) and "127.0.0.1" not in json.dumps(body)


def _pings() -> int:
    """PING commands the Redis server has answered: each readiness check sends them."""
    from kernel.redis_client import get_redis

    return int(get_redis().info("commandstats").get("cmdstat_ping", {}).get("calls", 0))


async def test_a_flood_of_readiness_probes_costs_one_check_per_window(serving, settings):
    import asyncio

    from asgiref.sync import sync_to_async

    settings.READY_CACHE_SECONDS = 0  # every probe checks: what one check costs the Redis server
    # A first check, not counted: a client connection idle for 30 s or more sends redis-py's own
    # health-check PING before its command (kernel/redis_client.py), which the counted ones must not.
    assert await probe("/readyz") == (200, {"status": "ready"})
    before = await sync_to_async(_pings)()
    assert await probe("/readyz") == (200, {"status": "ready"})
    one_check = await sync_to_async(_pings)() - before
    assert one_check >= 1

    settings.READY_CACHE_SECONDS = 60  # a window no test outlasts: the flood falls within it
    probes.forget_for_tests()
    before = await sync_to_async(_pings)()
    answers = await asyncio.gather(*(probe("/readyz") for _ in range(40)))
    assert set(map(json.dumps, answers)) == {json.dumps([200, {"status": "ready"}])}
    # 40 probes at once: one check, not two or more. The count is the Redis server's, so a PING of
    # the process's own background threads may fall into any window: the bounds leave room for one.
    assert await sync_to_async(_pings)() - before < 2 * one_check
    later = await sync_to_async(_pings)()
    assert await probe("/readyz") == (200, {"status": "ready"})
    assert await sync_to_async(_pings)() - later < one_check  # and a later one in the window: no check
    # Draining is never answered from the window.
    draining.begin()
    assert await probe("/readyz") == (503, {"status": "draining"})


async def test_a_draining_process_is_not_ready_but_still_alive(serving):
    draining.begin()
    assert await probe("/readyz") == (503, {"status": "draining"})
    assert await probe("/healthz") == (200, {"status": "alive"})


async def test_a_draining_process_refuses_new_turns_with_a_sentence_to_send_again(serving, student, session):
    from chat.models import Message
    from chat.turn.runner import start_turn_async
    from kernel.errors import ServiceUnavailable

    draining.begin()
    with pytest.raises(ServiceUnavailable, match="restarting; your message was not sent"):
        await start_turn_async(student, session.id, "Hello?")
    assert not await Message.objects.filter(session_id=session.id).aexists()
