"""Chat load behind nginx, comparing two deployments in the same run (`bench/chat_load.py --nginx` and
`--before`): each is the production layout of tests/deployment.py (nginx with TLS → uvicorn web
processes → PostgreSQL, Redis with a password), and rounds alternate between them, so whatever else
the shared machine does hits both alike.

    .venv/bin/python bench/chat_load.py --nginx 1,2 --chats 100,200 --tokens 100 --rate 20 --rounds 2
    .venv/bin/python bench/chat_load.py --before d3b0a4b --chats 200 --tokens 100 --rate 20 --rounds 2
    .venv/bin/python bench/chat_load.py --servers uvicorn,daphne --chats 200 --tokens 150 --rate 10 --rounds 2

--nginx 1,2    one web process against two (CPU per streamed token must not grow from 1 to 2: nothing
               shared serialises them);
--before REV   the code of REV (`git archive`) against the working tree, one web process each: the
               server's CPU per streamed token before and after a change, on both protocols;
--servers uvicorn,daphne
               one web process of each ASGI server, same code (docs/DEPLOY.md says which and why);
--deflate on,off
               uvicorn with and without websocket per-message compression.

Reported per deployment, protocol and load: tokens per second delivered, the server's own time to
first token (first token at the client − message sent − the model's delay before its first chunk)
p50 / p95, the web processes' CPU per streamed token (all of them together, and each one's share),
lost tokens (against the exact sequence the model sent) and the machine's load average.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import shutil
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.chat_load import MODELS, PROTOCOLS, cpu_seconds, pct, start_model_servers  # noqa: E402
from bench.harness import cpu_by_thread, thread_times  # noqa: E402
from tests.deployment import Stack  # noqa: E402

# Run in each stack's own `manage.py shell` (its PostgreSQL): per protocol, a prompt and COUNT students
# with a chat and a signed-in session each, made as chat_load makes them.
PREPARE = """
import json
from bench.chat_load import prepare_data
print(json.dumps({protocol: prepare_data(COUNT - 1, protocol, model, None) for protocol, model in MODELS.items()}))
"""


@dataclass
class Run:
    index: int
    sent: float = 0.0
    first: float | None = None
    tokens: list[str] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # when each token event arrived
    error: str = ""


def open_chat(stack, tls, chat: tuple[int, str]):
    """A chat's websocket through nginx, as the page opens it (`await` it, or `async with`)."""
    import websockets

    chat_id, cookie = chat
    return websockets.connect(
        f"wss://localhost:{stack.https_port}/ws/chats/{chat_id}/",
        ssl=tls,
        additional_headers={"Cookie": f"sessionid={cookie}", "Origin": stack.url},
        max_size=None,
        open_timeout=60,
    )


async def one_chat(stack: Stack, tls: ssl.SSLContext, index: int, chat: tuple[int, str], start_at: float) -> Run:
    run = Run(index)
    try:
        async with open_chat(stack, tls, chat) as ws:
            await asyncio.sleep(max(0.0, start_at - time.monotonic()))
            run.sent = time.monotonic()
            await ws.send(json.dumps({"type": "user_message", "content": f"chat {index}: count for me"}))
            async for raw in ws:
                event = json.loads(raw)
                if event["type"] == "token":
                    run.first = run.first or time.monotonic()
                    run.tokens.append(event["text"])
                    run.times.append(time.monotonic())
                elif event["type"] == "message_done":
                    break
                elif event["type"] == "error":
                    run.error = event["detail"]
                    break
    except Exception as exc:  # a failed chat is a result to report
        run.error = f"{type(exc).__name__}: {exc}"
    return run


async def run_round(stack: Stack, tls: ssl.SSLContext, chats: list, ramp: float, first: int, begin: float) -> list[Run]:
    spacing = ramp / max(1, len(chats))
    return await asyncio.gather(
        *(one_chat(stack, tls, first + i, chat, begin + i * spacing) for i, chat in enumerate(chats))
    )


class SteadyWindow(threading.Thread):
    """The web processes' CPU over the window in which every answer of the round streams: after the
    last chat has started, before the first can end. Only streaming happens in it (no question is
    taken, none is finished), so its CPU over the tokens delivered in it is the CPU per streamed token,
    with nothing of the questions' own work."""

    def __init__(self, pids: list[int], start: float, end: float):
        super().__init__(daemon=True)
        self.pids, self.start_at, self.end_at = pids, start, end
        self.cpu: list[float] = []

    def run(self) -> None:
        time.sleep(max(0.0, self.start_at - time.monotonic()))
        before = [cpu_seconds(pid) for pid in self.pids]
        time.sleep(max(0.0, self.end_at - time.monotonic()))
        self.cpu = [cpu_seconds(pid) - b for pid, b in zip(self.pids, before, strict=True)]


