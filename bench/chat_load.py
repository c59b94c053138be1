"""Chat load: N concurrent websocket chats against the app served by daphne on loopback.

    .venv/bin/python bench/chat_load.py --chats 200 --tokens 150 --rate 10 --ramp 10

Everything is real except the model: a Redis Stack server, `daphne currechat.asgi:application`
in its own process (SQLite, the `make run` default), and the model servers in processes of their
own, streaming every answer at a fixed rate: the Ollama-protocol test server
(tests/fake_ollama.FakeOllama) and the OpenAI-protocol one (tests/fake_openai.FakeOpenAI). Each
run measures both protocols against the same server process, in `--rounds` rounds each. In a
round, N chats alternate between a prompt with weekly token budgets off (it has none) and one
with them on (a budget that is checked before every turn and counted after every model call, but
never reached), so the two settings are compared in the same window, under the same load from
whatever else the machine runs. The clients (this process, `websockets`) start chats evenly over
`--ramp` seconds; answers last longer than the ramp, so all N chats stream at the same time.

With --guard the pair compared is tutor mode's leak guard off and on instead (bench/chat_guard.py).

With --nginx 1,2 or --before REV the chats go through the production layout instead (nginx, uvicorn,
PostgreSQL), two deployments compared in the same run: bench/chat_deploy.py.

Reported:
- lost / reordered / duplicated tokens per chat, against the exact sequence the model sent;
- the server's own time to first token, excluding the model: (first token at the client - message
  sent) - (the model's delay before its first chunk). It is split into "before the model" (message
  sent -> the model server receives the request; clocks are CLOCK_MONOTONIC, shared by all
  processes of the machine) and "after the model" (first chunk written -> token at the client).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import chat_guard  # noqa: E402
from bench.harness import cpu_seconds  # noqa: E402  (chat_deploy and chat_guard take it from here too)
from scripts.redis_stack import RedisStackServer, free_port  # noqa: E402

MARKER = re.compile(r"chat (\d+)")


# --- The model server, in its own process --------------------------------------------------------
def _model_server(conn, tokens: list[str], delay: float, protocol: str) -> None:
    from tests.fake_ollama import FakeOllama, Reply
    from tests.fake_openai import FakeOpenAI

    # Quiet: the app's idle keep-alive connections to it are reset when daphne stops.
    sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    arrivals: dict[int, float] = {}
    fake = FakeOllama() if protocol == "ollama" else FakeOpenAI()

    def respond(body: dict) -> Reply:
        last = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
        found = MARKER.search(last)
        if found:
            arrivals[int(found.group(1))] = time.monotonic()
        return Reply(chunks=tokens, delay=delay, prompt_tokens=20)

    fake.responder = respond
    fake.start()
    conn.send(fake.url)
    conn.recv()  # "dump"
    conn.send(arrivals)
    fake.stop()


# --- The app's data, written straight to its SQLite file -----------------------------------------
def setup_database() -> None:
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def prepare_data(n: int, label: str, chat_model: str, budget: int | None) -> list[tuple[int, str]]:
    """A teacher, a prompt without collections (the model answers directly) with the given model
    and weekly token budget, N + 1 students each with a chat and a logged-in session.
    Returns [(chat id, sessionid cookie)]."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    from accounts.models import Role, User
    from chat.models import ChatSession, Enrollment, Prompt

    teacher = User.objects.create(username=f"bench-teacher-{label}", role=Role.TEACHER, password="!")
    prompt = Prompt.objects.create(
        owner=teacher, name="Bench", system_prompt="Be brief.", chat_model=chat_model, weekly_token_budget=budget
    )
    # Unusable passwords: hashing 200 real ones would take a minute and is not what we measure.
    students = User.objects.bulk_create(
        [User(username=f"bench-student-{label}-{i}", role=Role.STUDENT, password="!") for i in range(n + 1)]
    )
    Enrollment.objects.bulk_create([Enrollment(student=s, prompt=prompt, number=n) for n, s in enumerate(students, 1)])
    chats = []
    for student in students:
        chat = ChatSession.objects.create(prompt=prompt, user=student)
        store = SessionStore()
        store[SESSION_KEY] = str(student.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = student.get_session_auth_hash()
        store.create()
        chats.append((chat.id, store.session_key))
    return chats


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"daphne did not listen on {port} within {timeout:.0f}s")


