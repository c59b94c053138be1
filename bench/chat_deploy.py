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
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.chat_load import MODELS, PROTOCOLS, cpu_seconds, pct, start_model_servers  # noqa: E402
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
    error: str = ""


async def one_chat(
    stack: Stack, tls: ssl.SSLContext, index: int, chat: tuple[int, str], start_at: float, length: int
) -> Run:
    import websockets

    run = Run(index)
    chat_id, cookie = chat
    try:
        async with websockets.connect(
            f"wss://localhost:{stack.https_port}/ws/chats/{chat_id}/",
            ssl=tls,
            additional_headers={"Cookie": f"sessionid={cookie}", "Origin": stack.url},
            max_size=None,
            open_timeout=60,
        ) as ws:
            await asyncio.sleep(max(0.0, start_at - time.monotonic()))
            run.sent = time.monotonic()
            await ws.send(json.dumps({"type": "user_message", "content": f"chat {index}: count to {length}"}))
            async for raw in ws:
                event = json.loads(raw)
                if event["type"] == "token":
                    run.first = run.first or time.monotonic()
                    run.tokens.append(event["text"])
                elif event["type"] == "message_done":
                    break
                elif event["type"] == "error":
                    run.error = event["detail"]
                    break
    except Exception as exc:  # a failed chat is a result to report
        run.error = f"{type(exc).__name__}: {exc}"
    return run


async def run_round(stack: Stack, tls: ssl.SSLContext, chats: list, ramp: float, first: int, length: int) -> list[Run]:
    begin = time.monotonic() + 3.0  # every socket open first
    spacing = ramp / max(1, len(chats))
    return await asyncio.gather(
        *(one_chat(stack, tls, first + i, chat, begin + i * spacing, length) for i, chat in enumerate(chats))
    )


