"""A real worker (`manage.py rqworker --with-scheduler`, our worker class) through a real Redis
stopped and started again (issue 44 item 6; docs/RELIABILITY.md, "Redis goes away").

- Idle through an outage, it takes a job queued after Redis came back within 5 s (rq's own retry
  wait doubled up to 60 s: 25.6 s were measured after a 30 s outage).
- Busy through an outage, it keeps watching its job's process: the next job does not start beside
  it, and the first process is reaped (rq's loop used to quit and start again, leaving a zombie).
- Its scheduler's process rides the outage out, the same process before and after.

The jobs are the app's own kind (django-tasks through rq's queues, on the ingest queue where
uploaded files wait); the worker runs on its own database, so they are tasks that sleep rather
than files. Tests wait on events (a job's status, a log line); the 5 s bound is what they assert.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from rq.job import Job, JobStatus

from kernel.redis_client import get_redis
from tests.test_redis_outages import Outage, _children, _start_worker
from tests.waiting import wait_for
from tests.worker_probes import nap

pytestmark = pytest.mark.slow


@pytest.fixture
def redis_outage():
    outage = Outage()
    yield outage
    outage.over.set()
    outage.start()  # never leave the rest of the session without Redis


def _job(result) -> Job:
    return Job.fetch(result.id, connection=get_redis())


def _status(result) -> JobStatus | None:
    return _job(result).get_status(refresh=True)


def _worker_noticed(log: str) -> bool:
    """The worker itself (not its scheduler) met the outage while watching its job: it says so
    and watches on, or (before issue 44) rq's loop quit on it."""
    return "still watches its job" in log or "unhandled exception" in log or "lost Redis; waiting" in log


def _rode_out(worker, schedulers: list[int]) -> bool:
    """The scheduler's process from before the outage is still the worker's, and alive."""
    return set(schedulers) <= {int(pid) for pid in _children(worker.pid)} and not any(
        not _gone_or_reaped(pid) for pid in schedulers
    )


def _gone_or_reaped(pid: int) -> bool:
    """No process, or one that is no zombie (a zombie: it ended and nobody waited for it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state != "Z"


def _scheduler_started(worker, log) -> list[int]:
    wait_for(lambda: get_redis().get("rq:scheduler-lock:default"), 90, "the worker's scheduler to start", log)
    return wait_for(lambda: [int(pid) for pid in _children(worker.pid)], 30, "the scheduler's process", log)


def test_an_idle_worker_takes_a_job_within_5_seconds_of_redis_coming_back(tmp_path, redis_outage):
    worker, log = _start_worker(tmp_path)
    try:
        schedulers = _scheduler_started(worker, log)
        redis_outage.stop()
        wait_for(lambda: "could not connect" in log.read_text(), 30, "the worker to notice Redis went away", log)
        redis_outage.start_after(20)  # long enough for rq's doubling wait to reach 16 s
        queued = nap.using(queue_name="ingest").enqueue(0)
        wait_for(
            lambda: _status(queued) in (JobStatus.STARTED, JobStatus.FINISHED), 60, "the worker to take the job", log
        )
        took = time.monotonic() - redis_outage.up_at
        assert took < 5, f"the job started {took:.1f} s after Redis came back:\n{log.read_text()[-3000:]}"
        assert _rode_out(worker, schedulers), "the scheduler's process ended with the outage"
        assert worker.poll() is None, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_a_job_running_through_an_outage_is_watched_to_its_end_and_the_next_waits(tmp_path, redis_outage):
    worker, log = _start_worker(tmp_path)
    try:
        schedulers = _scheduler_started(worker, log)
        first = nap.using(queue_name="ingest").enqueue(15)
        wait_for(lambda: _status(first) == JobStatus.STARTED, 60, "the first job to start", log)
        horse = wait_for(lambda: set(map(int, _children(worker.pid))) - set(schedulers), 10, "its process", log)
        redis_outage.stop()
        # The worker looks at Redis while watching a job every beat (WORKER_HEARTBEAT_SECONDS).
        wait_for(lambda: _worker_noticed(log.read_text()), 30, "the worker to notice Redis went away", log)
        redis_outage.start()
        second = nap.using(queue_name="ingest").enqueue(0)
        wait_for(lambda: _status(second) == JobStatus.FINISHED, 60, "the second job to end", log)
        first_job, second_job = _job(first), _job(second)
        assert first_job.get_status() == JobStatus.FINISHED, log.read_text()[-3000:]
        assert first_job.ended_at and second_job.started_at
        overlap = (first_job.ended_at - second_job.started_at).total_seconds()
        assert overlap <= 0, f"the second job started {overlap:.1f} s before the first ended"
        (pid,) = horse
        wait_for(lambda: _gone_or_reaped(pid), 10, f"the first job's process {pid} to be reaped, not a zombie", log)
        assert _rode_out(worker, schedulers), "the scheduler's process ended with the outage"
        assert worker.poll() is None, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_a_stop_while_the_worker_waits_for_redis_ends_it_and_its_scheduler(tmp_path, redis_outage):
    """rq's loop ends on the outage (here: the job's end cannot be recorded) and the worker waits for
    Redis, its scheduler kept for the next loop: one SIGTERM ends both (the worker used to hang at
    exit, waiting for the scheduler, which waited for Redis)."""
    worker, log = _start_worker(tmp_path)
    try:
        schedulers = _scheduler_started(worker, log)
        job = nap.using(queue_name="ingest").enqueue(2)
        wait_for(lambda: _status(job) == JobStatus.STARTED, 60, "the job to start", log)
        redis_outage.stop()
        wait_for(lambda: "lost Redis; waiting" in log.read_text(), 60, "the worker to wait for Redis", log)
        worker.send_signal(signal.SIGTERM)
        wait_for(lambda: worker.poll() is not None, 30, "the worker to exit on its first SIGTERM", log)
        wait_for(lambda: not any(_running(pid) for pid in schedulers), 30, "its scheduler to end", log)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def _running(pid: int) -> bool:
    """A process, and no zombie."""
    return Path(f"/proc/{pid}").exists() and _gone_or_reaped(pid)
