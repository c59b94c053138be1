"""The chat websocket: streaming order over the real ASGI app, and who may connect."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from chat.models import Message, MessageStatus
from chat.turn.consumers import CLOSE_NOT_ALLOWED
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn, search_call
from tests.websockets import EVENT_SECONDS, until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("paced", [False, True], ids=["one-wake-up-a-token", "paced-by-the-loop-tick"])
async def test_tokens_arrive_in_order_and_none_is_lost(student, session, ollama, settings, paced):
    if paced:  # as with LOOP_TICK_STREAMS answers streaming at once (kernel/ticks.py)
        settings.LOOP_TICK_STREAMS, settings.LOOP_TICK_MS = 1, 20
    words = [f"w{i} " for i in range(400)]
    mid_answer = threading.Event()  # the model holds word 200 until the test has seen 0-199
    ollama.script(Reply(chunks=words, delay=0.001, gate=mid_answer, gate_after=200))
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    await ws.send_json_to({"type": "user_message", "content": "Count for me"})
    try:
        # Streamed as it comes, not as one block at the end: the first half reaches the page while
        # the model is still in the middle of its answer.
        events: list[dict] = []
        while "".join(e.get("text", "") for e in events) != "".join(words[:200]):
            events.append(json.loads(await ws.receive_from(timeout=EVENT_SECONDS)))
            assert events[-1]["type"] == "token", events[-1]
    finally:
        mid_answer.set()
    events += await receive_turn(ws)
    await ws.disconnect()

    # Tokens that queue up while the server is busy may travel together, never out of order.
    assert {e["type"] for e in events[:-1]} == {"token"} and events[-1]["type"] == "message_done"
    assert "".join(e["text"] for e in events[:-1]) == "".join(words)
    done = events[-1]["message"]
    assert done["content"] == "".join(words) and done["status"] == "complete"
    stored = await database_sync_to_async(Message.objects.get)(pk=done["id"])
    assert stored.content == "".join(words)


async def test_searches_stream_as_tool_call_then_tool_result(student, session, ollama):
    ollama.script(Reply(tool_calls=[search_call("standard error")]), Reply(content="Bigger samples [1]."))
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "Why big samples?"})
    events = await receive_turn(ws)
    await ws.disconnect()
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["tool_call", "tool_result"] and kinds[-1] == "message_done"
    assert events[0]["query"] == "standard error"
    passage = events[1]["passages"][0]
    assert {"file_name", "page", "section", "text"} <= set(passage)
    assert events[-1]["message"]["citations"][0]["n"] == 1


async def test_a_model_failure_ends_the_turn_with_an_error_event(student, session, ollama):
    ollama.script(Reply(content="partial answer that breaks", fail_after=2))
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "Explain"})
    events = await receive_turn(ws)
    error = events[-1]
    assert error["type"] == "error" and error["code"] == "model_failed" and error["retryable"]
    stored = await database_sync_to_async(Message.objects.get)(pk=error["message_id"])
    assert stored.status == MessageStatus.FAILED

    ollama.script(Reply(content="second try works"))
    await ws.send_json_to({"type": "retry"})
    events = await receive_turn(ws)
    await ws.disconnect()
    assert events[-1]["type"] == "message_done" and events[-1]["message"]["content"] == "second try works"


async def test_refusals_are_in_the_students_language(student, session, settings):
    """The browser's language (as on the pages), unless the student saved one with the switcher."""
    settings.CHAT_MAX_MESSAGE_CHARS = 10
    finnish = [(b"accept-language", b"fi-FI,fi;q=0.9,en;q=0.5")]
    ws, _, _ = await connect_ws(student, session.id, headers=finnish)
    await ws.send_json_to({"type": "user_message", "content": "far too long for the limit"})
    too_long = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.send_json_to({"type": "dance"})
    unknown = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert too_long["code"] == "too_long" and too_long["detail"].startswith("Viestissäsi on 26 merkkiä")
    assert unknown["code"] == "bad_request" and unknown["detail"].startswith("Lähetä {'type'")

    student.language = "sv"
    await database_sync_to_async(student.save)()
    ws, _, _ = await connect_ws(student, session.id, headers=finnish)
    await ws.send_json_to({"type": "user_message", "content": "far too long for the limit"})
    saved = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert saved["detail"].startswith("Ditt meddelande har 26 tecken")


async def test_a_refused_message_gets_an_error_event_without_a_message(student, session, settings):
    settings.CHAT_MAX_MESSAGE_CHARS = 10
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "far too long for the limit"})
    event = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.send_json_to({"type": "dance"})
    unknown = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert event["type"] == "error" and event["code"] == "too_long" and event["message_id"] is None
    assert unknown["type"] == "error" and unknown["code"] == "bad_request"
    assert not await database_sync_to_async(session.messages.exists)()