def measure(stack: Stack, tls, chats: list, args, first: int, length: int) -> dict:
    """One round of `chats` answers of `length` tokens each, all streaming at once."""
    pids = [web.pid for web in stack.web]
    cpu_before = [cpu_seconds(pid) for pid in pids]
    wall = time.monotonic()
    runs = asyncio.run(run_round(stack, tls, chats, args.ramp, first, length))
    wall = time.monotonic() - wall
    cpu = [cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before, strict=True)]
    expected = [f"t{i}" for i in range(length)]
    streamed = sum(len("".join(r.tokens).split()) for r in runs)
    lost = sum(len(set(expected) - set("".join(r.tokens).split())) for r in runs if not r.error)
    own = [((r.first - r.sent) - 1.0 / args.rate) * 1000 for r in runs if r.first is not None and not r.error]
    return {
        "tokens_per_s": streamed / max(wall - 3.0, 1e-9),
        "p50": pct(own, 0.5),
        "p95": pct(own, 0.95),
        "cpu_us": sum(cpu) / max(1, streamed) * 1e6,
        "cpu": cpu,
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
    lengths = [int(n) for n in str(args.tokens).split(",")]
    servers = start_model_servers(ctx, [f"t{i} " for i in range(lengths[0])], 1.0 / args.rate)
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
            chats_needed = max(loads) * (args.rounds * len(lengths) + 1)
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
                measure(stack, tls[label], take(label, protocol, min(loads)), args, 10**6, lengths[0])
        results: list[tuple[int, str, int, str, dict]] = []
        order = list(stacks)
        for r in range(args.rounds):
            for load in loads:
                for protocol in PROTOCOLS:
                    for label in order if r % 2 == 0 else order[::-1]:
                        # Both lengths back to back, in turns first: the same machine for both.
                        for length in lengths if r % 2 == 0 else lengths[::-1]:
                            chats_now = take(label, protocol, load)
                            result = measure(stacks[label], tls[label], chats_now, args, (r + 1) * 10**5, length)
                            result["length"] = length
                            results.append((r, protocol, load, label, result))
                            where = f"round {r + 1} {protocol} {load} chats {label} {length} tokens"
                            print(f"{where}: {result}", flush=True)
        print(report(results, args))
        if len(lengths) > 1:
            print(marginal(results, lengths))
        return 0
    finally:
        for stack in stacks.values():
            stack.stop()
        for process, _, _ in servers.values():
            if process.is_alive():
                process.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


def report(results: list, args) -> str:
    rows = [
        f"\n{args.tokens} tokens at {args.rate:g} tokens/s per answer, ramp {args.ramp:g} s; {args.rounds} rounds\n",
        "| deployment | protocol | chats | tokens | tokens/s | own TTFT p50 / p95 (ms) | CPU per streamed token, "
        "all in | CPU share per process | lost | failed | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _r, protocol, load, label, m in results:
        shares = " / ".join(f"{s:.0%}" for s in m["cpu_share"])
        rows.append(
            f"| {label} | {protocol} | {load} | {m['length']} | {m['tokens_per_s']:.0f} | {m['p50']:.1f} / "
            f"{m['p95']:.1f} | {m['cpu_us']:.0f} µs | {shares} | {m['lost']} | {m['failed']} | {m['load']:.1f} |"
        )
    rows.append("\nMedian CPU per streamed token over rounds, all in (the questions' own work included):\n")
    rows.append("| protocol | chats | " + " | ".join(sorted({r[3] for r in results})) + " |")
    labels = sorted({r[3] for r in results})
    rows.append("|---|---|" + "---|" * len(labels))
    for protocol in PROTOCOLS:
        for load in sorted({r[2] for r in results}):
            cells = []
            for label in labels:
                values = sorted(m["cpu_us"] for _r, p, n, lab, m in results if (p, n, lab) == (protocol, load, label))
                cells.append(f"{values[len(values) // 2]:.0f} µs" if values else "")
            rows.append(f"| {protocol} | {load} | " + " | ".join(cells) + " |")
    errors = sorted({e for *_, m in results for e in m["errors"]})
    if errors:
        rows.append("errors: " + "; ".join(errors[:5]))
    return "\n".join(rows)


def marginal(results: list, lengths: list[int]) -> str:
    """CPU per streamed token as the cost of one more token: the web processes' CPU for the long
    answers less that for the short ones, over the tokens between them (same chats, same round).
    What stays is each question's own work (sign-in, permission, rate limit, budget, the writes,
    the rendered `message_done`), reported per question."""
    short, long = min(lengths), max(lengths)
    rows = [
        f"\nCPU per streamed token, marginal ({short} → {long} tokens per answer), and per question:\n",
        "| round | deployment | protocol | chats | CPU per streamed token | per process | CPU per question |",
        "|---|---|---|---|---|---|---|",
    ]
    found: dict[tuple[str, str, int], list[float]] = {}
    for r, protocol, load, label, m in results:
        if m["length"] != long:
            continue
        base = next(
            x for rr, p, n, lab, x in results if (rr, p, n, lab) == (r, protocol, load, label) and x["length"] == short
        )
        tokens = m["streamed"] - base["streamed"]
        each = [(c - b) / max(1, tokens) * len(m["cpu"]) * 1e6 for c, b in zip(m["cpu"], base["cpu"], strict=True)]
        per_token = (sum(m["cpu"]) - sum(base["cpu"])) / max(1, tokens) * 1e6
        per_question = (sum(base["cpu"]) - per_token / 1e6 * base["streamed"]) / max(1, base["chats"]) * 1e3
        found.setdefault((label, protocol, load), []).append(per_token)
        rows.append(
            f"| {r + 1} | {label} | {protocol} | {load} | {per_token:.0f} µs | "
            f"{' / '.join(f'{e:.0f}' for e in each)} µs | {per_question:.1f} ms |"
        )
    rows.append("\n| deployment | protocol | chats | median CPU per streamed token |\n|---|---|---|---|")
    for (label, protocol, load), values in sorted(found.items()):
        rows.append(f"| {label} | {protocol} | {load} | {statistics.median(values):.0f} µs |")
    return "\n".join(rows)
