"""The real worker, started by the command line `make run` uses (`manage.py rqworker … --with-scheduler
default ingest`), is counted while it imports its libraries, while idle and while in a long job, and
a worker killed mid-job is noticed: health stops counting it and its file is failed, with a Retry,
by the worker still alive (docs/RELIABILITY.md, scenario 1b)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from rq import Queue, Worker

from chat.tasks import schedule_purge
from currechat.health import check_workers
from currechat.worker import silent_seconds
from kernel.redis_client import get_redis
from scripts.run import WORKER
from tests.databases import migrated_sqlite
from tests.fixtures_ingest import FAST_EMBEDDER
from tests.waiting import running, wait_for

ROOT = Path(__file__).resolve().parent.parent
LISTENING = "*** Listening on"  # rq's line once a worker takes jobs
BEAT = 3  # WORKER_HEARTBEAT_SECONDS of the workers started here (and of this process's health check)
STALE = 15  # INGEST_STALE_SECONDS: a file without a sign of life this long lost its worker
OLD_THRESHOLD = 60  # health used to count only workers that beat in the last 60 s
SLACK = 15  # a loaded 2-core machine: seconds a process may lag behind what it promised


def children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


class LiveWorkers:
    """Real worker processes over this test session's Redis and a SQLite file of their own."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.database = tmp / "live.sqlite3"
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{self.database}",
            "MEDIA_ROOT": str(tmp / "media"),
            "WORKER_HEARTBEAT_SECONDS": str(BEAT),
            "INGEST_STALE_SECONDS": str(STALE),
            "INGEST_HEARTBEAT_SECONDS": "1",
            "EMBEDDING_MODEL": FAST_EMBEDDER,  # nothing to preload: the workers start in seconds
        }
        self.processes: list[subprocess.Popen] = []

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self) -> subprocess.Popen:
        log = (self.tmp / f"worker{len(self.processes)}.log").open("w")
        process = subprocess.Popen(WORKER, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def log(self) -> str:
        return "\n".join(path.read_text()[-3000:] for path in sorted(self.tmp.glob("worker*.log")))

    def file(self, file_id: int) -> tuple[str, str]:
        with sqlite3.connect(self.database, timeout=30) as db:
            return db.execute(
                "SELECT status, error FROM collections_app_sourcefile WHERE id = ?", (file_id,)
            ).fetchone()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def live_workers(tmp_path):
    workers = LiveWorkers(tmp_path)
    migrated_sqlite(workers.database, workers.env)
    yield workers
    workers.stop()


@pytest.mark.slow
def test_a_worker_importing_its_libraries_counts_as_running_and_busy(live_workers, settings, client_for, owner):
    """A new worker imports torch and sentence-transformers before it takes a file: 6-9 s on an idle
    machine here, 20-40 s on a loaded one, longer than health waits for a heartbeat. The band used to
    say "No background worker is running" all that time."""
    beat = 1  # several beats fit in the import even on an idle machine
    settings.WORKER_HEARTBEAT_SECONDS = beat
    live_workers.env.update({"WORKER_HEARTBEAT_SECONDS": str(beat), "EMBEDDING_MODEL": "local:all-MiniLM-L6-v2"})
    live_workers.start()
    wait_for(lambda: check_workers().count == 1, 120, "the worker to register", live_workers.log)
    band = client_for(owner).get("/").content.decode()
    workers = client_for(owner).get("/api/v1/health").json()["workers"]
    assert LISTENING not in live_workers.log(), "the worker finished importing before the page was read"
    assert "1 background worker running. Busy: 1, idle: 0. New files wait until one is free." in band
    assert workers["detail"] == "1 background worker running (1 busy, 0 idle)."

    # Counted all along its imports, however long they take, by the heartbeats it keeps sending
    # while its main thread imports; then idle once it takes jobs.
    beats = set()
    deadline = time.monotonic() + 300
    while LISTENING not in live_workers.log():
        assert time.monotonic() < deadline, f"the worker did not finish importing in 300 s\n{live_workers.log()}"
        assert check_workers().count == 1, live_workers.log()
        beats.update(w.last_heartbeat for w in Worker.all(connection=get_redis()))
        time.sleep(0.2)
    assert len(beats) >= 2, f"no heartbeat while the worker imported: {beats}"
    wait_for(lambda: check_workers().idle == 1, 30, "the worker to wait for a job", live_workers.log)


UPLOAD = """
from django.core.files.base import ContentFile
from accounts.models import Role, User
from collections_app import files
from collections_app.models import Collection
teacher = User.objects.create_user(username="teacher", password="x", role=Role.TEACHER)
collection = Collection.objects.create(name="Optics", language="english", owner=teacher, embedding_model="{model}")
part = "Lens {{0}} bends light toward its focal point. " * 20
markdown = "\\n\\n".join(f"## Part {{i}}\\n\\n" + part.format(i) for i in range(300))
print(files.add_file(collection, ContentFile(markdown.encode(), name="optics.md"), teacher).pk)
"""


@pytest.mark.slow
def test_idle_and_busy_workers_count_and_a_killed_ones_file_fails_with_retry(
    live_workers, ollama, settings, client_for, owner
):
    settings.WORKER_HEARTBEAT_SECONDS = BEAT
    ollama.embed_delay = 0.5  # seconds per passage: the file's job takes minutes
    # As on a server that has run a while, the daily purge is already queued for later: a new worker
    # queues it a minute after it starts, and the idle worker ran it in the middle of the watch below
    # (2 busy, 0 idle on a loaded machine, where that job takes longer than a second).
    assert schedule_purge(after=timedelta(hours=1))
    first, second = live_workers.start(), live_workers.start()
    wait_for(lambda: check_workers().count == 2, 120, "both workers to listen", live_workers.log)
    file_id = int(live_workers.manage("shell", "-c", UPLOAD.format(model=FAST_EMBEDDER)).split()[-1])
    wait_for(lambda: live_workers.file(file_id)[0] == "processing", 60, "a worker to take the file")

    # One in a long job, one idle, for longer than health used to trust a heartbeat: both count,
    # and the band and the API say the same.
    watched_until = time.monotonic() + OLD_THRESHOLD + 5
    while time.monotonic() < watched_until:
        state = check_workers()
        assert (state.count, state.busy, state.idle) == (2, 1, 1), state
        assert live_workers.file(file_id)[0] == "processing", "the job outlives the watch"
        time.sleep(1)
    band = client_for(owner).get("/").content.decode()
    assert "2 background workers running. Busy: 1, idle: 1." in band
    assert client_for(owner).get("/api/v1/health").json()["workers"]["detail"] == (
        "2 background workers running (1 busy, 1 idle)."
    )

    # Kill the busy worker's main process, as the out-of-memory killer would.
    busy_pid = next(w.pid for w in Worker.all(connection=get_redis()) if w.get_state() == "busy")
    busy = next(p for p in (first, second) if p.pid == busy_pid)
    orphans = children_of(busy_pid)  # its job's process, and rq's scheduler if it runs it
    busy.kill()
    busy.wait()
    killed_at = time.monotonic()
    wait_for(lambda: not any(running(pid) for pid in orphans), 10, "the job process and scheduler to die with it")

    wait_for(lambda: check_workers().count == 1, silent_seconds() + SLACK, "health to stop counting the dead worker")
    noticed = time.monotonic() - killed_at
    wait_for(
        lambda: live_workers.file(file_id)[0] == "failed",
        STALE + BEAT + SLACK,
        "the living worker to fail the dead one's file",
        live_workers.log,
    )
    failed = time.monotonic() - killed_at
    error = live_workers.file(file_id)[1]
    assert "no sign of life" in error and "Retry" in error, error
    print(f"dead worker uncounted at +{noticed:.1f} s; its file failed at +{failed:.1f} s (stale after {STALE} s)")


@pytest.mark.slow
def test_a_file_uploaded_while_a_killed_workers_scheduler_stops_is_not_lost(live_workers, ollama):
    """A worker killed mid-wait (out of memory) leaves its scheduler process behind for the moment it
    takes to stop, longer on a loaded machine. That process used to keep a copy of the worker's
    sockets open, so Redis still counted the dead worker's wait for a job: it handed the next file's
    job to a socket nobody read, and the file stayed queued for ever (seen in CI)."""
    first = live_workers.start()
    wait_for(lambda: check_workers().idle == 1, 120, "the worker to wait for a job", live_workers.log)
    scheduler = wait_for(lambda: children_of(first.pid), 60, "the worker's scheduler", live_workers.log)[0]
    os.kill(scheduler, signal.SIGSTOP)  # a scheduler slow to stop, as on a loaded machine
    try:
        first.kill()
        first.wait()
        file_id = int(live_workers.manage("shell", "-c", UPLOAD.format(model=FAST_EMBEDDER)).split()[-1])
        assert Queue("ingest", connection=get_redis()).count == 1, "the file's job was taken by the dead worker"
        live_workers.start()
        wait_for(lambda: live_workers.file(file_id)[0] == "ready", 240, "the next worker to ingest the file")
    finally:
        os.kill(scheduler, signal.SIGKILL)


@pytest.mark.slow
def test_a_file_whose_job_redis_lost_is_ingested_all_the_same(live_workers, ollama):
    """Redis lost its queue (restarted without its data) while the database still says "queued": a
    worker queues the file again once it has waited INGEST_STALE_SECONDS with no job for it."""
    file_id = int(live_workers.manage("shell", "-c", UPLOAD.format(model=FAST_EMBEDDER)).split()[-1])
    Queue("ingest", connection=get_redis()).empty()
    live_workers.start()
    wait_for(lambda: check_workers().idle == 1, 120, "the worker to wait for a job", live_workers.log)
    wait_for(
        lambda: live_workers.file(file_id)[0] == "ready",
        STALE + BEAT + SLACK + 120,
        "the worker to queue the file again and ingest it",
        live_workers.log,
    )
    log = (live_workers.tmp / "worker0.log").read_text()
    assert f"file {file_id} attempt 1 was queued with no job waiting for it" in log