async def test_the_answer_is_stored_even_if_the_student_leaves(student, session, ollama):
    ollama.script(Reply(chunks=[f"t{i} " for i in range(20)], delay=0.02))
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "Long answer please"})
    await ws.receive_json_from(timeout=EVENT_SECONDS)  # the first token
    await ws.disconnect()

    def ended() -> Message | None:
        reply = session.messages.filter(role="assistant").last()
        return reply if reply and reply.status not in (MessageStatus.PENDING, MessageStatus.STREAMING) else None

    reply = await until(database_sync_to_async(ended), "the turn to end after the student left")
    assert reply.status == MessageStatus.COMPLETE and reply.content.startswith("t0 t1")


# Who may connect: the session's student writes, the prompt's teacher reads, nobody else gets in.
WS_ACCESS = {
    "student": "write",
    "owner": "read",
    "other_student": "refused",
    "other_teacher": "refused",
    "co_owner": "refused",
    "anonymous": "refused",
}


@pytest.fixture(params=list(WS_ACCESS))
def visitor(request, session):
    """(who, user): each member of the cast in turn (fixtures are made outside the event loop)."""
    who = request.param
    return who, None if who == "anonymous" else request.getfixturevalue(who)


async def test_only_the_student_and_the_teacher_may_connect(visitor, session, ollama):
    who, user = visitor
    ws, connected, code = await connect_ws(user, session.id)
    if WS_ACCESS[who] == "refused":
        assert not connected and code == CLOSE_NOT_ALLOWED
        return
    assert connected
    ollama.script(Reply(content="hello"))
    await ws.send_json_to({"type": "user_message", "content": "hi"})
    event = await ws.receive_json_from(timeout=EVENT_SECONDS)
    if WS_ACCESS[who] == "read":
        assert event["type"] == "error" and event["code"] == "not_allowed"
        assert not await database_sync_to_async(session.messages.exists)()
    else:
        assert event["type"] == "token"
        await receive_turn(ws)
    await ws.disconnect()


@pytest.mark.slow
async def test_a_websocket_stays_open_while_idle(student, session, ollama):
    """The channel layer polls Redis with a 5 s blocking pop: the client's read timeout must be
    longer, or every socket idle for 5 s is closed with an internal error."""
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    await asyncio.sleep(6)
    ollama.script(Reply(content="still here"))
    await ws.send_json_to({"type": "user_message", "content": "are you there?"})
    events = await receive_turn(ws)
    await ws.disconnect()
    assert events[-1]["type"] == "message_done"


async def test_a_question_is_answered_while_the_shared_sync_thread_is_busy(student, session, ollama):
    """A question goes straight to the turn pool: it never waits for asgiref's one shared thread, which
    other sockets' handshakes and any slow sync call of the process may hold (channels' own dispatch
    sent every websocket message through that thread first)."""
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    ollama.script(Reply(content="Answered all the same."))
    release = threading.Event()
    held = asyncio.ensure_future(sync_to_async(release.wait, thread_sensitive=True)())
    try:
        await ws.send_json_to({"type": "user_message", "content": "Anyone there?"})
        events = await receive_turn(ws, timeout=EVENT_SECONDS)
    finally:
        release.set()
        await held
    await ws.disconnect()
    assert events[-1]["type"] == "message_done"
    assert events[-1]["message"]["content"] == "Answered all the same."


async def test_fast_tokens_travel_together_and_slow_ones_as_they_come(student, session, ollama):
    """Frames of ~25 ms (chat/turn/runner.FRAME_SECONDS): a fast model's tokens share frames, a slow
    model's each go out at once; the text is the same either way."""
    fast = [f"f{i} " for i in range(200)]
    slow = [f"s{i} " for i in range(5)]
    ollama.script(Reply(chunks=fast), Reply(chunks=slow, delay=0.15))
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "Fast"})
    fast_events = await receive_turn(ws)
    await ws.send_json_to({"type": "user_message", "content": "Slow"})
    slow_events = await receive_turn(ws)
    await ws.disconnect()

    fast_frames = [e["text"] for e in fast_events if e["type"] == "token"]
    slow_frames = [e["text"] for e in slow_events if e["type"] == "token"]
    assert "".join(fast_frames) == "".join(fast) and len(fast_frames) <= len(fast) // 2
    assert "".join(slow_frames) == "".join(slow) and len(slow_frames) >= 3
