"""CPU per token of reading model streams, and what the machine's own floor is.

    .venv/bin/python bench/model_streams.py --streams 200 --tokens 150 --rate 10 --rounds 2

N answers stream at once from the test model servers (tests/fake_ollama.FakeOllama and
tests/fake_openai.FakeOpenAI, in processes of their own, a token per chunk at `--rate` tokens/s
each), read in this process, which is measured (user + system CPU over the tokens read):
- `threads`: as before issue 26: a thread per answer reading its stream through httpx, each token
  a TextDelta handed to that thread (the same decoder, `wire.decoded`);
- `reader`: the process's model-stream reader (rag/providers/wire.py) with `on_text`, the threads
  waiting for the end only;
- `aiohttp`: the same work as `reader` (threads waiting, the same decoder, the text to a callback
  on the loop) with aiohttp's client on one uvloop loop in a thread, for issue 45's choice between
  it and our own client (rag/providers/http1.py);
- `floor`: the least any Python reader could do here: one asyncio (uvloop) loop, httptools, each
  line split off and parsed by orjson, nothing handed on.
And, with --frames, the same floor for the other half of a streamed token, the websocket frame to
the browser: a bare ASGI app under uvicorn (as deploy/ runs it) sending one small JSON frame per
token to N websocket clients in another process, the server's CPU over the frames.

Rounds alternate the order of the methods, so whatever else the shared machine does hits them alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
MODELS = {"ollama": "qwen3:8b", "openai": "openai:Qwen/Qwen3-8B"}


def _serve(conn, protocol: str, tokens: int, delay: float) -> None:
    from tests.fake_ollama import FakeOllama, Reply
    from tests.fake_openai import FakeOpenAI

    sys.stderr = open(os.devnull, "w")  # noqa: SIM115 — clients hang up at the end
    fake = FakeOllama() if protocol == "ollama" else FakeOpenAI()
    fake.responder = lambda body: Reply(chunks=[f"t{i} " for i in range(tokens)], delay=delay, prompt_tokens=20)
    fake.start()
    conn.send(fake.url)
    conn.recv()
    fake.stop()


def cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def _in_threads(one, n: int) -> None:
    """`one(i)` for i in 0..n-1, each in a thread of its own, all at once; back when all are done."""
    workers = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def _asked(protocol: str):
    """The URL, body and decoder of one streamed request, as the protocol's provider makes them."""
    from rag.providers.decoders import OllamaLines, OpenAIEvents
    from rag.providers.registry import get_chat_model

    model = get_chat_model(MODELS[protocol])
    host = model.host  # type: ignore[attr-defined]  # both providers' models have one
    body = {"model": model.name, "messages": [{"role": "user", "content": "count"}], "stream": True}
    if protocol == "ollama":
        return host.rstrip("/") + "/api/chat", body, OllamaLines(host)
    return host.rstrip("/") + "/chat/completions", body, OpenAIEvents(host)


def _threads(protocol: str, n: int, spacing: float) -> int:
    """Before: a thread per answer, httpx in it, every token woken for."""
    import httpx

    from rag.providers.http1 import tls_context
    from rag.providers.wire import decoded

    counts: list[int] = []

    def one(i: int) -> None:
        time.sleep(i * spacing)
        url, body, decoder = _asked(protocol)
        # As the providers made it: the process's one TLS context (a context of its own per
        # client would cost milliseconds each and load the comparison).
        with (
            httpx.Client(timeout=60, verify=tls_context()) as client,
            client.stream("POST", url, json=body) as response,
        ):
            counts.append(sum(1 for e in decoded(response.iter_lines(), decoder) if hasattr(e, "text")))

    _in_threads(one, n)
    return sum(counts)


def _reader(protocol: str, n: int, spacing: float) -> int:
    """After: the process's reader, the text to `on_text`."""
    from rag.providers.base import ChatMessage
    from rag.providers.registry import get_chat_model

    counts: list[int] = []

    def one(i: int) -> None:
        got: list[str] = []
        time.sleep(i * spacing)
        for _event in get_chat_model(MODELS[protocol]).stream([ChatMessage("user", "count")], on_text=got.append):
            pass
        counts.append(len(got))

    _in_threads(one, n)
    return sum(counts)


