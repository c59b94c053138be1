"""Model streams, read by one event loop per process.

A chat answer streams from the model server a token per line (Ollama's NDJSON, the OpenAI
protocol's server-sent events), each line its own HTTP chunk. Read by an HTTP client in the turn's
own thread, every token woke that thread and went through the client's pure-Python HTTP/1.1
parsing: with 200 answers streaming, about 230 µs of CPU per token, most of a web process's work
(docs/BENCHMARKS.md, "Reading the model's stream"). Here all the streams of a process are read by
one asyncio loop (`http1`: HTTP/1.1 parsed by httptools, keep-alive, TLS, timeouts): the ASGI
server's own once its websocket edge has run (`serve_on`), else one in a thread of its own (workers,
commands). Each line is decoded on that loop by the protocol's decoder (`decoders`) and its text goes
on from there to the caller's `on_text`, so the thread that asked waits, asleep, until its round ends.

A model server behind an HTTP proxy (the proxy variables name one for its address) is not read
here: its provider reads it through httpx in the calling thread (`proxied`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import queue
import threading
import urllib.request
import weakref
from collections.abc import Iterable, Iterator
from urllib.parse import urlsplit

from kernel.errors import settled, translate_when_read
from kernel.threads import spawn
from rag.providers import failures, http1
from rag.providers.base import ChatEvent, TextDelta, TextSink, Waiting
from rag.providers.streams import Abandoned, Decoder, Refusal, Request

log = logging.getLogger(__name__)

# While nothing arrives, a waiting thread is handed a `Waiting` this often anyway, to check its
# reasons to stop; at once after `wake_waiting`. Not more often: with 200 answers streaming, waking
# each thread twice a second cost a third as much CPU as reading all their tokens.
WAITING_SECONDS = 5.0


def proxied(url: str) -> bool:
    """Whether the proxy variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, and NO_PROXY) send requests
    for `url` through a proxy. Read at each request by the standard library's own helpers, the ones
    httpx reads the variables with: where its NO_PROXY matching differs from httpx's (`localhost,*`,
    a bare IPv6 address), it says "proxied" and the answer goes through httpx, which then decides;
    never the other way round (docs/ARCHITECTURE.md, "Library decisions")."""
    proxies = urllib.request.getproxies_environment()
    parts = urlsplit(url)
    if not (proxies.get(parts.scheme.lower()) or proxies.get("all")):
        return False
    # With a proxy variable set, `proxy_bypass` is `proxy_bypass_environment` on every platform (the
    # system's settings are asked only when no variable is), and it is the one typeshed knows.
    return not urllib.request.proxy_bypass(parts.netloc.rpartition("@")[2])


def serve_on(loop: asyncio.AbstractEventLoop) -> None:
    """Read this process's model streams on `loop` from now on: the ASGI server's own, called from
    its edge on that loop, so the text reaches the websockets without crossing threads (with 200
    answers streaming, a second loop in its own thread took a third more CPU per token). While that
    loop is not running (a test's, ended), streams are read on a loop of their own again."""
    if _reader.adopted is not loop:
        _reader.adopt(loop)


def wake_waiting() -> None:
    """Hand every thread of this process that waits for a model stream a `Waiting` now: a Stop or
    a shutdown was just asked for, and its model may be silent (reading a long prompt)."""
    _reader.wake()


def stream(
    request: Request, decoder: Decoder, refusal: Refusal, on_text: TextSink | None = None
) -> Iterator[ChatEvent]:
    """The events of one streamed reply, read by the process's loop (the contract of
    `ChatModel.stream`, `on_text` included). The request is sent when iteration starts."""
    reading = _Reading(request, decoder, refusal, on_text)
    _reader.submit(reading)
    try:
        # Once at once: a Stop asked for before the request was on its way (which `wake_waiting`
        # could not reach) is seen now, not at the first token or after WAITING_SECONDS.
        yield Waiting()
        while True:
            try:
                item = reading.events.get(timeout=WAITING_SECONDS)
            except queue.Empty:
                if reading.loop is not None and not reading.loop.is_running():
                    raise settled(failures.reader_stopped()) from None
                yield Waiting()
                continue
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise settled(item)  # its sentence in this thread's language, the asker's
            yield item
    finally:
        reading.close()
        _reader.forget(reading)


_END = object()


class _Reading:
    """One request, between the loop that reads its answer and the thread that waits for it."""

    def __init__(self, request: Request, decoder: Decoder, refusal: Refusal, on_text: TextSink | None):
        self.request, self.decoder, self.refusal, self.on_text = request, decoder, refusal, on_text
        self.raw = http1.request_bytes(request)  # here, in the caller's thread: a bad setting raises to it
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()  # held while `on_text` runs, and by `close`
        self.closed = False  # by the waiting thread: nothing more is delivered
        self.over = False  # on the loop: the answer ended (complete, failed or abandoned)
        self.connection: http1.Connection | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.sent_again = False  # once, on a new connection, after one closed before answering

    # On the loop -------------------------------------------------------------------------------
    def deliver(self, events: Iterable[ChatEvent]) -> None:
        for event in events:
            if self.on_text is not None and type(event) is TextDelta:
                with self.lock:
                    if self.closed:
                        raise Abandoned
                    self.on_text(event.text)
            else:
                self.events.put(event)

    def finish(self) -> None:
        if not self.over:
            self.over = True
            self.events.put(_END)

    def fail(self, error: BaseException) -> None:
        if not self.over:
            self.over = True
            self.events.put(error)

    # In the waiting thread ----------------------------------------------------------------------
    def close(self) -> None:
        """No text reaches `on_text` once this returns; an unfinished answer's connection is dropped,
        so the server sees it go and stops generating."""
        with self.lock:
            self.closed = True
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._abandon)

    def _abandon(self) -> None:
        if not self.over:
            self.over = True
            if self.connection is not None:
                self.connection.drop()


