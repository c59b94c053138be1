"""Redis goes away and comes back: running work rides it out (issue 31; docs/RELIABILITY.md).

Every outage here is the test process's own Redis Stack server, stopped and started again on its
port with its data (saved first, as production's AOF keeps it). Tests wait on what a user would
see (a file's status, an answer's end, a scheduled job queued), each with a generous bound; only
an outage's own length is a stretch of time the test lets pass.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
import redis
from django.conf import settings
from django.db import connections
from rq import Queue
from rq.job import Job

from chat.course.allowances import used_this_week
from chat.models import Message, MessageStatus
from chat.turn.agent import run_turn, start_turn
from chat.turn.events import CallbackSink
from chat.turn.limits import TurnLock
from collections_app.models import FileStatus, SourceFile
from kernel.redis_client import get_redis
from rag.ingest.pipeline import failure_message
from tests import services
from tests.fake_ollama import Reply
from tests.fixtures_ingest import chunk_keys, upload
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


class Outage:
    """Stops this test process's real Redis Stack and starts it again with its data."""

    def __init__(self) -> None:
        self.server = services.redis_server()
        self.down_at: float | None = None
        self.up_at: float | None = None
        self.over = threading.Event()  # the test has ended
        self._held: socket.socket | None = None

    def stop(self) -> None:
        get_redis().save()  # the server runs without persistence in tests; production's AOF keeps data
        self.server.stop()
        # The port stays ours while the server is away: bound, not listening, it refuses connections
        # as a stopped server's port does, and no server another test starts on a free port takes it.
        self._held = socket.socket()
        self._held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the old TIME_WAITs
        self._held.bind(("127.0.0.1", self.server.port))
        self.down_at = time.monotonic()

    def start(self) -> None:
        if self.server.process is None:
            if self._held is not None:
                self._held.close()
                self._held = None
            self.server.start()
            self.up_at = time.monotonic()

    def start_after(self, seconds: float) -> None:
        """Start the server again once it has been down `seconds` (the outage's stated length)."""
        assert self.down_at is not None
        left = self.down_at + seconds - time.monotonic()
        if left > 0:
            time.sleep(left)  # the outage's length itself: what the scenario is about
        self.start()


@pytest.fixture
def redis_outage():
    outage = Outage()
    yield outage
    outage.over.set()  # a thread still waiting for its moment gives up with the test
    outage.start()  # never leave the rest of the session without Redis


class OutageWhen(threading.Thread):
    """Stops Redis once `ready()` holds (read from the database, as a teacher's page would) and
    starts it again `seconds` later."""

    def __init__(self, outage: Outage, ready, seconds: float):
        super().__init__(daemon=True)
        self.outage, self.ready, self.seconds = outage, ready, seconds

    def run(self) -> None:
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not self.outage.over.is_set():
                if self.ready():
                    self.outage.stop()
                    self.outage.start_after(self.seconds)
                    return
                self.outage.over.wait(0.05)
        finally:
            connections.close_all()  # this thread's own connection


def _big_markdown(sections: int) -> bytes:
    part = "Lens {0} bends light toward its focal point. " * 20
    return "\n\n".join(f"## Part {i}\n\n" + part.format(i) for i in range(sections)).encode()


def _queued_files() -> int:
    return Queue("ingest", connection=get_redis()).count


def _redis_clients() -> str:
    """Who else is on this test process's Redis, for a failure that lost a queued job."""
    info = get_redis().info("server")
    ours = services.redis_server()
    clients = "\n".join(
        f"  {c.get('addr')} name={c.get('name')!r} cmd={c.get('cmd')} age={c.get('age')}s"
        for c in get_redis().client_list()
    )
    return f"Redis pid {info['process_id']} (ours: {ours.process and ours.process.pid}), port {ours.port}:\n{clients}"


def _upload_queued(client, collection, content: bytes, name: str) -> int:
    """Upload a file and check that its job waits in the queue for the worker."""
    response = upload(client, collection, content, name)
    assert response.status_code == 201, response.json()
    assert _queued_files() == 1, f"the upload's job is not in the queue. {_redis_clients()}"
    return response.json()["id"]


def _embedding_under_way(file_id: int):
    def check() -> bool:
        detail = SourceFile.objects.get(pk=file_id).progress_detail
        return "passages made searchable" in detail and not detail.startswith("0 ")

    return check


