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

from access.rules import current, get_session_for_write
from chat.models import Message
from chat.turn.agent import run_turn, start_turn
from chat.turn.attachments import Attachment
from chat.turn.events import CallbackSink, ChatEventOut, ErrorEvent, TokenEvent
from chat.turn.state import Turn
from kernel import draining, threads, ticks
from kernel.errors import CurreChatError, NotAuthenticated, ServiceUnavailable
from kernel.sessions import signed_in
from rag.providers import wire

_executor: ThreadPoolExecutor | None = None


def executor() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = threads.pool("chat-turn", settings.CHAT_WORKER_THREADS)
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
    The streamed text comes from the model-stream reader, which reads on this same loop
    (`wire.serve_on`): it is delivered at once, after whatever the turn threads sent before it.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self._loop = loop
        self._thread = threading.get_ident()  # the loop's
        self._lock = threading.Lock()
        self._pending: list[tuple[_Stream, ChatEventOut | None]] = []
        self._scheduled = False

    def emit(self, stream: _Stream, event: ChatEventOut | None) -> None:  # any thread
        if threading.get_ident() == self._thread:
            self._deliver_now(stream, event)
            return
        with self._lock:
            self._pending.append((stream, event))
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._deliver)

    def _deliver_now(self, stream: _Stream, event: ChatEventOut | None) -> None:  # the loop
        with self._lock:
            batch, self._pending = self._pending, []  # the batch's `_deliver` finds nothing left
        self._hand([*batch, (stream, event)])

    def _deliver(self) -> None:  # the loop
        with self._lock:
            batch, self._pending, self._scheduled = self._pending, [], False
        self._hand(batch)

    @staticmethod
    def _hand(batch: list[tuple[_Stream, ChatEventOut | None]]) -> None:  # the loop
        for stream, event in batch:
            stream.items.append(event)
            stream.ready.set()


# Tokens go out in frames: a frame at most every FRAME_SECONDS, or as soon as FRAME_TOKENS tokens
# wait, whichever comes first; the first token of a turn (and every token after a pause) goes at
# once. Below ~40 frames a second a page shows no difference, while each frame costs the server a
# JSON encoding and a websocket write: with many chats streaming fast, most of its CPU per token.
FRAME_SECONDS = 0.025
FRAME_TOKENS = 8


class _Stream:
    """One turn's events on the loop side."""

    def __init__(self) -> None:
        self.items: list[ChatEventOut | None] = []
        self.ready = asyncio.Event()

    async def next_batch(self, timeout: float | None = None) -> list[ChatEventOut | None]:
        """The events that arrived; with `timeout`, possibly none when it passed first."""
        if timeout is not None and not self.ready.is_set():
            # A timer rather than asyncio.wait_for: no task per wait, and a wait per frame is often.
            timer = asyncio.get_running_loop().call_later(timeout, self.ready.set)
            await self.ready.wait()
            timer.cancel()
        else:
            await self.ready.wait()
        self.ready.clear()
        batch, self.items = self.items, []
        return batch


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Hub] = weakref.WeakKeyDictionary()


def _hub() -> _Hub:
    loop = asyncio.get_running_loop()
    if loop not in _hubs:  # the loop's first turn: its hub, and its tick (kernel/ticks.py)
        _hubs[loop] = _Hub(loop)
        ticks.pace(loop, _many_streaming, settings.LOOP_TICK_MS / 1000)
    return _hubs[loop]


async def stream_turn(turn: Turn) -> AsyncIterator[ChatEventOut]:
    """Run the turn in a pool thread and yield its events as they happen.

    Consecutive tokens travel together in frames (FRAME_SECONDS, FRAME_TOKENS): same text, same
    order, fewer frames. Any other event first sends the tokens held before it.

    If the caller stops listening (the browser went away), the turn still runs to the end and is
    stored, so the student finds the answer when they come back.
    """
    loop = asyncio.get_running_loop()
    wire.serve_on(loop)  # the model's text is read on this loop, where its websocket is written
    hub, stream = _hub(), _Stream()
    sink = CallbackSink(lambda event: hub.emit(stream, event))
    future = loop.run_in_executor(executor(), _run_in_thread, turn, sink)
    # After the thread's last event: the end marker.
    future.add_done_callback(lambda _f: hub.emit(stream, None))
    frame = _Frame()
    last_sent = -FRAME_SECONDS
    global _streaming
    _streaming += 1
    try:
        while True:
            wait = None if frame.empty else max(0.0, last_sent + FRAME_SECONDS - loop.time())
            for event in await stream.next_batch(wait):
                if event is not None and event["type"] == "token" and frame.takes(event):
                    continue
                if not frame.empty:
                    yield frame.take()
                    last_sent = loop.time()
                if event is None:
                    future.result()
                    return
                if event["type"] == "token":
                    frame.takes(event)  # a token of another message starts a new frame
                else:
                    yield event
                    last_sent = loop.time()
            if not frame.empty and (frame.count >= FRAME_TOKENS or loop.time() - last_sent >= FRAME_SECONDS):
                yield frame.take()
                last_sent = loop.time()
    finally:
        _streaming -= 1


