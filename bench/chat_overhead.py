"""A chat's own CPU in the web process, by part: the websocket's connect and close, and a question
answered with one token, behind nginx as in production (issue 44).

    .venv/bin/python bench/chat_overhead.py --chats 200 --rounds 3
    .venv/bin/python bench/chat_overhead.py --before HEAD --chats 200 --rounds 3

bench/chat_load.py's "CPU per question" is what is left of a round's web-process CPU once its tokens
are paid at the steady rate: it holds the socket's connect and close, the question, and whatever
streaming costs beyond the steady rate while fewer answers stream (the ramp, the tail). This takes
it apart. The deployment is tests/deployment.py's (nginx with TLS → one uvicorn web process →
PostgreSQL, Redis with a password); the model is the Ollama-protocol test server in its own process,
answering every question with one token. Phases, each over `--chats` fresh chats (one each, as a
student opening a new chat; each chat's student is new too, as in chat_load, so every question is
its student's first of the week), `--concurrency` at a time, the web process's CPU (/proc, all its
threads) read before and after:

- idle: nothing sent for `--idle` seconds (the process's own timers); reported per second, and
  subtracted from the other phases pro rata of their wall time;
- connect: a websocket opened (the handshake behind nginx's TLS, sign-in, permission) and closed,
  nothing sent;
- question: a websocket opened first (not counted), one question answered with one token (counted,
  up to `message_done`), then closed (not counted);
- chat: connect, one question, close, all counted (≈ connect + question, or the two interact);
- long: as chat, but `--long-chats` chats all at once, each answered with `--tokens` tokens at `--rate`
  tokens/s (the OpenAI-protocol test server, whose prompt these chats use). Less the chat phase, it
  is what streaming costs per token with that many answers at once ("per token" in the report), to
  set against bench/chat_load.py's steady rate with 200. The same phase is also counted as
  chat_load counts it: "steady" (the CPU from 2 s after the questions to 1 s before the first answer
  can end, over the tokens the clients got in that window) and the CPU per question that leaves.

With --before REV the code of REV (`git archive`) runs in a second deployment beside the working
tree's, and the phases alternate between them in every round, so both meet the same machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shutil
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.chat_deploy import SteadyWindow, open_chat, source_of  # noqa: E402
from bench.chat_load import cpu_seconds, start_model_servers  # noqa: E402
from tests.deployment import Stack  # noqa: E402

PHASES = ("connect", "question", "chat", "long")
PREPARE = """
import json
from bench.chat_load import prepare_data
models = {"short": "qwen3:8b", "long": "openai:Qwen/Qwen3-8B"}
print(json.dumps({kind: prepare_data(COUNT - 1, "overhead-" + kind, model, None) for kind, model in models.items()}))
"""


async def _ask(ws, arrivals: list) -> None:
    await ws.send(json.dumps({"type": "user_message", "content": "One word, please."}))
    async for raw in ws:
        event = json.loads(raw)
        if event["type"] == "token":
            arrivals.append((time.monotonic(), len(event["text"].split())))
        elif event["type"] == "message_done":
            return
        if event["type"] == "error":
            raise RuntimeError(event["detail"])


async def _phase(
    stack: Stack, tls: ssl.SSLContext, phase: str, chats: list, concurrency: int, answer_s: float = 0.0
) -> tuple[float, float, float | None]:
    """(web CPU seconds, wall seconds, steady CPU µs per token) of one phase over `chats`. The steady
    figure is bench/chat_load.py's, for answers of `answer_s` seconds all asked at once: the web
    process's CPU from 2 s after the start to 1 s before the first answer can end, over the tokens
    the clients got in that window."""
    pid = stack.web[0].pid
    pool = asyncio.Semaphore(concurrency)
    arrivals: list[tuple[float, int]] = []
    sockets = [await open_chat(stack, tls, chat) for chat in chats] if phase == "question" else []

    async def one(i: int, chat) -> None:
        async with pool:
            if phase == "question":
                await _ask(sockets[i], arrivals)
                return
            async with await open_chat(stack, tls, chat) as ws:
                if phase in ("chat", "long"):
                    await _ask(ws, arrivals)

    cpu, wall = cpu_seconds(pid), time.monotonic()
    window = SteadyWindow([pid], wall + 2.0, wall + answer_s - 1.0)
    if answer_s > 3.0:
        window.start()
    await asyncio.gather(*(one(i, chat) for i, chat in enumerate(chats)))
    cpu, wall = cpu_seconds(pid) - cpu, time.monotonic() - wall
    steady = None
    if window.is_alive() or window.cpu:
        window.join()
        tokens = sum(n for at, n in arrivals if window.start_at <= at < window.end_at)
        steady = window.cpu[0] / max(1, tokens) * 1e6
    for ws in sockets:
        await ws.close()
    await asyncio.sleep(0.5)  # the closes' own work is not the next phase's
    return cpu, wall, steady


def idle_rate(stack: Stack, seconds: float) -> float:
    pid = stack.web[0].pid
    before = cpu_seconds(pid)
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", type=int, default=200, help="chats per phase and round")
    parser.add_argument("--concurrency", type=int, default=10, help="chats in flight at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds of the idle phase")
    parser.add_argument("--long-chats", type=int, default=20, help="chats of the long phase, all at once (0: none)")
    parser.add_argument("--tokens", type=int, default=300, help="tokens per answer of the long phase")
    parser.add_argument("--rate", type=float, default=10.0, help="tokens per second of the long phase")
    parser.add_argument("--before", default="", help="the code of this git revision beside the tree")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="currechat-chat-overhead-"))
    ctx = multiprocessing.get_context("spawn")
    short = start_model_servers(ctx, ["word"], 0.0)
    long = start_model_servers(ctx, [f"t{i} " for i in range(args.tokens)], 1.0 / args.rate)
    model = {"model_url": short["ollama"][2], "openai_url": long["openai"][2]}
    stacks: dict[str, Stack] = {}
    common = {"CHAT_RATE_LIMIT": "0", "CHAT_WORKER_THREADS": "64"}
    try:
        if args.before:
            old = source_of(args.before, tmp)
            stacks[f"before ({args.before})"] = Stack(
                tmp / "before", webs=1, workers=0, source=old, extra_env=common, **model
            )
        stacks["after (working tree)" if args.before else "tree"] = Stack(
            tmp / "after", webs=1, workers=0, extra_env=common, **model
        )
        needed = args.chats * (len(PHASES) * args.rounds + 1)  # more than enough of both kinds
        chats, tls = {}, {}
        for label, stack in stacks.items():
            stack.start()
            out = stack.manage("shell", "-c", PREPARE.replace("COUNT", str(needed)))
            chats[label] = {kind: iter(c) for kind, c in json.loads(out.strip().splitlines()[-1]).items()}
            tls[label] = ssl.create_default_context(cafile=str(stack.tmp / "nginx" / "cert.pem"))
        for label, stack in stacks.items():  # warm-up, not counted
            warm = [next(chats[label]["short"]) for _ in range(args.chats)]
            asyncio.run(_phase(stack, tls[label], "chat", warm, 10))
        results: dict[tuple[str, str], list[float]] = {}
        order = list(stacks)
        for r in range(args.rounds):
            for label in order if r % 2 == 0 else order[::-1]:
                idle = idle_rate(stacks[label], args.idle)
                results.setdefault((label, "idle"), []).append(idle * 1e3)
                for phase in PHASES if args.long_chats else PHASES[:-1]:
                    n, kind = (args.long_chats, "long") if phase == "long" else (args.chats, "short")
                    picked = [next(chats[label][kind]) for _ in range(n)]
                    at_once = n if phase == "long" else args.concurrency
                    answer_s = args.tokens / args.rate if phase == "long" else 0.0
                    cpu, wall, steady = asyncio.run(_phase(stacks[label], tls[label], phase, picked, at_once, answer_s))
                    per = (cpu - idle * wall) / n * 1e3
                    if phase == "long":  # µs per streamed token, beyond a one-token chat's CPU
                        token = (per - results[(label, "chat")][-1]) / args.tokens * 1e3
                        results.setdefault((label, "token"), []).append(token)
                        if steady is not None:  # chat_load's figures, the same way
                            results.setdefault((label, "steady"), []).append(steady)
                            as_chat_load = per - steady * args.tokens / 1e3
                            results.setdefault((label, "as chat_load"), []).append(as_chat_load)
                    results.setdefault((label, phase), []).append(per)
                    print(
                        f"round {r + 1} {label} {phase}: {per:.2f} ms per chat "
                        f"(CPU {cpu:.2f} s over {wall:.1f} s, idle {idle * 1e3:.1f} ms/s, "
                        f"load {os.getloadavg()[0]:.1f})",
                        flush=True,
                    )
        print(report(results, order, args))
        return 0
    finally:
        for stack in stacks.values():
            stack.stop()
        for process, _, _ in [*short.values(), *long.values()]:
            if process.is_alive():
                process.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


def report(results: dict, order: list[str], args) -> str:
    rows = [
        f"\n{args.chats} chats per phase, {args.concurrency} at a time, {args.rounds} rounds; "
        "web-process CPU per chat, idle subtracted (median of rounds, then each round)\n",
        "| deployment | idle (ms/s) | connect + close | one-token question | connect + question + close "
        f"| with {args.tokens} tokens ({args.long_chats} at once) | per token (µs) | steady (µs) "
        "| CPU per question as chat_load counts it (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label in order:
        cells = []
        for phase in ("idle", *PHASES, "token", "steady", "as chat_load"):
            values = results.get((label, phase), [float("nan")])
            each = " / ".join(f"{v:.1f}" for v in values)
            cells.append(f"{statistics.median(values):.1f} ({each})")
        rows.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    sys.exit(main())
