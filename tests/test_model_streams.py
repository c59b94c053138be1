"""Model streams, read by the process's one stream reader (rag/providers/wire.py), as those who use
it notice: every piece of text in order and before the answer's end, a closed stream that stops the
model and sends nothing more, connections kept and renewed without losing an answer, many answers
at once each with its own text, a server that is no model server named, and a model server behind
a proxy still reached."""

from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest

from kernel.errors import ProviderError
from rag.providers import ChatMessage, Done, TextDelta, get_chat_model
from tests.fake_ollama import FakeOllama, Reply

ASK = [ChatMessage(role="user", content="Count for me")]


def _model():
    return get_chat_model("qwen3:8b")


def test_the_text_reaches_on_text_in_order_before_the_answer_ends(ollama):
    words = [f"w{i} " for i in range(60)]
    ollama.script(Reply(chunks=words, prompt_tokens=7))
    got: list[str] = []
    events = list(_model().stream(ASK, on_text=got.append))
    assert "".join(got) == "".join(words)
    assert not any(isinstance(event, TextDelta) for event in events), "the text went to on_text only"
    assert events[-1] == Done(prompt_tokens=7, completion_tokens=60)


def test_without_on_text_the_text_is_yielded_in_order(ollama):
    ollama.script(Reply(content="one two three"))
    events = list(_model().stream(ASK))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "one two three"
    assert isinstance(events[-1], Done)


def test_closing_the_stream_stops_the_model_and_no_text_follows(ollama):
    """The student's Stop: the server sees the connection go, and nothing more reaches the answer."""
    ollama.script(Reply(chunks=[f"w{i} " for i in range(500)], delay=0.01))
    abandoned = ollama.abandoned
    stream = _model().stream(ASK)
    seen: list[str] = []
    for event in stream:
        if isinstance(event, TextDelta):
            seen.append(event.text)
        if len(seen) == 5:
            break
    stream.close()
    assert ollama.wait_for_abandoned(abandoned + 1, 30) == abandoned + 1, "the model server saw the answer go"
    assert seen == ["w0 ", "w1 ", "w2 ", "w3 ", "w4 "]


def test_an_error_raised_by_on_text_ends_the_request_and_reaches_the_reader(ollama):
    ollama.script(Reply(chunks=[f"w{i} " for i in range(500)], delay=0.01))
    abandoned = ollama.abandoned
    got: list[str] = []

    def on_text(text: str) -> None:
        if len(got) == 5:
            raise LookupError("enough")
        got.append(text)

    with pytest.raises(LookupError, match="enough"):
        list(_model().stream(ASK, on_text=on_text))
    assert ollama.wait_for_abandoned(abandoned + 1, 30) == abandoned + 1
    assert got == ["w0 ", "w1 ", "w2 ", "w3 ", "w4 "], "no text after the error"


@pytest.fixture
def own_server(settings):
    """A model server of this test's own: no other answer of the process shares its connections."""
    fake = FakeOllama().start()
    settings.OLLAMA_HOST = fake.url
    yield fake
    fake.stop()


def test_answers_one_after_another_share_one_connection(own_server):
    model = _model()
    for n in range(4):
        own_server.script(Reply(content=f"answer {n}"))
        assert isinstance(list(model.stream(ASK))[-1], Done)
    assert len(own_server.chat_peers) == 4 and len(set(own_server.chat_peers)) == 1, own_server.chat_peers


def test_a_server_that_never_ends_its_bodies_still_answers_every_request(own_server):
    """The next request waits a moment for a connection whose answer is complete but whose body has
    not ended; a server that never ends them gets it on a new connection, and every answer arrives."""
    model = _model()
    for n in range(3):
        own_server.script(Reply(content=f"answer {n}", unended=True))
        got: list[str] = []
        assert isinstance(list(model.stream(ASK, on_text=got.append))[-1], Done)
        assert "".join(got) == f"answer {n}"
    assert len(set(own_server.chat_peers)) == 3, "each on a connection of its own"


def test_a_request_the_server_hangs_up_on_is_sent_once_more_and_the_answer_arrives(own_server):
    """Servers close idle connections (uvicorn after 5 s), and one may meet the next request; or a
    server restarts as the request arrives. Nothing was answered: the request goes once more, on a
    new connection, and the student gets the answer."""
    model = _model()
    own_server.script(Reply(content="first"))
    list(model.stream(ASK))
    own_server.hang_ups = 1
    own_server.script(Reply(content="the second answer"))
    got: list[str] = []
    list(model.stream(ASK, on_text=got.append))
    assert "".join(got) == "the second answer"
    assert len(own_server.chat_peers) == 3 and own_server.chat_peers[2] != own_server.chat_peers[1]