# Answers streaming on this process's loop (changed on the loop only): from LOOP_TICK_STREAMS on,
# the loop wakes at most once every LOOP_TICK_MS (kernel/ticks.py).
_streaming = 0


def _many_streaming() -> bool:
    return _streaming >= settings.LOOP_TICK_STREAMS


class _Frame:
    """Tokens of one message waiting to go out together."""

    def __init__(self) -> None:
        self.message_id: int | None = None
        self.parts: list[str] = []

    @property
    def empty(self) -> bool:
        return not self.parts

    @property
    def count(self) -> int:
        return len(self.parts)

    def takes(self, event: TokenEvent) -> bool:
        """Hold the token; False when it belongs to another message than the tokens held."""
        if self.parts and event["message_id"] != self.message_id:
            return False
        self.message_id = event["message_id"]
        self.parts.append(event["text"])
        return True

    def take(self) -> TokenEvent:
        assert self.message_id is not None
        event: TokenEvent = {"type": "token", "message_id": self.message_id, "text": "".join(self.parts)}
        self.parts = []
        return event


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
    fresh: bool = False,
) -> Turn:
    """Permission check and `start_turn`, for the async edges (one sync call, one DB thread hop).
    `model` is the student's choice of the prompt's models (chat/course/model_choice.py); `fresh`:
    `user` was read from the database for this message already (not read again)."""
    if draining.draining():
        # Shutting down: the server closes this socket meanwhile, and the page reconnects through
        # the proxy to a process that takes the message (nothing of it was stored here).
        raise ServiceUnavailable(_("This server is restarting; your message was not sent. Send it again in a moment."))
    # The user as they are now: a websocket keeps the user of its handshake, who may have been
    # deactivated or demoted since.
    session = get_session_for_write(user if fresh and user.is_active else current(user), session_id)
    try:
        return start_turn(session, content, retry=retry, regenerate=regenerate, attachment=attachment, model=model)
    except redis.RedisError as exc:  # the rate limit and the turn lock live in Redis
        raise ServiceUnavailable(
            _("The chat service cannot reach Redis right now; your message was not sent. Try again in a moment.")
        ) from exc


class SignedOut(NotAuthenticated):
    """The browser session of a websocket no longer signs its user in."""


def _signed_in_user(user, browser):
    """The socket's user as they are now, if its browser `session` (None: a token-less test client)
    still signs them in: a sign-out, deactivation or password change refuses the next message, as
    it ends the browser's next request. Read here, in the turn's own thread hop: one read of the
    user serves both this check and the permission check after it."""
    if browser is None:
        return user, False
    signed = signed_in(browser.session_key, user.pk)
    if signed is None:
        raise SignedOut(_("You were signed out. Log in again to continue."))
    return signed.user, True


def _start_in_thread(
    user, browser, session_id: int, content: str | None, retry: bool, regenerate: bool, model: str | None, language: str
) -> Turn:
    close_old_connections()
    try:
        with translation.override(language):  # a pool thread inherits no language of its own
            user, fresh = _signed_in_user(user, browser)
            return start_turn_for(
                user, session_id, content, retry=retry, regenerate=regenerate, model=model, fresh=fresh
            )
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
    browser=None,
) -> Turn:
    """`start_turn_for` on the turn pool, for the websocket's user signed in by its `browser`
    session (raises SignedOut when it signs them in no more). Not channels' `database_sync_to_async`: that runs every
    consumer's calls on one shared thread, so with many chats busy, new questions queued behind
    each other for seconds before reaching the model."""
    loop = asyncio.get_running_loop()
    language = translation.get_language() or settings.LANGUAGE_CODE
    return await loop.run_in_executor(
        executor(), _start_in_thread, user, browser, session_id, content, retry, regenerate, model, language
    )


def error_event(exc: CurreChatError) -> ErrorEvent:
    """An `error` event for a turn refused before it started."""
    return {"type": "error", "message_id": None, "code": exc.code, "detail": str(exc), "retryable": exc.retryable}