# --- The clients -----------------------------------------------------------------------------------
@dataclass
class ChatRun:
    index: int
    sent: float = 0.0
    first: float | None = None
    done: float | None = None
    tokens: list[str] = field(default_factory=list)  # the text of each token event
    final: str | None = None
    status: str = ""  # of the stored answer ("complete", or "stopped" for a chat that pressed Stop)
    stop_after: int | None = None  # press Stop after this many token events
    error: str = ""


async def one_chat(
    index: int, port: int, chat_id: int, cookie: str, start_at: float, stop_after: int | None = None
) -> ChatRun:
    import websockets

    run = ChatRun(index, stop_after=stop_after)
    headers = {"Cookie": f"sessionid={cookie}", "Origin": f"http://127.0.0.1:{port}"}
    try:
        async with websockets.connect(
            f"ws://127.0.0.1:{port}/ws/chats/{chat_id}/", additional_headers=headers, max_size=None
        ) as ws:
            await asyncio.sleep(max(0.0, start_at - time.monotonic()))
            run.sent = time.monotonic()
            await ws.send(json.dumps({"type": "user_message", "content": f"chat {index}: count for me"}))
            async for raw in ws:
                event = json.loads(raw)
                if event["type"] == "token":
                    if run.first is None:
                        run.first = time.monotonic()
                    run.tokens.append(event["text"])
                    if run.stop_after is not None and len(run.tokens) == run.stop_after:
                        await ws.send(json.dumps({"type": "stop"}))
                elif event["type"] == "message_done":
                    run.done, run.final = time.monotonic(), event["message"]["content"]
                    run.status = event["message"]["status"]
                    break
                elif event["type"] == "error":
                    run.error = event["detail"]
                    break
    except Exception as exc:  # a failed chat is a result to report, not a crash of the bench
        run.error = f"{type(exc).__name__}: {exc}"
    return run