def measure(stack: Stack, tls, chats: list, args, first: int) -> dict:
    """One round of `chats` answers, all streaming at once."""
    pids = [web.pid for web in stack.web]
    cpu_before = [cpu_seconds(pid) for pid in pids]
    threads_before = [thread_times(pid) for pid in pids]
    wall = time.monotonic()
    begin = wall + 3.0  # every socket open first
    # From a second after the last question to a second before the first answer can end.
    window = SteadyWindow(pids, begin + args.ramp + 1.0, begin + args.tokens / args.rate - 1.0)
    window.start()
    runs = asyncio.run(run_round(stack, tls, chats, args.ramp, first, begin))
    wall = time.monotonic() - wall
    window.join()
    cpu = [cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
    by_thread: dict[str, float] = {}
    for pid, before in zip(pids, threads_before, strict=True):
        for kind, seconds in cpu_by_thread(before, thread_times(pid)).items():
            by_thread[kind] = by_thread.get(kind, 0.0) + seconds
    expected = [f"t{i}" for i in range(args.tokens)]
    streamed = sum(len("".join(r.tokens).split()) for r in runs)
    in_window = sum(
        len(text.split())
        for r in runs
        for text, at in zip(r.tokens, r.times, strict=True)
        if window.start_at <= at < window.end_at
    )
    steady = sum(window.cpu) / max(1, in_window) * 1e6 if window.cpu and window.end_at > window.start_at else None
    # Tokens per websocket frame (a token event carries those that arrived together, chat/turn/runner.py):
    # a process that falls behind sends fuller frames, and a frame costs about the same however full.
    frames_in_window = sum(1 for r in runs for at in r.times if window.start_at <= at < window.end_at)
    frames = sum(len(r.times) for r in runs)
    lost = sum(len(set(expected) - set("".join(r.tokens).split())) for r in runs if not r.error)
    own = [((r.first - r.sent) - 1.0 / args.rate) * 1000 for r in runs if r.first is not None and not r.error]
    return {
        "tokens_per_s": streamed / max(wall - 3.0, 1e-9),
        "p50": pct(own, 0.5),
        "p95": pct(own, 0.95),
        "cpu_us": sum(cpu) / max(1, streamed) * 1e6,
        "steady_us": steady,
        "steady_each_us": [c / max(1, in_window) * len(pids) * 1e6 for c in window.cpu],
        "tokens_per_frame": {"steady": in_window / max(1, frames_in_window), "all": streamed / max(1, frames)},
        # What is left of the round's CPU once its tokens are paid at the steady rate: each question's own.
        "question_ms": (sum(cpu) - (steady or 0) / 1e6 * streamed) / max(1, len(runs)) * 1e3,
        "cpu": cpu,
        # All of the round's CPU per streamed token again, by the kind of thread that spent it.
        "threads_us": {k: v / max(1, streamed) * 1e6 for k, v in sorted(by_thread.items(), key=lambda kv: -kv[1])},
        "streamed": streamed,
        "chats": len(runs),
        "cpu_share": [c / max(sum(cpu), 1e-9) for c in cpu],
        "lost": lost,
        "failed": sum(1 for r in runs if r.error),
        "errors": sorted({r.error for r in runs if r.error})[:3],
        "load": os.getloadavg()[0],
    }


def source_of(rev: str, tmp: Path) -> Path:
    """The code of `rev`, unpacked from git (the web process of the "before" deployment runs it)."""
    target = tmp / f"src-{rev}"
    target.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    for compiled in ROOT.glob("locale/*/LC_MESSAGES/*.mo"):
        destination = target / compiled.relative_to(ROOT)
        if destination.parent.exists():
            shutil.copy(compiled, destination)
    return target


def main(args) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="currechat-chat-deploy-"))
    ctx = multiprocessing.get_context("spawn")
    loads = [int(n) for n in str(args.chats).split(",")]
    servers = start_model_servers(ctx, [f"t{i} " for i in range(args.tokens)], 1.0 / args.rate)
    model = {"ollama": servers["ollama"][2], "openai": servers["openai"][2]}
    stacks: dict[str, Stack] = {}
    common = {"CHAT_RATE_LIMIT": "0", "CHAT_WORKER_THREADS": "512"}
    try:

        def stack(label: str, folder: str, **options) -> None:
            """A deployment with no ingestion workers, on both model servers (one web process unless said)."""
            options.setdefault("webs", 1)
            stacks[label] = Stack(
                tmp / folder, model["ollama"], workers=0, openai_url=model["openai"], extra_env=common, **options
            )

        if args.before:
            old = source_of(args.before, tmp)
            stack(f"before ({args.before})", "before", source=old, probe_path="/api/v1/health", lifespan="auto")
            stack("after (working tree)", "after")
        elif args.deflate:
            for value in args.deflate.split(","):
                stack(f"deflate {value}", f"deflate-{value}", deflate=value == "on")
        elif args.servers:
            for server in args.servers.split(","):
                stack(server, server, server=server)
        else:
            for n in (int(x) for x in args.nginx.split(",")):
                stack(f"{n} web", f"web{n}", webs=n)
        chats: dict[str, dict] = {}
        for label, stack in stacks.items():
            stack.start()
            chats_needed = max(loads) * (args.rounds + 1)
            prepare = PREPARE.replace("MODELS", repr(MODELS)).replace("COUNT", str(chats_needed))
            chats[label] = json.loads(stack.manage("shell", "-c", prepare).strip().splitlines()[-1])
        tls = {
            label: ssl.create_default_context(cafile=str(s.tmp / "nginx" / "cert.pem")) for label, s in stacks.items()
        }
        used = {label: {p: 0 for p in PROTOCOLS} for label in stacks}

        def take(label: str, protocol: str, n: int) -> list:
            start = used[label][protocol]
            used[label][protocol] += n
            return chats[label][protocol][start : start + n]

        # Warm-up (not counted): every deployment's first burst of connections, threads and caches.
        for label, stack in stacks.items():
            for protocol in PROTOCOLS:
                measure(stack, tls[label], take(label, protocol, min(loads)), args, 10**6)
        results: list[tuple[int, str, int, str, dict]] = []
        order = list(stacks)
        for r in range(args.rounds):
            for load in loads:
                for protocol in PROTOCOLS:
                    for label in order if r % 2 == 0 else order[::-1]:
                        result = measure(stacks[label], tls[label], take(label, protocol, load), args, (r + 1) * 10**5)
                        results.append((r, protocol, load, label, result))
                        print(f"round {r + 1} {protocol} {load} chats {label}: {result}", flush=True)
        print(report(results, args))
        return 0
    finally:
        for stack in stacks.values():
            stack.stop()
        for process, _, _ in servers.values():
            if process.is_alive():
                process.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


