"""An OpenAI-protocol HTTP server on loopback (as vLLM, llama.cpp's server or LM Studio serve), scripted
per test like tests/fake_ollama.py and with the same `Reply` records.

It speaks the wire protocol the official `openai` client uses: `/v1/chat/completions` streamed as
server-sent events (text deltas, tool calls as deltas keyed by index with their JSON arguments in
pieces, a final usage chunk when `stream_options.include_usage` asks for it), `response_format`
json_schema, image content parts, `/v1/embeddings`, `/v1/models` and `/v1/models/{id}`.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fake_ollama import Reply, Responder, _Server, hashed_embedding

DEFAULT_MODELS = ["Qwen/Qwen3-8B", "Qwen/Qwen3-VL-8B", "BAAI/bge-m3"]


def _arguments(call: dict) -> str:
    """The arguments' JSON text; a string is sent as it is (how a model's broken JSON arrives)."""
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


class FakeOpenAI:
    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, tls: ssl.SSLContext | None = None):
        """`tls`: served over https (tests/tls_certs.py)."""
        self.requests: list[tuple[str, dict]] = []
        self._script: deque[Reply | Responder] = deque()
        self._lock = threading.Lock()
        self.reset()
        self._server = _Server((host, port), self._handler_class(), tls)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL, as OPENAI_BASE_URL takes it."""
        host, port = self._server.server_address[:2]
        return f"{self._server.scheme}://{host}:{port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.models: list[str] = list(DEFAULT_MODELS)
            self.context_length = 32768
            self.embed_dims = 64
            self.send_usage = True  # some servers never send the usage chunk
            self.requests.clear()
            self.responder: Responder | None = None
            self.abandoned = 0
            self._script.clear()

    def script(self, *replies: Reply | Responder) -> None:
        with self._lock:
            self._script.extend(replies)

    def chat_requests(self) -> list[dict]:
        return [body for path, body in self.requests if path == "/v1/chat/completions"]

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

            def log_message(self, *args):
                pass

            def _json(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, status: int, message: str) -> None:
                self._json(status, {"error": {"message": message, "type": "invalid_request_error", "code": status}})

            def _model(self, name: str) -> dict:
                return {
                    "id": name,
                    "object": "model",
                    "created": 0,
                    "owned_by": "fake",
                    "max_model_len": fake.context_length,
                }

            def do_GET(self):
                fake.requests.append((self.path, {}))
                if self.path == "/v1/models":
                    self._json(200, {"object": "list", "data": [self._model(m) for m in fake.models]})
                elif self.path.startswith("/v1/models/"):
                    name = self.path.removeprefix("/v1/models/")
                    if name in fake.models:
                        self._json(200, self._model(name))
                    else:
                        self._error(404, f"The model `{name}` does not exist.")
                else:
                    self._error(404, "not found")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append((self.path, body))
                if body.get("model") not in fake.models:
                    self._error(404, f"The model `{body.get('model')}` does not exist.")
                elif self.path == "/v1/embeddings":
                    self._embed(body)
                elif self.path == "/v1/chat/completions":
                    self._chat(body)
                else:
                    self._error(404, "not found")

            def _embed(self, body):
                texts = body.get("input") or []
                texts = [texts] if isinstance(texts, str) else texts
                data = [
                    {"object": "embedding", "index": i, "embedding": hashed_embedding(t, fake.embed_dims)}
                    for i, t in enumerate(texts)
                ]
                usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
                self._json(200, {"object": "list", "data": data, "model": body["model"], "usage": usage})

            def _chunk(self, model: str, delta: dict | None, finish: str | None = None, **extra) -> dict:
                choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
                return {
                    "id": "c1",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": model,
                    "choices": choices,
                    **extra,
                }

            def _event(self, payload: dict | str) -> None:
                data = b"data: " + (payload if isinstance(payload, str) else json.dumps(payload)).encode() + b"\n\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def _chat(self, body):
                reply = fake._next_reply(body)
                if reply.status != 200:
                    self._error(reply.status, reply.error)
                    return
                pieces = reply.pieces()
                completion = reply.completion_tokens if reply.completion_tokens is not None else len(pieces)
                usage = {
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": completion,
                    "total_tokens": reply.prompt_tokens + completion,
                }
                if not body.get("stream"):
                    self._whole(body, reply, pieces, usage)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    self._stream(body, reply, pieces, usage)
                except (BrokenPipeError, ConnectionResetError):
                    with fake._lock:
                        fake.abandoned += 1

            def _whole(self, body, reply: Reply, pieces: list[str], usage: dict) -> None:
                message: dict[str, Any] = {"role": "assistant", "content": "".join(pieces)}
                if reply.tool_calls:
                    message["tool_calls"] = [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": c["name"], "arguments": _arguments(c)},
                        }  # fmt: skip
                        for i, c in enumerate(reply.tool_calls)
                    ]
                finish = "tool_calls" if reply.tool_calls else "stop"
                choice = {"index": 0, "message": message, "finish_reason": finish}
                whole = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"]}
                self._json(200, {**whole, "choices": [choice], "usage": usage})

            def _stream(self, body, reply: Reply, pieces: list[str], usage: dict) -> None:
                model = body["model"]
                self._event(self._chunk(model, {"role": "assistant", "content": ""}))
                for i, piece in enumerate(pieces):
                    reply.wait_at(i)
                    if reply.fail_after is not None and i == reply.fail_after:
                        self._event({"error": {"message": reply.error, "type": "server_error"}})
                        self.wfile.write(b"0\r\n\r\n")
                        return
                    if reply.cut_after is not None and i == reply.cut_after:
                        self.close_connection = True
                        return
                    if reply.garbage_after is not None and i == reply.garbage_after:
                        self._event('{"id": "c1", "choices": [{"delta": {"content": "cut')
                    if reply.delay:
                        time.sleep(reply.delay)
                    self._event(self._chunk(model, {"content": piece}))
                for index, call in enumerate(reply.tool_calls):
                    # As vLLM sends them: id and name first, then the arguments in two pieces.
                    arguments = _arguments(call)
                    half = len(arguments) // 2
                    function = {"name": call["name"], "arguments": ""}
                    head = {"index": index, "id": f"call_{index}", "type": "function", "function": function}
                    self._event(self._chunk(model, {"tool_calls": [head]}))
                    for part in (arguments[:half], arguments[half:]):
                        piece = {"index": index, "function": {"arguments": part}}
                        self._event(self._chunk(model, {"tool_calls": [piece]}))
                self._event(self._chunk(model, {}, "tool_calls" if reply.tool_calls else "stop"))
                if fake.send_usage and (body.get("stream_options") or {}).get("include_usage"):
                    self._event(self._chunk(model, None, usage=usage))
                self._event("[DONE]")
                self.wfile.write(b"0\r\n\r\n")

        return Handler
