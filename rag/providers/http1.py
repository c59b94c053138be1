"""HTTP/1.1 on asyncio, for the model streams of rag/providers/wire.py: a connection reads one
answer at a time, its bytes parsed by httptools (C; uvicorn's parser), each complete line handed to
the protocol's decoder and the events to the waiting reading; a pool keeps idle connections per
server for the next answer. Keep-alive, TLS with the process's one context, and the read timeout (the
longest silence) as the httpx clients had them; a request whose connection closed before a byte of
its answer is sent once more on a new one.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
import ssl
from urllib.parse import quote, unquote, urlsplit

import certifi
import httptools
from django.utils.translation import gettext as _

from kernel.errors import ProviderError
from rag.config import model_servers
from rag.providers.failures import connection_failure, cut, not_http, timed_out, unreachable
from rag.providers.streams import Abandoned, Reading, Request

log = logging.getLogger(__name__)

# A refusal's body is read up to this size for its message; the rest is not needed.
MAX_ERROR_BODY = 64 * 1024
# Idle keep-alive connections kept per server (more than the busiest moment's streams are closed).
MAX_IDLE = 256
# How long a request waits for a connection whose answer is complete but whose HTTP body has not
# ended yet (servers write the answer's last line and the body's end apart: Ollama's net/http does).
# A server that leaves its bodies unended past this is not waited for again.
ENDING_GRACE = 1.0


def tls_context() -> ssl.SSLContext:
    """The public CAs (certifi's) and the university's own (MODEL_SERVER_CA_FILE), for every model
    server client of the process."""
    return _tls_context(model_servers().ca_file)


@functools.cache
def _tls_context(own_ca: str) -> ssl.SSLContext:
    """One per process (per setting): building one loads the CA bundle (~35 ms of CPU)."""
    context = ssl.create_default_context(cafile=certifi.where())
    if own_ca:
        context.load_verify_locations(cafile=own_ca)
    return context


class Connection(asyncio.Protocol):
    """An HTTP/1.1 connection to a model server, reading one answer at a time."""

    def __init__(self, pool: Pool, key: tuple[str, str, int]):
        self.pool, self.key = pool, key
        self.transport: asyncio.Transport | None = None
        self.reading: Reading | None = None  # the answer being read; None while idle
        self.reused = False
        self.lost = False
        self.spoke_unasked = False
        # Of the answer being read (reset by `send`):
        self.parser = httptools.HttpResponseParser(self)
        self.status: int | None = None
        self.partial = b""  # the start of a line whose end has not arrived
        self.answered: Reading | None = None  # its answer complete, to be told at the end of this read
        self.refused = b""  # the body of a non-200 answer
        self.received = self.done = False
        self.last = pool.loop.time()  # when data last arrived
        self.next: Reading | None = None  # a request waiting for this answer's body to end

    # The asyncio protocol ------------------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport

    def connection_lost(self, exc) -> None:
        self.lost = True
        self.pool.forget(self)
        reading = self.reading
        if reading is None or reading.over:
            self.reading = None
            self._hand_on()
            return
        if self.status is None:
            self.reading = None
            if not self.received and not reading.sent_again:
                # Closed before a byte of the answer: most often a kept connection the server
                # closed as the request met it (keep-alive timeouts are short, uvicorn's 5 s), or
                # a server restarting. Nothing was generated (nor counted): once more, on a new one.
                reading.sent_again = True
                self.pool.send(reading, fresh=True)
                return
            reading.fail(cut() if self.received else unreachable(reading.request.host))
            return
        self._complete(at_end=True)

    def data_received(self, data: bytes) -> None:
        self.received = True
        self.last = self.pool.loop.time()
        if self.reading is None:
            # A server that talks before it is asked is no HTTP server (an SSH port, say), and an
            # idle connection that talks is not one to reuse.
            self.spoke_unasked = True
            self.drop()
            return
        try:
            self.parser.feed_data(data)  # the callbacks below never raise: they end the reading instead
        except httptools.HttpParserError:
            self._end(not_http(self.reading.request.host if self.reading else ""))
        if self.answered is not None:
            # The answer's end goes out once this read is handled: if the HTTP body ended in it too,
            # the connection is kept already, and the asker's next request can take it.
            answered, self.answered = self.answered, None
            answered.finish()
            if self.reading is answered and not self.lost:  # its body's end is still to come
                self.pool.ending(self)

    # httptools' callbacks ----------------------------------------------------------------------------
    def on_headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        if self.reading is None or self.reading.over or self.reading.decoder.finished:
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
    def send(self, reading: Reading) -> None:
        self.reading, reading.connection = reading, self
        self.parser = httptools.HttpResponseParser(self)
        self.status = None
        self.partial = self.refused = b""
        self.received = self.done = False
        self.answered = None
        self.last = self.pool.loop.time()
        assert self.transport is not None
        self.transport.write(reading.raw)
        self._watch(reading)

    def _watch(self, reading: Reading) -> None:
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
                self.answered = reading  # finished at the end of this read (`data_received`)
        except (ProviderError, Abandoned) as exc:
            self._end(exc)
        except Exception as exc:  # noqa: BLE001 — raised by `on_text`: the caller's, handed back to it
            self._end(exc)

    def _complete(self, *, at_end: bool) -> None:
        """The answer's body ended (`at_end`: with the connection)."""
        reading = self.reading
        if reading is None:
            return
        if not reading.over and not reading.decoder.finished:
            if self.status != 200:
                reading.fail(reading.refusal(self.status or 0, self.refused.decode("utf-8", "replace")))
            else:
                if self.partial:
                    self._lines([self.partial])
                    self.partial = b""
                if not reading.over and not reading.decoder.finished:
                    try:
                        reading.deliver(reading.decoder.end())
                        reading.finish()
                    except (ProviderError, Abandoned) as exc:
                        reading.fail(exc)
                    except Exception as exc:  # noqa: BLE001 — raised by `on_text`
                        reading.fail(exc)
        if at_end and self.answered is not None:  # no read is being handled that would tell it
            answered, self.answered = self.answered, None
            answered.finish()
        self.reading = None
        if not at_end and self.done and self.parser.should_keep_alive() and not self.lost:
            self.pool.forget(self)
            if self.next is not None:
                # Not from inside the parser's callback: the next answer gets a parser of its own.
                self.pool.loop.call_soon(self._send_next)
            else:
                self.pool.keep(self)
        elif not at_end:
            self.drop()
        else:
            self._hand_on()

    def _send_next(self) -> None:
        waiting, self.next = self.next, None
        if self.lost:
            if waiting is not None:
                self.pool.send(waiting, wait=False)
        elif waiting is None or waiting.over:  # closed by its thread meanwhile
            self.pool.keep(self)
        else:
            self.reused = True
            self.send(waiting)

    def _hand_on(self) -> None:
        """This connection will not be reused: a request waiting for it goes on a new one."""
        self.pool.forget(self)
        waiting, self.next = self.next, None
        if waiting is not None and not waiting.over:
            self.pool.send(waiting, wait=False)

    def _end(self, error: BaseException) -> None:
        """The answer ends with `error` (the waiting thread's own close is not reported back)."""
        reading = self.reading
        if reading is not None and not isinstance(error, Abandoned):
            reading.fail(error)
        if reading is not None:
            reading.over = True
        self.drop()

    def drop(self) -> None:
        self.reading = None
        if self.transport is not None and not self.lost:
            self.transport.abort()
        self._hand_on()


def request_bytes(request: Request) -> bytes:
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


class Pool:
    """The loop's connections to model servers: idle ones by server, for the next request."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.idle: dict[tuple[str, str, int], list[Connection]] = {}
        # Connections whose answer is complete, their HTTP body's end still to come, by server.
        self.finishing: dict[tuple[str, str, int], list[Connection]] = {}
        self.unending: set[tuple[str, str, int]] = set()  # servers not waited for (ENDING_GRACE)

    def send(self, reading: Reading, *, fresh: bool = False, wait: bool = True) -> None:
        """Send on a kept connection to the server, or after the body of one that is finishing its
        answer, or on a new one. Never raises: whatever goes wrong ends the reading with it, so no
        thread waits for an answer that will not come."""
        try:
            self._send(reading, fresh, wait)
        except Exception as exc:  # noqa: BLE001 — see above; logged with its trace for the operator
            log.exception("Model stream to %s failed to start", reading.request.host)
            reading.fail(unreachable(reading.request.host) if not isinstance(exc, ProviderError) else exc)

    def _send(self, reading: Reading, fresh: bool, wait: bool) -> None:
        key = _server(reading.request.url)
        idle = self.idle.get(key)
        while idle and not fresh:
            connection = idle.pop()
            if not connection.lost:
                connection.reused = True
                connection.send(reading)
                return
        if wait and not fresh and key not in self.unending:
            for connection in self.finishing.get(key, ()):
                if connection.next is None and not connection.lost:
                    connection.next = reading
                    self.loop.call_later(ENDING_GRACE, self._stop_waiting, connection, reading)
                    return
        self.loop.create_task(self._connect(reading, key))

    def _stop_waiting(self, connection: Connection, reading: Reading) -> None:
        if connection.next is reading:  # the body did not end in time: a new connection
            connection.next = None
            self.unending.add(connection.key)
            if not reading.over:
                self.send(reading, wait=False)

    async def _connect(self, reading: Reading, key: tuple[str, str, int]) -> None:
        try:
            await self._open(reading, key)
        except Exception as exc:  # noqa: BLE001 — as in `send`
            log.exception("Model stream to %s failed to start", reading.request.host)
            reading.fail(unreachable(reading.request.host) if not isinstance(exc, ProviderError) else exc)

    async def _open(self, reading: Reading, key: tuple[str, str, int]) -> None:
        scheme, host, port = key
        tls = tls_context() if scheme == "https" else None
        try:
            _transport, connection = await asyncio.wait_for(
                self.loop.create_connection(
                    lambda: Connection(self, key), host, port, ssl=tls, server_hostname=host if tls else None
                ),
                reading.request.connect_timeout,
            )
        except TimeoutError:
            reading.fail(timed_out(reading.request.host))
            return
        except (OSError, ssl.SSLError) as exc:
            log.info("Could not connect to the model server at %s: %s", reading.request.host, exc)
            reading.fail(connection_failure(exc, reading.request.host))
            return
        # Gone before it was asked anything, or going: a server that spoke first (its greeting can come
        # in before this resumes) was dropped, and its loss, still to be told, must not send this anew.
        if connection.lost or connection.spoke_unasked:
            host = reading.request.host
            reading.fail(not_http(host) if connection.spoke_unasked else unreachable(host))
            return
        if reading.over:  # closed by its thread while connecting: the connection waits for the next
            self.keep(connection)
            return
        connection.send(reading)

    def keep(self, connection: Connection) -> None:
        idle = self.idle.setdefault(connection.key, [])
        if len(idle) >= MAX_IDLE:
            connection.drop()
            return
        idle.append(connection)

    def ending(self, connection: Connection) -> None:
        self.finishing.setdefault(connection.key, []).append(connection)

    def forget(self, connection: Connection) -> None:
        for kept in (self.idle.get(connection.key), self.finishing.get(connection.key)):
            if kept and connection in kept:
                kept.remove(connection)


def _server(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80)