async def run_chats(
    port: int,
    chats: list[tuple[int, str]],
    ramp: float,
    first_index: int = 0,
    stop_every: int = 0,
    group: int = 1,
) -> list[ChatRun]:
    """Every `stop_every`-th group of `group` chats presses Stop after its 10th token event (0: none
    does); with chats of two configurations alternating, a group of 2 gives both the same share."""
    begin = time.monotonic() + 2.0  # all sockets open first; then messages go out over the ramp
    spacing = ramp / max(1, len(chats))
    jobs = [
        one_chat(
            first_index + i,
            port,
            cid,
            cookie,
            begin + i * spacing,
            10 if stop_every and (i // group) % stop_every == 0 else None,
        )
        for i, (cid, cookie) in enumerate(chats)
    ]
    return await asyncio.gather(*jobs)


# --- Report ----------------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else float("nan")


def check(run: ChatRun, expected: list[str]) -> tuple[int, bool, int]:
    """(lost tokens, order wrong, duplicated tokens) for one chat.

    The server may send tokens that queued up together in one event, so the check is on the
    token sequence the events spell out, not on the events themselves.
    """
    got = "".join(run.tokens).split()
    want = [t.strip() for t in expected]
    lost = sum(1 for t in want if t not in got)
    dupes = len(got) - len(set(got))
    kept = [t for t in got if t in want]
    reordered = kept != [t for t in want if t in kept]
    return lost, reordered, dupes


def peak_concurrency(runs: list[ChatRun]) -> int:
    edges = sorted([(r.sent, 1) for r in runs if r.done] + [(r.done, -1) for r in runs if r.done])
    now = peak = 0
    for _, step in edges:
        now += step
        peak = max(peak, now)
    return peak


def report(runs: list[ChatRun], arrivals: dict[int, float], expected: list[str], args) -> str:
    ok = [r for r in runs if not r.error and r.first is not None and r.index in arrivals]
    stopping = [r for r in runs if r.stop_after is not None and not r.error]
    # A stopped answer lacks its tail on purpose: only completed answers are checked for lost tokens.
    checks = [check(r, expected) for r in runs if not r.error and r.stop_after is None]
    stopped_ok = sum(1 for r in stopping if r.status == "stopped")
    lost = sum(c[0] for c in checks)
    reordered = sum(1 for c in checks if c[1])
    dupes = sum(c[2] for c in checks)
    mismatched = sum(1 for r in runs if r.final is not None and r.final != "".join(r.tokens))
    own = [((r.first - r.sent) - args.first_delay) * 1000 for r in ok]
    before = [(arrivals[r.index] - r.sent) * 1000 for r in ok]
    after = [(r.first - arrivals[r.index] - args.first_delay) * 1000 for r in ok]
    total = [(r.first - r.sent) * 1000 for r in ok]
    errors = sorted({r.error for r in runs if r.error})
    rows = [
        f"chats: {len(runs)} (completed {sum(1 for r in runs if r.final is not None)}, "
        f"failed {sum(1 for r in runs if r.error)}), peak concurrent {peak_concurrency(runs)}",
        f"model: {args.tokens} tokens at {args.rate:g} tokens/s, first chunk after {args.first_delay * 1000:.0f} ms; "
        f"ramp {args.ramp:g} s",
        f"tokens: lost {lost}, reordered chats {reordered}, duplicated {dupes}, "
        f"final text != streamed text in {mismatched} chats",
        f"Stop pressed in {len(stopping)} chats: stored as stopped {stopped_ok}, "
        f"stored text == streamed text in {sum(1 for r in stopping if r.final == ''.join(r.tokens))}",
        "",
        "| time to first token (ms) | p50 | p95 | max |",
        "|---|---|---|---|",
    ]
    for label, values in [
        ("server's own (excl. model)", own),
        ("  before the model request", before),
        ("  model chunk -> client", after),
        ("as the student sees it (incl. model)", total),
    ]:
        rows.append(f"| {label} | {pct(values, 0.5):.1f} | {pct(values, 0.95):.1f} | {max(values, default=0):.1f} |")
    if ok:
        rows.append(f"\nmean answer time {statistics.mean(r.done - r.sent for r in ok if r.done):.2f} s")
    if args.server_cpu is None:
        return "\n".join(rows + [f"errors: {'; '.join(errors[:5])}"] if errors else rows)
    streamed = sum(len("".join(r.tokens).split()) for r in runs)
    rows.append(
        f"server CPU: {args.server_cpu:.1f} s over {args.wall:.1f} s ({args.server_cpu / args.wall:.0%} of a core), "
        f"{args.server_cpu / max(1, streamed) * 1e6:.0f} µs per streamed token; "
        f"machine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    if errors:
        rows.append("errors: " + "; ".join(errors[:5]))
    return "\n".join(rows)


PROTOCOLS = ("ollama", "openai")
MODELS = {"ollama": "qwen3:8b", "openai": "openai:Qwen/Qwen3-8B"}
NEVER_REACHED = 10**9  # a budget every turn is checked against and counted towards


def start_model_servers(ctx, expected: list[str], delay: float) -> dict[str, tuple]:
    servers = {}
    for protocol in ("ollama", "openai"):
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_model_server, args=(child, expected, delay, protocol), daemon=True)
        process.start()
        servers[protocol] = (process, parent, parent.recv())
    return servers


def mixed_round(port: int, daphne_pid: int, off: list, on: list, args, first_index: int) -> tuple:
    """One round of one protocol: budgets off and on in the same window.

    The chats alternate between the prompt without a budget and the one with a budget, so whatever
    else the shared machine does during the round hits both alike; run one after the other, a
    burst from another job decides which configuration looks slower (seen: p95 ratios of 0.05 and
    1.92 for the same code). A warm-up chat of each prompt is not counted.
    Returns ({"off": runs, "on": runs}, server CPU seconds, wall seconds).
    """
    for warm in asyncio.run(run_chats(port, [off[0], on[0]], 0.0, first_index=first_index)):
        if warm.error:
            raise RuntimeError(f"warm-up chat failed: {warm.error}")
    chats = [chat for pair in zip(off[1:], on[1:], strict=True) for chat in pair]
    cpu_before, wall_before = cpu_seconds(daphne_pid), time.monotonic()
    stop_every = round(1 / args.stop_share) if args.stop_share else 0
    runs = asyncio.run(run_chats(port, chats, args.ramp, first_index=first_index + 2, stop_every=stop_every, group=2))
    split = {"off": runs[0::2], "on": runs[1::2]}
    return split, cpu_seconds(daphne_pid) - cpu_before, time.monotonic() - wall_before


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", default="200", help="chats per round (with --nginx/--before: loads, e.g. 100,200)")
    parser.add_argument("--tokens", type=int, default=150, help="tokens per answer")
    # 10 tokens/s: a plausible per-stream rate when one model server serves 200 streams at once.
    parser.add_argument("--rate", type=float, default=10.0, help="tokens per second per answer")
    parser.add_argument("--ramp", type=float, default=10.0, help="seconds over which the chats start")
    parser.add_argument("--stop-share", type=float, default=0.1, help="share of chats that press Stop mid-answer")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per protocol, each with budgets off and on mixed")
    parser.add_argument("--nginx", default="", help="behind nginx: web processes of each deployment, e.g. 1,2")
    parser.add_argument("--before", default="", help="behind nginx: the code of this git revision against the tree")
    parser.add_argument("--servers", default="", help="behind nginx: one web process of each, e.g. uvicorn,daphne")
    parser.add_argument("--deflate", default="", help="behind nginx: uvicorn with websocket compression on,off")
    parser.add_argument(
        "--guard", action="store_true", help="compare tutor mode's leak guard off and on instead of budgets"
    )
    args = parser.parse_args()
    args.setting = "guard" if args.guard else "budgets"
    if args.nginx or args.before or args.servers or args.deflate:
        from bench import chat_deploy

        return chat_deploy.main(args)
    args.chats = int(args.chats)
    args.first_delay = 1.0 / args.rate  # the fakes sleep this long before every chunk, the first too

    tmp = Path(tempfile.mkdtemp(prefix="currechat-chat-load-"))
    redis_server = RedisStackServer(port=free_port(), data_dir=tmp / "redis", persistent=False)
    expected = [f"t{i} " for i in range(args.tokens)]
    ctx = multiprocessing.get_context("spawn")
    servers: dict[str, tuple] = {}
    daphne = None
    try:
        redis_server.start()
        servers = start_model_servers(ctx, expected, args.first_delay)
        env = {
            **os.environ,
            "REDIS_URL": redis_server.url,
            "OLLAMA_HOST": servers["ollama"][2],
            "OPENAI_BASE_URL": servers["openai"][2],
            "DEBUG": "0",
            "SECRET_KEY": "bench-only-secret-key",
            "SECURE_COOKIES": "0",
            "ALLOW_PLAIN_HTTP": "1",  # plain http on loopback
            "CURRECHAT_VAR_DIR": str(tmp / "var"),
            "REDIS_INDEX_PREFIX": "chatbench",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": "currechat.settings",
        }
        (tmp / "var").mkdir()
        os.environ.update(env)
        setup_database()
        half = args.chats // 2
        budget = {"off": None, "on": None if args.guard else NEVER_REACHED}
        phases = ("", "cpu-") if args.guard else ("",)  # --guard: a CPU pass per setting after each round
        data = {
            (phase, r, protocol, setting): prepare_data(
                half, f"{phase}{protocol}-{setting}-{r}", MODELS[protocol], budget[setting]
            )
            for phase in phases
            for r in range(args.rounds)
            for protocol in PROTOCOLS
            for setting in ("off", "on")
        }
        if args.guard:
            for key, chats in data.items():
                if key[-1] == "on":
                    chat_guard.guide(chats)
        warm_up = prepare_data(20, "warm-up", MODELS["ollama"], None)
        port = free_port()
        cmd = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "currechat.asgi:application"]
        log = (tmp / "daphne.log").open("w")  # noqa: SIM115 (closed with the server, read on failure)
        daphne = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
        wait_for_port(port)
        # Not counted: the server's first burst (thread pool, connections, caches) under load.
        asyncio.run(run_chats(port, warm_up, args.ramp))
        rounds: list[tuple[int, str, dict, float, float]] = []
        cpu_pairs: dict[tuple[int, str], dict] = {}
        for r in range(args.rounds):
            # The protocols take turns going first, so neither always meets a warmer server.
            for protocol in PROTOCOLS if r % 2 == 0 else PROTOCOLS[::-1]:
                split, cpu, wall = mixed_round(
                    port,
                    daphne.pid,
                    data[("", r, protocol, "off")],
                    data[("", r, protocol, "on")],
                    args,
                    first_index=(len(rounds) + 1) * 100000,
                )
                rounds.append((r, protocol, split, cpu, wall))
                if args.guard:
                    off, on = (data[("cpu-", r, protocol, s)][1:] for s in ("off", "on"))
                    first = (len(rounds) + 50) * 100000
                    cpu_pairs[(r, protocol)] = chat_guard.cpu_pair(port, daphne.pid, off, on, args, first, r % 2 == 1)
        arrivals: dict[int, float] = {}
        for _, parent, _ in servers.values():
            parent.send("dump")
            arrivals.update(parent.recv())
        print(full_report(rounds, arrivals, expected, args))
        if cpu_pairs:
            print(chat_guard.cpu_table(cpu_pairs))
        if any(run.error for *_, split, _, _ in rounds for runs in split.values() for run in runs):
            print("daphne log (end):\n" + (tmp / "daphne.log").read_text()[-3000:])
        return 0
    finally:
        if daphne is not None:
            daphne.terminate()
            daphne.wait(timeout=10)
        for process, _, _ in servers.values():
            if process.is_alive():
                process.terminate()
        redis_server.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def own_ttft(runs: list[ChatRun], arrivals: dict[int, float], args) -> list[float]:
    """The server's own time to first token (ms) of each chat that got one."""
    ok = [r for r in runs if not r.error and r.first is not None and r.index in arrivals]
    return [((r.first - r.sent) - args.first_delay) * 1000 for r in ok]