def _aiohttp(protocol: str, n: int, spacing: float) -> int:
    """aiohttp in place of our client: one uvloop loop in a thread reads every answer, each line
    decoded there by the protocol's decoder and its text handed to a callback; the asking threads
    wait for the end only, as `reader` does."""
    import aiohttp

    from rag.providers.base import TextDelta
    from rag.providers.wire import _new_loop

    loop = _new_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    session = asyncio.run_coroutine_threadsafe(_session(aiohttp), loop).result()
    counts: list[int] = []

    async def read(url: str, body: dict, decoder, on_text) -> None:
        async with session.post(url, json=body) as response:
            async for raw in response.content:  # a line at a time, its end included
                for event in decoder.line(raw.rstrip(b"\r\n").decode()):
                    if type(event) is TextDelta:
                        on_text(event.text)
                if decoder.finished:
                    break
            for _event in decoder.end():
                pass

    def one(i: int) -> None:
        got: list[str] = []
        time.sleep(i * spacing)
        url, body, decoder = _asked(protocol)
        asyncio.run_coroutine_threadsafe(read(url, body, decoder, got.append), loop).result()
        counts.append(len(got))

    try:
        _in_threads(one, n)
    finally:
        asyncio.run_coroutine_threadsafe(session.close(), loop).result()
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
    return sum(counts)


async def _session(aiohttp):
    """As our client: keep-alive, the process's TLS context, no limit on connections per host."""
    from rag.providers.http1 import tls_context

    connector = aiohttp.TCPConnector(ssl=tls_context(), limit=0)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None, sock_read=60))


def _floor(protocol: str, n: int, spacing: float) -> int:
    """The least a Python reader does: uvloop, httptools, a line split and parsed, nothing more."""
    import httptools
    import orjson
    import uvloop
    from django.conf import settings

    base = settings.OLLAMA_HOST if protocol == "ollama" else settings.OPENAI_BASE_URL
    host, port = base.split("//")[1].split("/")[0].split(":")
    path = "/api/chat" if protocol == "ollama" else "/v1/chat/completions"
    body = json.dumps({"model": MODELS[protocol].removeprefix("openai:"), "messages": [], "stream": True}).encode()
    request = f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n".encode()
    request += b"Content-Length: %d\r\n\r\n" % len(body) + body
    count = [0]

    def text_of(chunk: dict) -> str:
        if protocol == "ollama":
            return chunk.get("message", {}).get("content", "")
        return (chunk.get("choices") or [{}])[0].get("delta", {}).get("content") or ""

    class Reader(asyncio.Protocol):
        def __init__(self, done: asyncio.Future):
            self.parser, self.partial, self.done = httptools.HttpResponseParser(self), b"", done

        def connection_made(self, transport) -> None:
            self.transport = transport
            transport.write(request)

        def data_received(self, data: bytes) -> None:
            self.parser.feed_data(data)

        def on_body(self, chunk: bytes) -> None:
            *lines, self.partial = (self.partial + chunk).split(b"\n")
            for line in lines:
                line = line.removeprefix(b"data: ")
                if line and line != b"[DONE]" and text_of(orjson.loads(line)):
                    count[0] += 1

        def on_message_complete(self) -> None:
            self.transport.close()
            self.done.set_result(None)

    async def one(i: int) -> None:
        await asyncio.sleep(i * spacing)
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        await loop.create_connection(lambda: Reader(done), host, int(port))
        await done

    async def all_of_them() -> None:
        await asyncio.gather(*(one(i) for i in range(n)))

    uvloop.run(all_of_them())
    return count[0]


METHODS = {"threads": _threads, "reader": _reader, "aiohttp": _aiohttp, "floor": _floor}

FRAMES_APP = """
import asyncio, json
async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await receive()
    await send({"type": "websocket.accept"})
    tokens, delay = map(float, (await receive())["text"].split())
    loop = asyncio.get_running_loop()
    start = loop.time()
    for i in range(int(tokens)):
        # One timer per frame, as a model's chunk would wake the loop.
        await asyncio.sleep(max(0.0, start + (i + 1) * delay - loop.time()))
        await send({"type": "websocket.send", "text": json.dumps({"type": "token", "message_id": 1, "text": f"t{i} "})})
    await send({"type": "websocket.send", "text": json.dumps({"type": "message_done"})})
    await receive()
"""


