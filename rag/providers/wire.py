"""Model streams, read by one event loop per process.

A chat answer streams from the model server a token per line (Ollama's NDJSON, the OpenAI
protocol's server-sent events), each line its own HTTP chunk. Read by an HTTP client in the turn's
own thread, every token woke that thread and went through the client's pure-Python HTTP/1.1
parsing: with 200 answers streaming, about 230 µs of CPU per token, most of a web process's work
(docs/BENCHMARKS.md, "Reading the model's stream"). Here all the streams of a process are read by
one asyncio loop in a thread of its own, their HTTP parsed by httptools (C; uvicorn's parser), and
each line decoded on that loop by the protocol's decoder. Text goes on from there to the caller's
`on_text`, so the thread that asked waits, asleep, until its round ends.

Plain HTTP/1.1 POST with keep-alive (a pool of idle connections per server), TLS with the
process's one context, a connect timeout and a read timeout (the longest silence), as the httpx
clients had. A model server behind an HTTP proxy (the proxy variables name one for its address) is
not read here: its provider reads it through httpx in the calling thread (`proxied`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import logging
import os
import queue
import ssl
import threading
import urllib.request
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote, unquote, urlsplit

import certifi
import httptools
import orjson
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernel.errors import ProviderError, Sentence, settled, translate_when_read
from rag.providers.base import ChatEvent, TextDelta, TextSink, Waiting

log = logging.getLogger(__name__)

# While nothing arrives, a waiting thread is handed a `Waiting` this often anyway, to check its
# reasons to stop; at once after `wake_waiting`. Not more often: with 200 answers streaming, waking
# each thread twice a second cost a third as much CPU as reading all their tokens.
WAITING_SECONDS = 5.0
# A refusal's body is read up to this size for its message; the rest is not needed.
MAX_ERROR_BODY = 64 * 1024
# Idle keep-alive connections kept per server (more than the busiest moment's streams are closed).
MAX_IDLE = 256


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA bundle (~35 ms of CPU)."""
    return ssl.create_default_context(cafile=certifi.where())


def loads(raw: str) -> Any:
    """One line's JSON: orjson (about 4x faster than the standard library, per token), and the
    standard library for what orjson refuses (NaN, numbers past 64 bits). Raises ValueError."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def proxied(url: str) -> bool:
    """Whether the proxy variables (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, and NO_PROXY) send requests
    for `url` through a proxy, as httpx would. Read at each request, cheaply: two lookups when none is set."""
    parts = urlsplit(url)
    env = os.environ
    names = (f"{parts.scheme.lower()}_proxy", "all_proxy")
    if not any(env.get(name) or env.get(name.upper()) for name in names):
        return False
    no_proxy = env.get("no_proxy") or env.get("NO_PROXY") or ""
    return not urllib.request.proxy_bypass_environment(parts.netloc, {"no": no_proxy})


# The sentences of a failed connection, the same for every protocol. Made on the reader's thread,
# which has no user's language, they are translated when read (`Sentence`), in the asker's.
def unreachable(host: str) -> ProviderError:
    sentence = Sentence(gettext_lazy("The model server at %(host)s cannot be reached."), host=host)
    return ProviderError(sentence, reason="unreachable")


def timed_out(host: str) -> ProviderError:
    return ProviderError(
        Sentence(gettext_lazy("The model server at %(host)s did not answer in time."), host=host), reason="timeout"
    )


def not_http(host: str) -> ProviderError:
    sentence = Sentence(
        gettext_lazy("The model server at %(host)s sent an answer that is not HTTP; check its address."), host=host
    )
    return ProviderError(sentence, reason="unreadable")


def cut() -> ProviderError:
    sentence = Sentence(gettext_lazy("The model server closed the answer before it was finished."))
    return ProviderError(sentence, reason="cut")


def failed(error: object, *, retryable: bool = True) -> ProviderError:
    """The server's own report of a failure, mid-answer or as its refusal."""
    sentence = Sentence(gettext_lazy("The model server failed: %(error)s."), error=error)
    return ProviderError(sentence, retryable=retryable)


class Decoder(Protocol):
    """A protocol's reading of one streamed reply, line by line (without the line's end)."""

    finished: bool  # the reply said it is complete: what follows is not read

    def line(self, line: str) -> Iterable[ChatEvent]:
        """The events of one line; raises ProviderError when the server reports an error."""
        ...

    def end(self) -> Iterable[ChatEvent]:
        """The last events, at the reply's end; raises ProviderError when it was cut short."""
        ...


class Refusal(Protocol):
    def __call__(self, status: int, body: str) -> ProviderError:
        """A non-200 answer as the protocol's sentence."""
        ...


