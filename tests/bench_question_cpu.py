"""A question's own CPU in the web process: the turn's threads, before the model is called and after
its answer (issue 44). Runs as a pytest file, in the test suite's setting (its Redis Stack and fake
Ollama server, a real websocket consumer), on one chat asking one question after another:

    .venv/bin/python -m pytest -q -s -n 0 -p no:randomly tests/bench_question_cpu.py

(Not a test: pytest collects it only when named, as here; it asserts nothing but that turns end.)

Reported: the median and least CPU per question of the threads that run the turn, read from their
own CPU clocks: "before the model" is the start of the turn (signed in still, permission, checks,
the question stored) and the turn's thread up to the moment the model server receives the request;
"after the answer" is the turn's thread from then on (the answer is one short chunk: its storing,
statistics, token meter, the rendered `message_done`). The event loop's own work (the frame
received, the events sent) is not in either. The first 5 questions are left out (warm-up). Beside
them, to tell a costlier run from a slower machine: the process's garbage collections over the
measured questions, the hash seed, and the CPU of a fixed piece of work before and after the run.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import threading
import time

import pytest

from chat.turn import runner
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn

pytestmark = pytest.mark.django_db(transaction=True)
QUESTIONS = 40


def _cpu_of(ident: int) -> float:
    return time.clock_gettime(time.pthread_getcpuclockid(ident))


def _machine_ms() -> float:
    """The median CPU of a fixed piece of pure Python (dicts, lists, JSON): what the machine makes
    of the same work at the moment. On a shared machine it swings by a third with what else runs
    (caches, the other core's load); a run whose questions cost more by as much is the machine's."""
    import json

    costs = []
    for _ in range(15):
        began = time.thread_time()
        json.dumps({str(i): [i, {"k": i}] for i in range(5000)})
        costs.append(time.thread_time() - began)
    return statistics.median(costs) * 1e3


async def test_cpu_per_question(student, session, ollama, monkeypatch, settings):
    settings.CHAT_RATE_LIMIT = 1000
    settings.HEALTH_CACHE_SECONDS = 60  # as in production, the model list is not asked per question
    now: dict = {}
    start_turn, run_turn = runner._start_in_thread, runner._run_in_thread

    def timed_start(*args):
        began = time.thread_time()
        try:
            return start_turn(*args)
        finally:
            now["start"] = time.thread_time() - began

    def timed_run(*args):
        now["thread"], now["began"] = threading.get_ident(), time.thread_time()
        try:
            return run_turn(*args)
        finally:
            now["ended"] = time.thread_time()
            now["done"].set()

    def respond(body: dict) -> Reply:
        now["at_model"] = _cpu_of(now["thread"])
        return Reply(content="An answer with **bold** words.")

    monkeypatch.setattr(runner, "_start_in_thread", timed_start)
    monkeypatch.setattr(runner, "_run_in_thread", timed_run)
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    rows: list[tuple[float, float]] = []
    collections = [0, 0, 0]  # the process's garbage collections by generation, from the 6th question on

    def counted(phase: str, info: dict) -> None:
        if phase == "start" and len(rows) >= 5:
            collections[info["generation"]] += 1

    gc.callbacks.append(counted)
    machine = [_machine_ms()]
    for i in range(QUESTIONS):
        now["done"] = threading.Event()
        ollama.script(respond)
        await ws.send_json_to({"type": "user_message", "content": f"Question {i}?"})
        assert (await receive_turn(ws))[-1]["type"] == "message_done"
        await asyncio.to_thread(now["done"].wait, 10)
        rows.append((now["start"] + now["at_model"] - now["began"], now["ended"] - now["at_model"]))
    gc.callbacks.remove(counted)
    machine.append(_machine_ms())
    await ws.disconnect()
    before, after = [r[0] * 1e3 for r in rows[5:]], [r[1] * 1e3 for r in rows[5:]]
    print(
        f"\nCPU per question (ms), {len(before)} questions: before the model median {statistics.median(before):.2f}"
        f" (least {min(before):.2f}); after the answer median {statistics.median(after):.2f} (least {min(after):.2f});"
        f" garbage collections {' / '.join(map(str, collections))} (generations 0 / 1 / 2),"
        f" hash seed {os.environ.get('PYTHONHASHSEED', 'random')}, load average {os.getloadavg()[0]:.1f};"
        f" the fixed work before / after: {machine[0]:.2f} / {machine[1]:.2f} ms"
    )