class _Loop:
    """Where this process reads its model streams: the loop of the ASGI server that serves its
    websockets when there is one (`serve_on`), so a token reaches the student's socket without
    crossing threads; else a loop of its own, in a daemon thread started on first use (again in a
    forked child: threads do not survive a fork). A pool of connections per loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self.own: asyncio.AbstractEventLoop | None = None
        self.adopted: asyncio.AbstractEventLoop | None = None
        self.pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, http1.Pool] = weakref.WeakKeyDictionary()
        self.waiting: set[_Reading] = set()

    def adopt(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            self._forked()
            self.adopted = loop

    def submit(self, reading: _Reading) -> None:
        with self._lock:
            self._forked()
            loop = self.adopted if self.adopted is not None and self.adopted.is_running() else None
            if loop is None:
                if self.own is None:
                    self.own = _new_loop()
                    spawn("model-streams", _serve, self.own)
                loop = self.own
            pool = self.pools.get(loop)
            if pool is None:
                pool = self.pools[loop] = http1.Pool(loop)
            self.waiting.add(reading)
        reading.loop = loop
        loop.call_soon_threadsafe(pool.send, reading)

    def _forked(self) -> None:
        """In a forked child, none of the parent's loops run (under the lock)."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self.own = self.adopted = None
            self.pools = weakref.WeakKeyDictionary()
            self.waiting = set()

    def forget(self, reading: _Reading) -> None:
        with self._lock:
            self.waiting.discard(reading)

    def wake(self) -> None:
        with self._lock:
            readings = list(self.waiting)
        for reading in readings:
            reading.events.put(Waiting())


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    loop.run_forever()


def _on_a_reading_loop() -> bool:
    """Whether the code running now runs on a loop that reads model streams (for everyone: its
    errors are translated by each asker, `settled`)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    return loop is _reader.own or loop is _reader.adopted


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvloop is faster; any asyncio loop reads the same
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


_reader = _Loop()
translate_when_read(_on_a_reading_loop)


def decoded(lines: Iterable[str], decoder: Decoder) -> Iterator[ChatEvent]:
    """The events of a reply read in the calling thread (a proxied server: `proxied`), by the
    same decoder the loop would use."""
    for line in lines:
        yield from decoder.line(line)
        if decoder.finished:
            break
    yield from decoder.end()