@dataclass(frozen=True)
class Request:
    url: str  # absolute http(s) URL
    body: bytes  # JSON
    headers: tuple[tuple[str, str], ...]
    connect_timeout: float
    read_timeout: float  # the longest silence allowed while the answer is awaited or streams
    host: str  # the server as the sentences name it (OLLAMA_HOST, OPENAI_BASE_URL)


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
        self.raw = _request_bytes(request)  # here, in the caller's thread: a bad setting raises to it
        self.events: queue.SimpleQueue = queue.SimpleQueue()
        self.lock = threading.Lock()  # held while `on_text` runs, and by `close`
        self.closed = False  # by the waiting thread: nothing more is delivered
        self.over = False  # on the loop: the answer ended (complete, failed or abandoned)
        self.connection: _Connection | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    # On the loop -------------------------------------------------------------------------------
    def deliver(self, events: Iterable[ChatEvent]) -> None:
        for event in events:
            if self.on_text is not None and type(event) is TextDelta:
                with self.lock:
                    if self.closed:
                        raise _Abandoned
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


class _Abandoned(Exception):  # noqa: N818 — the reader closed the stream; not an error to report
    pass


class _Connection(asyncio.Protocol):
    """An HTTP/1.1 connection to a model server, reading one answer at a time."""

    def __init__(self, pool: _Pool, key: tuple[str, str, int]):
        self.pool, self.key = pool, key
        self.transport: asyncio.Transport | None = None
        self.reading: _Reading | None = None  # the answer being read; None while idle
        self.reused = False
        self.lost = False
        # Of the answer being read (reset by `send`):
        self.parser = httptools.HttpResponseParser(self)
        self.status: int | None = None
        self.partial = b""  # the start of a line whose end has not arrived
        self.refused = b""  # the body of a non-200 answer
        self.received = self.done = False
        self.last = pool.loop.time()  # when data last arrived

    # The asyncio protocol ------------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.lost = True
        self.pool.forget(self)
        reading = self.reading
        if reading is None or reading.over:
            self.reading = None
            return
        if self.status is None:
            self.reading = None
            if self.reused and not self.received:
                # The server closed this idle connection as we sent on it (keep-alive timeouts
                # are short, uvicorn's 5 s): the request never arrived; send it on a new one.
                self.pool.send(reading, fresh=True)
                return
            reading.fail(cut() if self.received else unreachable(reading.request.host))
            return
        self._complete(at_end=True)

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.last = self.pool.loop.time()
        if self.reading is None:
            self.drop()  # an idle connection that talks is not one to reuse
            return
        try:
            self.parser.feed_data(data)  # the callbacks below never raise: they end the reading instead
        except httptools.HttpParserError:
            self._end(not_http(self.reading.request.host if self.reading else ""))

    # httptools' callbacks ----------------------------------------------------------------------------
    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self.reading is None or self.reading.over:
            return  # dropped by an earlier line of this same read, or the answer said it is complete
        if self.status != 200:
            if len(self.refused) < MAX_ERROR_BODY:
                self.refused += body
            return
        self.partial += body
        if b"\n" not in body:
            return
        *lines, self.partial = self.partial.split(b"\n")
        self._lines(lines)

    def on_message_complete(self) -> None:
        self.done = True
        self._complete(at_end=False)

    # Reading -----------------------------------------------------------------------------------------
    def send(self, reading: _Reading) -> None:
        self.reading, reading.connection = reading, self
        self.parser = httptools.HttpResponseParser(self)
        self.status = None
        self.partial = self.refused = b""
        self.received = self.done = False
        self.last = self.pool.loop.time()
        assert self.transport is not None
        self.transport.write(reading.raw)
        self._watch(reading)

    def _watch(self, reading: _Reading) -> None:
        """The read timeout: a timer per timeout's length, not per token (a token only moves
        `last`). Also drops a connection whose answer was complete but whose HTTP body never ended."""
        if self.reading is not reading:
            return
        timeout = reading.request.read_timeout
        silent = self.pool.loop.time() - self.last
        if silent >= timeout:
            self._end(timed_out(reading.request.host))
            return
        self.pool.loop.call_later(timeout - silent, self._watch, reading)

    def _lines(self, lines: list[bytes]) -> None:
        reading = self.reading
        assert reading is not None
        decoder = reading.decoder
        try:
            for raw in lines:
                if decoder.finished:
                    break
                reading.deliver(decoder.line(raw.rstrip(b"\r").decode("utf-8", "replace")))
            if decoder.finished:
                reading.deliver(decoder.end())
                reading.finish()
        except (ProviderError, _Abandoned) as exc:
            self._end(exc)
        except Exception as exc:  # noqa: BLE001 — raised by `on_text`: the caller's, handed back to it
            self._end(exc)

    def _complete(self, *, at_end: bool) -> None:
        """The answer's body ended (`at_end`: with the connection)."""
        reading = self.reading
        if reading is None:
            return
        if not reading.over:
            if self.status != 200:
                reading.fail(reading.refusal(self.status or 0, self.refused.decode("utf-8", "replace")))
            else:
                if self.partial:
                    self._lines([self.partial])
                    self.partial = b""
                if not reading.over:
                    try:
                        reading.deliver(reading.decoder.end())
                        reading.finish()
                    except (ProviderError, _Abandoned) as exc:
                        reading.fail(exc)
                    except Exception as exc:  # noqa: BLE001 — raised by `on_text`
                        reading.fail(exc)
        self.reading = None
        if not at_end and self.done and self.parser.should_keep_alive() and not self.lost:
            self.pool.keep(self)
        elif not at_end:
            self.drop()

    def _end(self, error: BaseException) -> None:
        """The answer ends with `error` (the waiting thread's own close is not reported back)."""
        reading = self.reading
        if reading is not None and not isinstance(error, _Abandoned):
            reading.fail(error)
        if reading is not None:
            reading.over = True
        self.drop()

    def drop(self) -> None:
        self.reading = None
        if self.transport is not None and not self.lost:
            self.transport.abort()