def full_report(rounds: list[tuple], arrivals: dict[int, float], expected: list[str], args) -> str:
    """Per protocol and budget setting: every round's chats pooled; then the paired comparison,
    round by round, of budgets on against off (the same window, so the same machine load)."""
    out = []
    summary = [
        f"\n| protocol | {args.setting} | own TTFT p50 (ms) | own TTFT p95 (ms) | lost tokens (completed) "
        "| failed chats |",
        "|---|---|---|---|---|---|",
    ]
    paired = [
        "\n| protocol | round | p95 off (ms) | p95 on (ms) | on / off | server CPU per streamed token |",
        "|---|---|---|---|---|---|",
    ]
    for protocol in PROTOCOLS:
        mine = [entry for entry in rounds if entry[1] == protocol]
        for budgets in ("off", "on"):
            runs = [run for _, _, split, _, _ in mine for run in split[budgets]]
            args.server_cpu = None  # measured per round for both settings together (below)
            out.append(f"\n## {protocol} protocol, {args.setting} {budgets} ({len(mine)} rounds pooled)\n")
            out.append(report(runs, arrivals, expected, args))
            own = own_ttft(runs, arrivals, args)
            lost = sum(check(r, expected)[0] for r in runs if not r.error and r.stop_after is None)
            failed = sum(1 for r in runs if r.error)
            summary.append(
                f"| {protocol} | {budgets} | {pct(own, 0.5):.1f} | {pct(own, 0.95):.1f} | {lost} | {failed} |"
            )
        ratios = []
        for r, _, split, cpu, _wall in mine:
            off, on = (pct(own_ttft(split[b], arrivals, args), 0.95) for b in ("off", "on"))
            streamed = sum(len("".join(run.tokens).split()) for runs in split.values() for run in runs)
            ratios.append(on / off)
            per_token = cpu / max(1, streamed) * 1e6
            paired.append(f"| {protocol} | {r + 1} | {off:.1f} | {on:.1f} | {on / off:.2f} | {per_token:.0f} µs |")
        paired.append(f"| {protocol} | **median** | | | **{statistics.median(ratios):.2f}** | |")
    load = f"\nmachine load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end"
    return "\n".join([*out, *summary, *paired, load])


if __name__ == "__main__":
    sys.exit(main())
