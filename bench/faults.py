"""Fault injection: kill each CurreChat process mid-work and check what the user sees and what is stored.

    .venv/bin/python bench/faults.py [--only NAME ...]

Real processes on loopback: a private Redis Stack, a SQLite database, the real worker
(`manage.py rqworker`, CurreChat's worker class) as `make run` starts it, and the Ollama-protocol
test server (its own process) standing in for a slow vision model and chat model. Each scenario
asserts its outcome; the script exits 1 if any fails. docs/RELIABILITY.md lists them.

Scenarios:
  horse     the job process is killed (kill -9) mid-file: the file is failed at once with a reason,
            Retry re-reads only the pages the VLM had not read (checkpoints), and the file is ready.
  worker    the worker's main process is killed (kill -9) mid-file: its job process dies with it,
            and a new worker fails the file within INGEST_STALE_SECONDS + its sweep interval.
  redis     Redis is down for 30 s during a job: that file ends ready by itself (no Retry), the
            worker stays up, its scheduler queues a due job again within seconds, and it ingests the
            next file (rq alone quit for good, and its scheduler came back after up to 10 minutes).
  web       the process writing a chat answer is killed (kill -9) mid-stream: the text streamed
            up to the last second is stored, and the chat takes the next question at once.
  cancel    Cancel is pressed while a slow VLM (10 s a page, four in flight) reads a 102-page PDF:
            the job process ends within seconds (it does not wait for the pages in flight), the
            file is cancelled with nothing in the index, and Retry is accepted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.harness import start_services, stop_services, wait_for  # noqa: E402
from bench.ingest import NOTES_DE, NOTES_EN, _vlm_server  # noqa: E402

STALE_SECONDS = 5
FAKE_EMBEDDER = "ollama:snowflake-arctic-embed2"


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) != "Z"
    except OSError:
        return False


class Env:
    """The services and a way to start the real worker."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.workers: list[subprocess.Popen] = []

    def start_worker(self, **env: str) -> subprocess.Popen:
        command = [sys.executable, "manage.py", "rqworker", "--job-class", "django_tasks_rq.Job", "--with-scheduler"]
        command += ["default", "ingest"]
        log = (self.tmp / f"worker{len(self.workers)}.log").open("w")
        environment = {**os.environ, **env}
        worker = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT)
        self.workers.append(worker)
        return worker

    def stop_workers(self) -> None:
        for worker in self.workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def _upload(user, name: str, path: Path, mode: str):
    from django.core.files import File

    from collections_app import files
    from collections_app.models import Collection

    collection = Collection.objects.create(name=name, owner=user, embedding_model=FAKE_EMBEDDER)
    with path.open("rb") as handle:
        return files.add_file(collection, File(handle, name=path.name), user, mode)


def _state(source):
    source.refresh_from_db()
    return source


def scenario_horse(env: Env, user) -> str:
    from collections_app import files

    worker = env.start_worker()
    source = _upload(user, "horse", NOTES_EN, "vlm")
    wait_for(lambda: _state(source).progress >= 20, 120, "the VLM to read some pages")
    horses = children_of(worker.pid)
    assert horses, "the worker has a job process"
    for pid in horses:
        os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    wait_for(lambda: _state(source).status == "failed", 15, "the file to fail")
    seconds = time.monotonic() - killed_at
    assert "killed by signal 9" in source.error and "Retry" in source.error, source.error
    assert worker.poll() is None, "the worker survived its job's death"
    error = source.error
    files.retry_file(source)
    started = time.monotonic()
    wait_for(lambda: _state(source).status == "ready", 120, "the retried file to be ready")
    return (
        f"file failed {seconds:.1f} s after the kill (“{error[:70]}…”); Retry ready in "
        f"{time.monotonic() - started:.1f} s; worker kept running"
    )


def scenario_worker(env: Env, user) -> str:
    worker = env.start_worker()
    source = _upload(user, "worker", NOTES_EN, "vlm")
    wait_for(lambda: _state(source).progress >= 20, 120, "the VLM to read some pages")
    horses = children_of(worker.pid)
    worker.kill()
    worker.wait()
    killed_at = time.monotonic()
    wait_for(lambda: not any(alive(pid) for pid in horses), 5, "the job process to die with its worker")
    env.start_worker()  # as `make run` restarts it
    wait_for(lambda: _state(source).status == "failed", STALE_SECONDS + 30, "the new worker to fail the file")
    assert "no sign of life" in source.error, source.error
    return f"job process died with its worker; file failed {time.monotonic() - killed_at:.0f} s later with Retry"