def _request_bytes(request: Request) -> bytes:
    parts = urlsplit(request.url)
    target = quote(parts.path or "/", safe="/%:@!$&'()*+,;=~-._") + (f"?{parts.query}" if parts.query else "")
    headers = {"Content-Type": "application/json", "User-Agent": "CurreChat"}
    if parts.username:  # credentials in the server's address, sent as httpx sends them
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    lowered = {name.lower() for name, _value in request.headers}
    headers = {name: value for name, value in headers.items() if name.lower() not in lowered}
    lines = [
        f"POST {target} HTTP/1.1",
        f"Host: {parts.netloc.rpartition('@')[2]}",
        *(f"{name}: {value}" for name, value in [*headers.items(), *request.headers]),
        f"Content-Length: {len(request.body)}",
    ]
    if any("\r" in line or "\n" in line for line in lines):
        raise ProviderError(_("A model server's address or key holds a line break; correct the setting."))
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + request.body


class _Pool:
    """The loop's connections to model servers: idle ones by server, for the next request."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.idle: dict[tuple[str, str, int], list[_Connection]] = {}

    def send(self, reading: _Reading, *, fresh: bool = False) -> None:
        key = _server(reading.request.url)
        idle = self.idle.get(key)
        while idle and not fresh:
            connection = idle.pop()
            if not connection.lost:
                connection.reused = True
                connection.send(reading)
                return
        self.loop.create_task(self._connect(reading, key))

    async def _connect(self, reading: _Reading, key: tuple[str, str, int]) -> None:
        scheme, host, port = key
        tls = tls_context() if scheme == "https" else None
        try:
            _transport, connection = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: _Connection(self, key), host, port, ssl=tls, server_hostname=host if tls else None
                ),
                reading.request.connect_timeout,
            )
        except TimeoutError:
            reading.fail(timed_out(reading.request.host))
            return
        except (OSError, ssl.SSLError) as exc:
            log.info("Could not connect to the model server at %s: %s", reading.request.host, exc)
            reading.fail(unreachable(reading.request.host))
            return
        if reading.over:  # closed by its thread while connecting: the connection waits for the next
            self.keep(connection)
            return
        connection.send(reading)

    def keep(self, connection: _Connection) -> None:
        idle = self.idle.setdefault(connection.key, [])
        if len(idle) >= MAX_IDLE:
            connection.drop()
            return
        idle.append(connection)

    def forget(self, connection: _Connection) -> None:
        idle = self.idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)


def _server(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80)


class _Loop:
    """The process's reading loop, in a daemon thread started on first use (again in a forked
    child: threads do not survive a fork)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pool: _Pool | None = None
        self.waiting: set[_Reading] = set()

    def submit(self, reading: _Reading) -> None:
        with self._lock:
            if self._pid != os.getpid() or self.loop is None:
                self.loop = _new_loop()
                self.pool = _Pool(self.loop)
                self.waiting = set()
                threading.Thread(target=_serve, args=(self.loop,), name="model-streams", daemon=True).start()
                self._pid = os.getpid()
            loop, pool = self.loop, self.pool
            assert pool is not None
            self.waiting.add(reading)
        reading.loop = loop
        loop.call_soon_threadsafe(pool.send, reading)

    def forget(self, reading: _Reading) -> None:
        with self._lock:
            self.waiting.discard(reading)

    def wake(self) -> None:
        with self._lock:
            readings = list(self.waiting)
        for reading in readings:
            reading.events.put(Waiting())


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    translate_when_read()  # this thread has no user's language: its errors are translated by the asker's
    loop.run_forever()


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvloop is faster; any asyncio loop reads the same
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


_reader = _Loop()


def decoded(lines: Iterable[str], decoder: Decoder) -> Iterator[ChatEvent]:
    """The events of a reply read in the calling thread (a proxied server: `proxied`), by the
    same decoder the loop would use."""
    for line in lines:
        yield from decoder.line(line)
        if decoder.finished:
            break
    yield from decoder.end()