# Item 2: ingestion -------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_ingestion_rides_out_a_30_second_redis_outage_and_ends_ready_without_retry(
    fast_collection, client_for, owner, run_worker, ollama, redis_outage
):
    ollama.embed_delay = 0.05  # seconds per passage: the file is mid-way when Redis goes
    file_id = _upload_queued(client_for(owner), fast_collection, _big_markdown(150), "optics.md")
    outage = OutageWhen(redis_outage, _embedding_under_way(file_id), seconds=30)
    outage.start()
    run_worker()
    outage.join(60)
    assert redis_outage.down_at is not None and redis_outage.up_at is not None, (
        f"Redis went away mid-file (file: {SourceFile.objects.get(pk=file_id).status}). {_redis_clients()}"
    )
    source = SourceFile.objects.get(pk=file_id)
    assert source.status == FileStatus.READY, source.error
    assert source.attempt == 1 and source.error == "", "ready without a Retry"
    assert len(chunk_keys(fast_collection)) == source.chunk_count > 100


class OutageUntil(threading.Thread):
    """Stops Redis once `ready()` holds and starts it again once `over()` holds."""

    def __init__(self, outage: Outage, ready, over):
        super().__init__(daemon=True)
        self.outage, self.ready, self.over = outage, ready, over

    def run(self) -> None:
        try:
            wait_for(lambda: self.ready() or self.outage.over.is_set(), 120, "the moment to stop Redis")
            if self.outage.over.is_set():
                return
            self.outage.stop()
            wait_for(self.over, 120, "the end of the outage")
        finally:
            self.outage.start()
            connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_an_outage_longer_than_stated_fails_the_file_with_its_sentence_and_retry_works(
    fast_collection, client_for, owner, run_worker, ollama, redis_outage, settings
):
    settings.INGEST_REDIS_OUTAGE_SECONDS = 1.0
    ollama.embed_delay = 0.05
    file_id = _upload_queued(client_for(owner), fast_collection, _big_markdown(60), "optics.md")
    failed = lambda: SourceFile.objects.get(pk=file_id).status == FileStatus.FAILED  # noqa: E731
    outage = OutageUntil(redis_outage, _embedding_under_way(file_id), failed)
    outage.start()
    # The job ends while Redis is still away; rq's in-process test worker then cannot record its
    # own end and quits (our worker class rides that out, see the scheduler test below).
    with contextlib.suppress(redis.ConnectionError):
        run_worker()
    outage.join(60)
    source = SourceFile.objects.get(pk=file_id)
    assert source.status == FileStatus.FAILED
    assert source.error == failure_message(redis.ConnectionError()) and "Retry" in source.error
    assert client_for(owner).post(f"/api/v1/files/{file_id}/retry").status_code == 200
    ollama.embed_delay = 0
    run_worker()
    assert SourceFile.objects.get(pk=file_id).status == FileStatus.READY


# Item 3: a chat turn -----------------------------------------------------------------------------


class TurnInThread(threading.Thread):
    """Runs a turn as the websocket edge does (a pool thread), recording its events."""

    def __init__(self, turn):
        super().__init__(daemon=True)
        self.turn = turn
        self.events: list[dict] = []
        self.first_token = threading.Event()
        self.ended = threading.Event()

    def emit(self, event) -> None:
        self.events.append(event)
        if event["type"] == "token":
            self.first_token.set()
        if event["type"] in ("message_done", "error"):
            self.ended.set()

    def run(self) -> None:
        try:
            run_turn(self.turn, CallbackSink(self.emit))
        finally:
            connections.close_all()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_answer_completes_through_a_10_second_redis_outage(session, student, ollama, redis_outage):
    down = threading.Event()
    words = [f"w{i} " for i in range(60)]
    # Ten words, then Redis goes; the other fifty stream (and the turn ends) while it is away.
    ollama.script(Reply(chunks=words, delay=0.02, gate_after=10, gate=down))
    turn = start_turn(session, "Talk a while")
    answering = TurnInThread(turn)
    answering.start()
    try:
        assert answering.first_token.wait(60), "the answer started"
        redis_outage.stop()
    finally:
        down.set()
    assert answering.ended.wait(120), "the answer ended"
    redis_outage.start_after(10)
    answering.join(30)

    reply = Message.objects.get(pk=turn.reply.pk)
    assert answering.events[-1]["type"] == "message_done", answering.events[-1]
    assert reply.status == MessageStatus.COMPLETE and reply.content == "".join(words)
    assert "".join(e["text"] for e in answering.events if e["type"] == "token") == "".join(words)
    # Once Redis is back: the tokens are counted against the budget and the chat is free again.
    spent = turn.meter.tokens
    assert spent > 0
    wait_for(lambda: used_this_week(session.prompt, [student.pk])[student.pk] == spent, 60, "the counts to settle")
    wait_for(lambda: TurnLock(session.id).current() is None, 60, "the turn lock to be released")
    ollama.script(Reply(content="Still here."))
    start_turn(session, "Still there?").lock.release()


