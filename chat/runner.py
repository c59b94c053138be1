"""Running a turn from async code: the websocket consumer and the `text/event-stream` API.

The agent loop is synchronous and waits on the model server for most of a turn, so each turn gets
a thread from a pool sized for many concurrent chats (asgiref's default pool has only a handful
of threads, which would queue the 7th concurrent student behind the first six). Events cross back
to the event loop in order through `call_soon_threadsafe` into an asyncio queue.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.utils import translation
from django.utils.translation import gettext as _

from chat.agent import Turn, run_turn, start_turn
from chat.attachments import Attachment
from chat.events import CallbackSink, ChatEventOut, ErrorEvent
from chat.models import Message
from currechat import draining
from currechat.errors import CurreChatError, ServiceUnavailable

_executor: ThreadPoolExecutor | None = None


def executor() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(max_workers=settings.CHAT_WORKER_THREADS, thread_name_prefix="chat-turn")
    return _executor


def _run_in_thread(turn: Turn, sink: CallbackSink):
    close_old_connections()
    try:
        return run_turn(turn, sink)
    finally:
        close_old_connections()  # this pool thread's DB connection, as Django's request cycle would


class _Hub:
    """Carries events from turn threads to one event loop, in order per turn.

    Threads wake the loop once per batch, for all chats together, not once per token: with many
    chats streaming, a wake-up per token cost more CPU than everything else done for the token.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: list[tuple[_Stream, ChatEventOut | None]] = []
        self._scheduled = False

    def emit(self, stream: _Stream, event: ChatEventOut | None) -> None:  # any thread
        with self._lock:
            self._pending.append((stream, event))
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:  # the loop
        with self._lock:
            batch, self._pending, self._scheduled = self._pending, [], False
        for stream, event in batch:
            stream.items.append(event)
            stream.ready.set()


class _Stream:
    """One turn's events on the loop side."""

    def __init__(self) -> None:
        self.items: list[ChatEventOut | None] = []
        self.ready = asyncio.Event()

    async def next_batch(self) -> list[ChatEventOut | None]:
        await self.ready.wait()
        self.ready.clear()
        batch, self.items = self.items, []
        return batch


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Hub] = weakref.WeakKeyDictionary()


def _hub() -> _Hub:
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = _Hub(loop)
    return _hubs[loop]


async def stream_turn(turn: Turn) -> AsyncIterator[ChatEventOut]:
    """Run the turn in a pool thread and yield its events as they happen.

    When the server falls behind (many chats streaming at once), the tokens that queued up meanwhile
    go out as one `token` event: same text, same order, fewer frames, so a busy server catches up
    instead of falling further behind. An idle server still sends every token as it comes.

    If the caller stops listening (the browser went away), the turn still runs to the end and is
    stored, so the student finds the answer when they come back.
    """
    hub, stream = _hub(), _Stream()
    sink = CallbackSink(lambda event: hub.emit(stream, event))
    future = asyncio.get_running_loop().run_in_executor(executor(), _run_in_thread, turn, sink)
    # After the thread's last event: the end marker.
    future.add_done_callback(lambda _f: hub.emit(stream, None))
    while True:
        for event in coalesce_tokens(await stream.next_batch()):
            if event is None:
                future.result()
                return
            yield event


def coalesce_tokens(events: list[ChatEventOut | None]) -> list[ChatEventOut | None]:
    """Merge runs of consecutive `token` events of one message into one event (order kept)."""
    merged: list[ChatEventOut | None] = []
    for event in events:
        last = merged[-1] if merged else None
        if (
            event is not None
            and last is not None
            and event["type"] == "token"
            and last["type"] == "token"
            and last["message_id"] == event["message_id"]
        ):
            merged[-1] = {**last, "text": last["text"] + event["text"]}
        else:
            merged.append(event)
    return merged


async def run_turn_async(turn: Turn, sink) -> Message:
    """Run the whole turn for a request that answers when it is done (the JSON API).

    Thread-sensitive on purpose: Django's ASGI handler gives every request its own sync thread,
    so this blocks no other request, and the request cycle manages that thread's DB connection.
    """
    return await sync_to_async(run_turn, thread_sensitive=True)(turn, sink)


def start_turn_for(
    user,
    session_id: int,
    content: str | None,
    *,
    retry: bool = False,
    regenerate: bool = False,
    attachment: Attachment | None = None,
    model: str | None = None,
) -> Turn:
    """Permission check and `start_turn`, for the async edges (one sync call, one DB thread hop).
    `model` is the student's choice of the prompt's models (chat/model_choice.py)."""
    from accounts.permissions import current, get_session_for_write

    if draining.draining():
        # Shutting down: the server closes this socket meanwhile, and the page reconnects through
        # the proxy to a process that takes the message (nothing of it was stored here).
        raise ServiceUnavailable(_("This server is restarting; your message was not sent. Send it again in a moment."))
    # The user as they are now: a websocket keeps the user of its handshake, who may have been
    # deactivated or demoted since.
    session = get_session_for_write(current(user), session_id)
    try:
        return start_turn(session, content, retry=retry, regenerate=regenerate, attachment=attachment, model=model)
    except redis.RedisError as exc:  # the rate limit and the turn lock live in Redis
        raise ServiceUnavailable(
            _("The chat service cannot reach Redis right now; your message was not sent. Try again in a moment.")
        ) from exc


def _start_in_thread(
    user, session_id: int, content: str | None, retry: bool, regenerate: bool, model: str | None, language: str
) -> Turn:
    close_old_connections()
    try:
        with translation.override(language):  # a pool thread inherits no language of its own
            return start_turn_for(user, session_id, content, retry=retry, regenerate=regenerate, model=model)
    finally:
        close_old_connections()


async def start_turn_async(
    user,
    session_id: int,
    content: str | None,
    *,
    retry: bool = False,
    regenerate: bool = False,
    model: str | None = None,
) -> Turn:
    """`start_turn_for` on the turn pool. Not channels' `database_sync_to_async`: that runs every
    consumer's calls on one shared thread, so with many chats busy, new questions queued behind
    each other for seconds before reaching the model."""
    loop = asyncio.get_running_loop()
    language = translation.get_language() or settings.LANGUAGE_CODE
    return await loop.run_in_executor(
        executor(), _start_in_thread, user, session_id, content, retry, regenerate, model, language
    )


def error_event(exc: CurreChatError) -> ErrorEvent:
    """An `error` event for a turn refused before it started."""
    return {"type": "error", "message_id": None, "code": exc.code, "detail": str(exc), "retryable": exc.retryable}