def _by_thread(results: list, labels: list[str]) -> list[str]:
    """The all-in CPU per streamed token split by the kind of thread that spent it (medians over
    rounds): the event loop's share is the streaming and the sockets, the chat-turn threads' the
    questions' own work."""
    kinds = sorted({k for *_, m in results for k in m["threads_us"] if m["threads_us"][k] >= 1.0})
    rows = ["\nMedian over rounds, all-in CPU per streamed token by thread:\n"]
    rows.append("| deployment | protocol | chats | " + " | ".join(kinds) + " |")
    rows.append("|---|---|---|" + "---|" * len(kinds))
    for label in labels:
        for protocol in PROTOCOLS:
            for load in sorted({r[2] for r in results}):
                found = [m["threads_us"] for _r, p, n, lab, m in results if (p, n, lab) == (protocol, load, label)]
                if found:
                    cells = [f"{statistics.median(f.get(k, 0.0) for f in found):.0f} µs" for k in kinds]
                    rows.append(f"| {label} | {protocol} | {load} | " + " | ".join(cells) + " |")
    return rows


def report(results: list, args) -> str:
    """Every round, then the medians. CPU per streamed token is the steady window's (`SteadyWindow`);
    "all in" divides all of the round's CPU by its tokens, the questions' own work included, which
    is also given per question."""
    rows = [
        f"\n{args.tokens} tokens at {args.rate:g} tokens/s per answer, ramp {args.ramp:g} s; {args.rounds} rounds\n",
        "| deployment | protocol | chats | tokens/s | own TTFT p50 / p95 (ms) | CPU per streamed token "
        "(per process) | all in | CPU per question | CPU share per process | lost | failed | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _r, protocol, load, label, m in results:
        shares = " / ".join(f"{s:.0%}" for s in m["cpu_share"])
        each = " / ".join(f"{e:.0f}" for e in m["steady_each_us"])
        steady = f"{m['steady_us']:.0f} µs ({each})" if m["steady_us"] is not None else "(answers too short)"
        rows.append(
            f"| {label} | {protocol} | {load} | {m['tokens_per_s']:.0f} | {m['p50']:.1f} / {m['p95']:.1f} | "
            f"{steady} | {m['cpu_us']:.0f} µs | {m['question_ms']:.1f} ms | {shares} | {m['lost']} | "
            f"{m['failed']} | {m['load']:.1f} |"
        )
    labels = sorted({r[3] for r in results})
    for key, title, unit in (
        ("steady_us", "CPU per streamed token", "µs"),
        ("question_ms", "CPU per question", "ms"),
        ("cpu_us", "CPU per streamed token, all in", "µs"),
    ):
        rows.append(f"\nMedian over rounds, {title}:\n")
        rows.append("| protocol | chats | " + " | ".join(labels) + " |")
        rows.append("|---|---|" + "---|" * len(labels))
        for protocol in PROTOCOLS:
            for load in sorted({r[2] for r in results}):
                cells = []
                for label in labels:
                    found = [m[key] for _r, p, n, lab, m in results if (p, n, lab) == (protocol, load, label)]
                    values = sorted(v for v in found if v is not None)
                    cells.append(f"{statistics.median(values):.1f} {unit}" if values else "")
                rows.append(f"| {protocol} | {load} | " + " | ".join(cells) + " |")
    rows += _by_thread(results, labels)
    errors = sorted({e for *_, m in results for e in m["errors"]})
    if errors:
        rows.append("errors: " + "; ".join(errors[:5]))
    return "\n".join(rows)