@pytest.mark.django_db(transaction=True)
def test_stop_reaches_the_answer_in_this_process_while_redis_is_away(
    client_for, session, student, ollama, redis_outage
):
    down = threading.Event()
    ollama.script(Reply(chunks=[f"w{i} " for i in range(600)], delay=0.05, gate_after=5, gate=down))
    turn = start_turn(session, "Talk for a long time")
    answering = TurnInThread(turn)
    answering.start()
    try:
        assert answering.first_token.wait(60), "the answer started"
        redis_outage.stop()
    finally:
        down.set()
    response = client_for(student).post(f"/api/v1/chats/{session.pk}/stop")
    assert response.status_code == 202, response.json()
    assert answering.ended.wait(60), "the answer ended after Stop"
    redis_outage.start()
    answering.join(30)
    reply = Message.objects.get(pk=turn.reply.pk)
    # Stopped with the text streamed so far kept (how far it got depends on when Stop arrived).
    assert reply.status == MessageStatus.STOPPED and reply.content.startswith("w0")
    assert len(reply.content.split()) < 600


@pytest.mark.django_db(transaction=True)
def test_a_stop_sent_through_another_web_process_ends_the_answer_running_here(session, ollama):
    """With several web processes, the student's Stop may reach one that does not run the answer:
    it travels through Redis, and this process's watcher finds it for every turn it runs."""
    ollama.script(Reply(chunks=[f"w{i} " for i in range(600)], delay=0.05))
    turn = start_turn(session, "Talk for a long time")
    answering = TurnInThread(turn)
    answering.start()
    assert answering.first_token.wait(60), "the answer started"
    other_process = (
        "from chat.turn.limits import StopSignal; "
        f"StopSignal({session.pk}).request(); "
        f"assert not StopSignal({session.pk}).request_here(), 'no turn runs in this process'"
    )
    env = {**os.environ, "REDIS_URL": settings.REDIS_URL, "REDIS_INDEX_PREFIX": settings.REDIS_INDEX_PREFIX}
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", other_process], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert answering.ended.wait(60), "the answer ended after Stop"
    answering.join(30)
    reply = Message.objects.get(pk=turn.reply.pk)
    assert answering.events[-1]["type"] == "message_done"
    assert reply.status == MessageStatus.STOPPED and reply.content.startswith("w0")
    assert len(reply.content.split()) < 600


# Item 4: the worker's scheduler and its stop -------------------------------------------------------


def _start_worker(tmp_path: Path) -> tuple[subprocess.Popen, Path]:
    """The real worker as `make run` starts it (with the scheduler), on this test's Redis."""
    log = tmp_path / "worker.log"
    env = {
        **os.environ,
        # Embeddings on the model server: no torch import in the worker (not what this is about).
        "EMBEDDING_MODEL": "ollama:snowflake-arctic-embed2",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'worker.sqlite3'}",
        "LOG_LEVEL": "INFO",
    }
    command = [sys.executable, "manage.py", "rqworker", "--job-class", "django_tasks_rq.Job", "--with-scheduler"]
    with log.open("w") as out:
        process = subprocess.Popen(
            [*command, *settings.TASK_QUEUES], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT
        )
    return process, log


def _scheduled_job_runs(seconds: float = 1.0) -> Job:
    """A job due in `seconds`: only the scheduler moves it from the scheduled registry to the queue."""
    queue = Queue("default", connection=get_redis())
    return queue.enqueue_in(timedelta(seconds=seconds), "os.getpid")


def _moved(job: Job) -> bool:
    return job.get_status(refresh=True) != "scheduled"


@pytest.mark.slow
def test_the_scheduler_is_back_within_seconds_of_redis_and_a_stopped_worker_exits_at_once(tmp_path, redis_outage):
    worker, log = _start_worker(tmp_path)
    try:
        wait_for(lambda: get_redis().get("rq:scheduler-lock:default"), 90, "the worker's scheduler to start")
        job = _scheduled_job_runs()
        wait_for(lambda: _moved(job), 30, "the scheduler to queue a due job")

        redis_outage.stop()
        redis_outage.start_after(5)
        job = _scheduled_job_runs()
        wait_for(lambda: _moved(job), 20, "the scheduler to queue a due job after the outage")
        back_in = time.monotonic() - redis_outage.up_at
        assert back_in < 20, f"the scheduler came back {back_in:.0f} s after Redis"
        assert worker.poll() is None, log.read_text()[-3000:]

        redis_outage.stop()
        wait_for(
            lambda: "unreachable" in log.read_text() or "could not connect" in log.read_text(),
            60,
            "the worker to notice",
        )
        scheduler_pids = [int(p) for p in _children(worker.pid)]
        worker.send_signal(signal.SIGTERM)
        try:
            code = worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(
                "the worker did not exit on the first SIGTERM while Redis was away:\n" + log.read_text()[-3000:]
            )
        assert code is not None
        wait_for(lambda: not any(_alive(pid) for pid in scheduler_pids), 30, "the scheduler to end with its worker")
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def _children(pid: int) -> list[str]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return path.read_text().split() if path.exists() else []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"