def test_a_server_that_hangs_up_again_is_a_failure_that_names_it(own_server):
    own_server.hang_ups = 2
    with pytest.raises(ProviderError) as failed:
        list(_model().stream(ASK))
    assert failed.value.retryable and own_server.url in str(failed.value)
    assert len(own_server.chat_peers) == 2, "asked twice, not more"


def test_an_answer_is_complete_at_its_last_line_even_when_its_http_body_never_ends(ollama):
    ollama.script(Reply(content="all of it", unended=True))
    got: list[str] = []
    events = list(_model().stream(ASK, on_text=got.append))
    assert "".join(got) == "all of it" and isinstance(events[-1], Done)


def test_many_answers_at_once_each_get_their_own_text(ollama):
    ollama.responder = lambda body: Reply(
        chunks=[f"{body['messages'][-1]['content']}-{i} " for i in range(40)], delay=0.005
    )
    texts: dict[int, str] = {}

    def ask(n: int) -> None:
        got: list[str] = []
        list(_model().stream([ChatMessage(role="user", content=f"c{n}")], on_text=got.append))
        texts[n] = "".join(got)

    threads = [threading.Thread(target=ask, args=(n,)) for n in range(24)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert texts == {n: "".join(f"c{n}-{i} " for i in range(40)) for n in range(24)}


@pytest.fixture
def not_a_model_server():
    """A TCP service that greets with something other than HTTP (an SSH server on the wrong port)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def greet() -> None:
        with listener:
            connection, _ = listener.accept()
            with connection:
                connection.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n")
                # Until the client hangs up: closed with part of the request unread (on a busy
                # machine it came in two writes), the socket would reset the connection, and the
                # client could lose the greeting to the reset before reading it.
                while connection.recv(65536):
                    pass

    thread = threading.Thread(target=greet, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    thread.join(30)


def test_a_server_that_does_not_speak_http_is_named_with_its_address(settings, not_a_model_server):
    settings.OLLAMA_HOST = not_a_model_server
    with pytest.raises(ProviderError) as failed:
        list(_model().stream(ASK))
    assert failed.value.reason == "unreadable"
    assert not_a_model_server in str(failed.value) and "not HTTP" in str(failed.value)


class _ForwardProxy(ThreadingHTTPServer):
    """An HTTP forward proxy on loopback (as a campus's outbound proxy), passing each answer on as
    it streams."""

    daemon_threads = True

    def __init__(self) -> None:
        self.forwarded: list[str] = []
        super().__init__(("127.0.0.1", 0), self._handler())

    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                target = urlsplit(self.path)  # absolute: the request was sent to a proxy
                proxy.forwarded.append(self.path)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                upstream.request("POST", target.path, body, {"Content-Type": "application/json"})
                answer = upstream.getresponse()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.getheader("Content-Type", "application/json"))
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while piece := answer.read1(65536):
                    self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                upstream.close()

        return Handler


@pytest.fixture
def forward_proxy(monkeypatch):
    proxy = _ForwardProxy()
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_address[1]}")
    monkeypatch.setenv("http_proxy", f"http://127.0.0.1:{proxy.server_address[1]}")
    yield proxy
    proxy.shutdown()
    proxy.server_close()


def test_a_model_server_behind_the_proxy_the_environment_names_is_reached_through_it(ollama, forward_proxy):
    ollama.script(Reply(content="through the proxy", prompt_tokens=3))
    got: list[str] = []
    events = list(_model().stream(ASK, on_text=got.append))
    assert "".join(got) == "through the proxy" and events[-1] == Done(prompt_tokens=3, completion_tokens=3)
    assert forward_proxy.forwarded == [f"{ollama.url}/api/chat"]


def test_a_model_server_the_environment_exempts_from_the_proxy_is_reached_directly(ollama, forward_proxy, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "example.org, 127.0.0.1")
    ollama.script(Reply(content="straight there"))
    got: list[str] = []
    list(_model().stream(ASK, on_text=got.append))
    assert "".join(got) == "straight there" and forward_proxy.forwarded == []
