"""An OpenAI-protocol moderation endpoint on loopback (`POST /v1/moderations`), as OpenAI's and
compatible servers answer it: `{"id", "model", "results": [{"flagged", "categories",
"category_scores"}]}` with every category named. A test says which words flag which categories."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler

from tests.fake_ollama import _Server

CATEGORIES = (
    "harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent",
    "self-harm", "self-harm/instructions", "self-harm/intent", "sexual", "sexual/minors", "violence",
    "violence/graphic",
)  # fmt: skip


class FakeModeration:
    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.flags: dict[str, tuple[str, ...]] = {}  # a word in the input -> the categories it flags
        self.requests: list[dict] = []
        self.status = 200  # anything else: the server fails every request with it
        self._server = _Server((host, port), self._handler_class())
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeModeration:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def verdict(self, text: str) -> dict:
        hits = {c for word, categories in self.flags.items() if word in text.lower() for c in categories}
        return {
            "flagged": bool(hits),
            "categories": {c: c in hits for c in CATEGORIES},
            "category_scores": {c: 0.99 if c in hits else 0.001 for c in CATEGORIES},
        }

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

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                fake.requests.append(body)
                if self.path != "/v1/moderations":
                    return self._json(404, {"error": {"message": "not found"}})
                if fake.status != 200:
                    return self._json(fake.status, {"error": {"message": "moderation is down"}})
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                results = [fake.verdict(t) for t in texts]
                self._json(200, {"id": "modr-1", "model": body.get("model", ""), "results": results})

        return Handler