def frames(args) -> list[str]:
    """The server's CPU per websocket frame: a bare ASGI app under uvicorn, deflate on and off."""
    import websockets

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "frames_app.py").write_text(FRAMES_APP)
        for r in range(args.rounds):
            for deflate in ("true", "false") if r % 2 == 0 else ("false", "true"):
                port = _free_port()
                server = subprocess.Popen(
                    [
                        *(sys.executable, "-m", "uvicorn", "frames_app:app", "--app-dir", tmp, "--port", str(port)),
                        *("--loop", "uvloop", "--http", "httptools", "--ws", "websockets-sansio"),
                        *("--ws-per-message-deflate", deflate, "--no-access-log", "--log-level", "warning"),
                    ]
                )

                async def client(i: int, port: int = port) -> int:
                    for _attempt in range(100):
                        try:
                            ws = await websockets.connect(f"ws://127.0.0.1:{port}/", max_size=None)
                            break
                        except OSError:
                            await asyncio.sleep(0.1)
                    got = 0
                    async with ws:
                        await asyncio.sleep(1.0 + i * args.spread / args.streams)
                        await ws.send(f"{args.tokens} {1 / args.rate}")
                        async for raw in ws:
                            if json.loads(raw)["type"] != "token":
                                break
                            got += 1
                    return got

                async def clients() -> list[int]:
                    return await asyncio.gather(*(client(i) for i in range(args.streams)))

                time.sleep(1.0)
                before = _cpu_of(server.pid)
                got = sum(asyncio.run(clients()))
                used = _cpu_of(server.pid) - before
                server.terminate()
                server.wait()
                per_frame = used / max(1, got) * 1e6
                rows.append(f"| {r + 1} | websocket frames, deflate {deflate} | {got} | {per_frame:.1f} µs |")
    return rows


def _ratios(per_token: dict[tuple[str, str], list[float]], methods: list[str]) -> list[str]:
    """Each method's CPU per token over all rounds, as a multiple of the process's reader's."""
    if "reader" not in methods:
        return []
    rows = ["\n| protocol | method | CPU per token, all rounds | × reader |", "|---|---|---|---|"]
    for (protocol, name), values in sorted(per_token.items()):
        mine, theirs = sum(values) / len(values), sum(per_token[(protocol, "reader")]) / len(values)
        rows.append(f"| {protocol} | {name} | {mine * 1e6:.1f} µs | {mine / theirs:.2f} |")
    return rows


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=150)
    parser.add_argument("--rate", type=float, default=10.0, help="tokens per second per stream")
    parser.add_argument("--spread", type=float, default=5.0, help="seconds over which the streams start")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--methods", default=",".join(METHODS), help="which, comma-separated (default: all)")
    parser.add_argument("--frames", action="store_true", help="also the websocket frame floor under uvicorn")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    servers = {}
    for protocol in MODELS:
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child, protocol, args.tokens, 1 / args.rate), daemon=True)
        process.start()
        servers[protocol] = (process, parent, parent.recv())
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "currechat.settings",
            "DEBUG": "1",
            "CURRECHAT_VAR_DIR": tempfile.mkdtemp(prefix="currechat-bench-streams-"),
            "OLLAMA_HOST": servers["ollama"][2],
            "OPENAI_BASE_URL": servers["openai"][2],
            "LOG_LEVEL": "WARNING",
        }
    )
    import django

    django.setup()
    rows = [
        f"\n{args.streams} streams at once, {args.tokens} tokens at {args.rate:g} tokens/s each, "
        f"started over {args.spread:g} s; {os.cpu_count()} cores\n",
        "| round | protocol, method | tokens read | CPU per token |",
        "|---|---|---|---|",
    ]
    methods = args.methods.split(",")
    per_token: dict[tuple[str, str], list[float]] = {}
    try:
        for protocol in MODELS:  # not counted: imports, first connections
            for name in methods:
                METHODS[name](protocol, 5, 0.0)
        for r in range(args.rounds):
            for protocol in MODELS:
                for name in methods if r % 2 == 0 else methods[::-1]:
                    before = cpu()
                    got = METHODS[name](protocol, args.streams, args.spread / args.streams)
                    used = cpu() - before
                    per_token.setdefault((protocol, name), []).append(used / max(1, got))
                    rows.append(f"| {r + 1} | {protocol}, {name} | {got} | {used / max(1, got) * 1e6:.1f} µs |")
                    print(rows[-1], flush=True)
        rows += _ratios(per_token, methods)
        if args.frames:
            rows += frames(args)
        rows.append(f"\nmachine load average {os.getloadavg()[0]:.1f} at the end")
        print("\n".join(rows))
        return 0
    finally:
        for process, parent, _url in servers.values():
            parent.send("stop")
            process.join(10)


if __name__ == "__main__":
    sys.exit(main())