REDIS_OUTAGE_SECONDS = 30


def scenario_redis(env: Env, user, redis_server) -> str:
    from datetime import timedelta

    from rq import Queue, Worker

    from kernel.redis_client import get_redis

    worker = env.start_worker()
    wait_for(lambda: Worker.count(connection=get_redis()) > 0, 60, "the worker to listen")
    busy = _upload(user, "redis-busy", NOTES_EN, "vlm")
    wait_for(lambda: _state(busy).progress >= 10, 120, "the job to be under way")
    get_redis().save()  # the private server runs without persistence; production's AOF keeps the data
    redis_server.stop()
    time.sleep(REDIS_OUTAGE_SECONDS)  # the outage itself
    redis_server.start()
    back = time.monotonic()
    due = Queue("default", connection=get_redis()).enqueue_in(timedelta(seconds=1), "os.getpid")
    wait_for(lambda: due.get_status(refresh=True) != "scheduled", 60, "the scheduler to queue a due job")
    scheduler_back = time.monotonic() - back
    wait_for(lambda: _state(busy).status in ("ready", "failed"), 180, "the job under way to end")
    assert busy.status == "ready" and busy.attempt == 1, (busy.status, busy.error)
    log = (env.tmp / f"worker{len(env.workers) - 1}.log").read_text()
    assert worker.poll() is None, "the worker quit during the outage:\n" + log[-3000:]
    markdown = env.tmp / "after-outage.md"
    markdown.write_text("# After the outage\n\nThe worker is still here and reads this file.\n")
    source = _upload(user, "redis", markdown, "fast")
    wait_for(lambda: _state(source).status == "ready", 60, "the file uploaded after the outage")
    return (
        f"{REDIS_OUTAGE_SECONDS} s outage during a job: that file ended ready without a Retry; the scheduler "
        f"queued a due job {scheduler_back:.0f} s after Redis was back; the worker ingested the next file"
    )


def scenario_cancel(env: Env, user, slow_vlm_url: str) -> str:
    from collections_app import files
    from kernel.redis_client import get_redis

    worker = env.start_worker(OLLAMA_HOST=slow_vlm_url)
    # Not the PDF of the other scenarios: its pages are checkpointed by now and would not be read.
    source = _upload(user, "cancel", NOTES_DE, "vlm")
    wait_for(lambda: _state(source).status == "processing" and children_of(worker.pid), 60, "the job to start")
    time.sleep(3)  # four pages are in flight, none of them read (each takes 10 s)
    horses = children_of(worker.pid)
    files.cancel_file(_state(source))
    pressed = time.monotonic()
    wait_for(lambda: not any(alive(pid) for pid in horses), 10, "the job process to end after Cancel")
    seconds = time.monotonic() - pressed
    assert seconds < 5, f"the job ran on {seconds:.1f} s after Cancel"
    assert worker.poll() is None, "the worker survived the cancel"
    _state(source)
    keys = list(get_redis().scan_iter(match=f"*:{{c{source.collection_id}}}:chunk:*"))
    assert source.status == "cancelled" and source.chunk_count == 0 and not keys, (source.status, len(keys))
    files.retry_file(source)
    assert _state(source).status == "queued", source.status
    wait_for(lambda: _state(source).status == "processing", 30, "the retried file to start")
    files.cancel_file(source)  # reading 102 slow pages is not this scenario's business
    return f"job process ended {seconds:.1f} s after Cancel (pages in flight: 10 s each); nothing indexed; Retry ran"


def _answer_in_child(session_id: int, done) -> None:
    """A web process answering a turn (killed mid-stream by the parent)."""
    from django.db import connections

    connections.close_all()
    from chat.models import ChatSession
    from chat.turn.agent import run_turn, start_turn
    from chat.turn.events import CallbackSink

    turn = start_turn(ChatSession.objects.get(pk=session_id), "Talk for a while")
    done.set()
    run_turn(turn, CallbackSink(lambda _event: None))


