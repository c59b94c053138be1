"""An Ollama-protocol HTTP server on loopback, scripted per test.

It speaks the real wire protocol the `ollama` client uses (`/api/chat` streaming NDJSON with tool
calls and `format`, `/api/embed`, `/api/tags`, `/api/show`, `/api/version`), so the app's provider
code runs unchanged against it. Tests queue replies with `script()` or install a `responder`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import ssl
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DEFAULT_MODELS = ["qwen3:8b", "qwen3-vl:8b", "snowflake-arctic-embed2:latest"]


@dataclass
class Reply:
    """One /api/chat answer. `content` streams in `chunks` (default: word by word)."""

    content: str = ""
    # [{"name": ..., "arguments": {...}}]; arguments that are not a dict are sent as they are (a
    # string here is a JSON string on Ollama's wire, and the arguments' raw text on OpenAI's).
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[str] | None = None
    delay: float = 0.0  # seconds before each streamed chunk
    status: int = 200  # a non-200 status answers {"error": ...} instead of a stream
    error: str = "model failed"
    fail_after: int | None = None  # stream this many chunks, then an error line
    cut_after: int | None = None  # stream this many chunks, then drop the connection (no done)
    garbage_after: int | None = None  # stream this many chunks, then a line that is not JSON, then the rest
    # Stream `gate_after` chunks, then wait until the test sets `gate` (at most a minute): a point in
    # the middle of an answer that a test chooses by an event, not by the clock.
    gate: threading.Event | None = None
    gate_after: int | None = None
    # After the last line, keep the connection open without ending the HTTP body (as a proxy that
    # buffers the end might): the answer is complete at its `done` line all the same.
    unended: bool = False

    def wait_at(self, index: int) -> None:
        if self.gate is not None and index == self.gate_after:
            self.gate.wait(60)

    prompt_tokens: int = 11
    completion_tokens: int | None = None

    def pieces(self) -> list[str]:
        if self.chunks is not None:
            return self.chunks
        return re.findall(r"\S+\s*|\s+", self.content) if self.content else []


Responder = Callable[[dict], Reply]


def hashed_embedding(text: str, dims: int) -> list[float]:
    """A deterministic bag-of-words vector: texts sharing words point the same way."""
    vec = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec[h % dims] += 1.0 if (h >> 32) & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog is 5; a real model server listens with the system's (Go's
    # net/http takes somaxconn). With 5, a restarted web process that resumes its answers connects
    # faster than a busy test process accepts: connects wait a second for the SYN to be sent again,
    # and its first look at the model list times out (the chat then answers without a model).
    request_queue_size = 128

    def __init__(self, address, handler, tls: ssl.SSLContext | None = None):
        """`tls`: served over https with this server-side context (tests/tls_certs.py)."""
        super().__init__(address, handler)
        self.scheme = "https" if tls else "http"
        if tls:
            self.socket = tls.wrap_socket(self.socket, server_side=True)

    def handle_error(self, request, client_address):
        # Clients that hang up (a cancelled chat, a timed-out curation call) are part of the tests;
        # only real errors are printed.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeOllama:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, tls: ssl.SSLContext | None = None):
        self.models: list[str] = list(DEFAULT_MODELS)
        self.context_length = 32768
        self.embed_dims = 64
        self.embed_delay = 0.0
        self.fail_embed = False
        self.releases: dict[str, int] = {}  # model -> times pulled again (new weights, new digest)
        self.requests: list[tuple[str, dict]] = []
        self.chat_peers: list[tuple[str, int]] = []  # the client's address of each /api/chat request
        # Hang up on the next this many /api/chat requests without answering (as a server does whose
        # idle keep-alive timeout fires just as the request arrives, or one that is restarting).
        self.hang_ups = 0
        self.tags_failures = 0  # answer the next this many /api/tags with 503 (a server busy for a moment)
        self.responder: Responder | None = None
        self.abandoned = 0
        self._script: deque[Reply | Responder] = deque()
        self._lock = threading.Lock()
        self._abandoned = threading.Condition(self._lock)  # told each time an answer is abandoned
        self._server = _Server((host, port), self._handler_class(), tls)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{self._server.scheme}://{host}:{port}"

    def start(self) -> FakeOllama:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.models = list(DEFAULT_MODELS)
            self.context_length = 32768
            self.embed_dims = 64
            self.embed_delay = 0.0
            self.fail_embed = False
            self.releases = {}
            self.requests.clear()
            self.chat_peers.clear()
            self.hang_ups = 0
            self.tags_failures = 0
            self.responder = None
            self.abandoned = 0  # streamed answers whose client hung up before the end
            self._script.clear()

    def wait_for_abandoned(self, count: int, timeout: float) -> int:
        """Block until `count` streamed answers were abandoned by their client (the server saw the
        connection go), or `timeout` seconds passed; how many were."""
        with self._abandoned:
            self._abandoned.wait_for(lambda: self.abandoned >= count, timeout)
            return self.abandoned

    def pull(self, model: str) -> None:
        """As `ollama pull` of a newer version under the same name: new digest, other vectors."""
        name = model.removesuffix(":latest")
        self.releases[name] = self.releases.get(name, 0) + 1

    def digest(self, model: str) -> str:
        name = model.removesuffix(":latest")
        return "sha256:" + hashlib.sha256(f"{name}#{self.releases.get(name, 0)}".encode()).hexdigest()

    def script(self, *replies: Reply | Responder) -> None:
        """Queue replies for the next /api/chat calls, in order."""
        with self._lock:
            self._script.extend(replies)

    def chat_requests(self) -> list[dict]:
        return [body for path, body in self.requests if path == "/api/chat"]

    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            item = self._script.popleft() if self._script else self.responder
        if item is None:
            return Reply(content="OK")
        return item(body) if callable(item) else item

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> dict:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                return json.loads(raw or b"{}")

            def do_GET(self):
                fake.requests.append((self.path, {}))
                if self.path == "/api/tags" and fake.tags_failures:
                    fake.tags_failures -= 1
                    self._json(503, {"error": "server busy"})
                elif self.path == "/api/tags":
                    models = [{"name": m, "model": m, "size": 1, "digest": fake.digest(m)} for m in fake.models]
                    self._json(200, {"models": models})
                elif self.path == "/api/version":
                    self._json(200, {"version": "0.12.0-fake"})
                else:
                    self._json(404, {"error": "not found"})

            def do_HEAD(self):
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_POST(self):
                body = self._body()
                fake.requests.append((self.path, body))
                if self.path == "/api/show":
                    self._show(body)
                elif self.path == "/api/embed":
                    self._embed(body)
                elif self.path == "/api/chat":
                    self._chat(body)
                else:
                    self._json(404, {"error": "not found"})

            def _known(self, name: str) -> bool:
                return name in fake.models or f"{name}:latest" in fake.models

            def _show(self, body):
                name = body.get("model", "")
                if not self._known(name):
                    self._json(404, {"error": f"model '{name}' not found"})
                    return
                self._json(
                    200,
                    {
                        "modelfile": "",
                        "parameters": "",
                        "template": "",
                        "details": {"family": "qwen3", "format": "gguf"},
                        "model_info": {"general.architecture": "qwen3", "qwen3.context_length": fake.context_length},
                        "capabilities": ["completion", "tools", "vision"],
                    },
                )

            def _embed(self, body):
                name = body.get("model", "")
                if not self._known(name):
                    self._json(404, {"error": f"model '{name}' not found"})
                    return
                if fake.fail_embed:
                    self._json(500, {"error": "embedding failed"})
                    return
                texts = body.get("input") or []
                texts = [texts] if isinstance(texts, str) else texts
                if fake.embed_delay:
                    time.sleep(fake.embed_delay * len(texts))
                release = fake.releases.get(name.removesuffix(":latest"), 0)
                salt = f"#{release}" if release else ""
                vectors = [hashed_embedding(t + salt, fake.embed_dims) for t in texts]
                self._json(200, {"model": name, "embeddings": vectors, "prompt_eval_count": len(texts)})

            def _line(self, payload: dict) -> None:
                self._raw(json.dumps(payload).encode() + b"\n")

            def _raw(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _chat(self, body):
                fake.chat_peers.append(self.client_address[:2])
                if fake.hang_ups:
                    fake.hang_ups -= 1
                    self.close_connection = True
                    return
                name = body.get("model", "")
                if not self._known(name):
                    self._json(404, {"error": f"model '{name}' not found"})
                    return
                reply = fake._next_reply(body)
                if reply.status != 200:
                    self._json(reply.status, {"error": reply.error})
                    return
                stream = body.get("stream", True)
                pieces = reply.pieces()
                base = {"model": name, "created_at": "2026-01-01T00:00:00Z"}
                calls = [
                    {"function": {"name": c["name"], "arguments": c.get("arguments", {})}} for c in reply.tool_calls
                ]
                done = {
                    **base,
                    "message": {"role": "assistant", "content": ""},
                    "done": True,
                    "done_reason": "stop",
                    "prompt_eval_count": reply.prompt_tokens,
                    "eval_count": reply.completion_tokens if reply.completion_tokens is not None else len(pieces),
                }
                if not stream:
                    message = {"role": "assistant", "content": "".join(pieces)}
                    if calls:
                        message["tool_calls"] = calls
                    self._json(200, {**done, "message": message})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-ndjson")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for i, piece in enumerate(pieces):
                        reply.wait_at(i)
                        if reply.fail_after is not None and i == reply.fail_after:
                            self._line({"error": reply.error})
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        if reply.cut_after is not None and i == reply.cut_after:
                            self.close_connection = True
                            return
                        if reply.garbage_after is not None and i == reply.garbage_after:
                            self._raw(b'{"model": "qwen3:8b", "message": {"content": "cut\n')
                        if reply.delay:
                            time.sleep(reply.delay)
                        self._line({**base, "message": {"role": "assistant", "content": piece}, "done": False})
                    if calls:
                        message = {"role": "assistant", "content": "", "tool_calls": calls}
                        self._line({**base, "message": message, "done": False})
                    self._line(done)
                    if reply.unended:
                        self.rfile.read()  # until the client hangs up
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                except (BrokenPipeError, ConnectionResetError):
                    with fake._abandoned:
                        fake.abandoned += 1
                        fake._abandoned.notify_all()

        return Handler