def scenario_web(env: Env, user, model_url: str) -> str:
    from django.conf import settings

    from chat.models import ChatSession, Message, Prompt
    from chat.turn.agent import ORPHANED, start_turn
    from currechat import ragconfig

    settings.OLLAMA_HOST = model_url
    ragconfig.configure_rag()  # the library reads its copy (rag.config), not the settings
    prompt = Prompt.objects.create(owner=user, name="faults", system_prompt="Be brief.", chat_model="fake-chat")
    session = ChatSession.objects.create(prompt=prompt, user=user)
    started = multiprocessing.Event()
    child = multiprocessing.Process(target=_answer_in_child, args=(session.id, started))
    child.start()
    assert started.wait(30), "the turn started"
    time.sleep(3)  # about 30 tokens streamed
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    killed = Message.objects.filter(session=session, role="assistant").get()
    kept = len(killed.content.split())
    assert killed.status == "streaming" and kept >= 10, (killed.status, killed.content)
    time.sleep(11)  # the dead process's beacon expires (chat.turn.limits.ALIVE_TTL)
    began = time.monotonic()
    start_turn(ChatSession.objects.get(pk=session.id), "Still there?").lock.release()
    killed.refresh_from_db()
    assert killed.status == "failed" and killed.error == ORPHANED and len(killed.content.split()) == kept
    return (
        f"{kept} words streamed before the kill were kept; next question accepted in "
        f"{(time.monotonic() - began) * 1000:.0f} ms (the lock's process was gone)"
    )


def _chat_server(conn) -> None:
    from tests.fake_ollama import FakeOllama, Reply

    sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    fake = FakeOllama()
    fake.models.append("fake-chat")
    fake.responder = lambda _body: Reply(chunks=[f"word{i} " for i in range(600)], delay=0.1)
    fake.start()
    conn.send(fake.url)
    while True:
        time.sleep(3600)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", choices=["horse", "worker", "redis", "web", "cancel"], default=None)
    args = parser.parse_args()
    names = args.only or ["horse", "worker", "redis", "web", "cancel"]
    tmp = Path(tempfile.mkdtemp(prefix="currechat-faults-"))
    vlm_end, vlm_child = multiprocessing.Pipe()
    vlm = multiprocessing.Process(target=_vlm_server, args=(vlm_child, 0.3, str(NOTES_EN)), daemon=True)
    vlm.start()
    vlm_url = vlm_end.recv()
    chat_end, chat_child = multiprocessing.Pipe()
    chat = multiprocessing.Process(target=_chat_server, args=(chat_child,), daemon=True)
    chat.start()
    chat_url = chat_end.recv()
    slow_end, slow_child = multiprocessing.Pipe()
    slow_vlm = multiprocessing.Process(target=_vlm_server, args=(slow_child, 10.0, str(NOTES_DE)), daemon=True)
    slow_vlm.start()
    slow_vlm_url = slow_end.recv()
    redis_server = start_services(
        "faults",
        data_dir=tmp,
        extra_env={
            "OLLAMA_HOST": vlm_url,
            "DATABASE_URL": f"sqlite:///{tmp / 'faults.sqlite3'}",
            "MEDIA_ROOT": str(tmp / "media"),
            "HEALTH_CACHE_SECONDS": "0",
            "INGEST_STALE_SECONDS": str(STALE_SECONDS),
            "INGEST_HEARTBEAT_SECONDS": "1",
            "VLM_MODEL": "qwen3-vl:8b",
        },
    )
    env = Env(tmp)
    failures = 0
    try:
        from django.core.management import call_command

        from accounts.models import User

        call_command("migrate", verbosity=0)
        user = User.objects.create_user("faults", password="faults-only", role="teacher")
        for name in names:
            started = time.monotonic()
            try:
                if name == "redis":
                    outcome = scenario_redis(env, user, redis_server)
                elif name == "web":
                    outcome = scenario_web(env, user, chat_url)
                elif name == "cancel":
                    outcome = scenario_cancel(env, user, slow_vlm_url)
                else:
                    outcome = {"horse": scenario_horse, "worker": scenario_worker}[name](env, user)
                print(f"PASS {name:7} {outcome} ({time.monotonic() - started:.0f} s)", flush=True)
            except AssertionError as exc:
                failures += 1
                print(f"FAIL {name:7} {exc}", flush=True)
            finally:
                env.stop_workers()
    finally:
        vlm.terminate()
        chat.terminate()
        slow_vlm.terminate()
        stop_services(redis_server)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
