"""The background worker class (`settings.RQ["WORKER_CLASS"]`, used by `manage.py rqworker`).

rq forks a fresh work horse for every job, so one file's crash (a PDF that kills its parser)
cannot take the worker down. But whatever a job imports dies with its horse: every file paid
again for importing torch and sentence-transformers, about 4 s on our machines, before it could
embed a single passage. This worker imports them once, before its first fork; each horse inherits
the imported modules and only loads the model's weights (under half a second).

Only imports happen in the parent: no weights are loaded and no model is run there, because torch's
thread pools must not be started in a process that forks afterwards.

It also keeps files from being stuck when a process dies (docs/RELIABILITY.md):
- a job's process that dies (killed, out of memory) fails its file at once, with a Retry;
- every worker fails the files whose job stopped beating (`lifecycle.fail_stalled_files`) when it
  starts and then every few seconds, so a whole worker or machine that vanished is noticed too;
- a job's process dies with its worker (Linux `PR_SET_PDEATHSIG`) instead of running on orphaned;
- Redis going away makes rq's loop quit: this worker waits for Redis and carries on instead;
- its registration expires within WORKER_TTL seconds of its death, so health counts live workers.
"""

from __future__ import annotations

import ctypes
import logging
import signal
import sys
import time

import redis
from django.conf import settings
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy
from rq import Worker

from collections_app import lifecycle

# rq's default (420 s) kept a dead worker registered, and counted as running, for 8 minutes.
WORKER_TTL = 35
SWEEP_SECONDS = 10.0
INGEST_TASK = "collections_app.tasks.ingest_file"
_PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)


def preload_modules() -> float | None:
    """Import what the jobs need from the embedding side; the seconds it took, or None if nothing
    is needed (the default embedder runs on a model server)."""
    from rag.providers.local import import_libraries
    from rag.providers.registry import split_name

    if split_name(settings.EMBEDDING_MODEL)[0] != "local":
        return None
    started = time.perf_counter()
    import_libraries()
    return time.perf_counter() - started


def schedule_daily_jobs() -> None:
    """Queue the daily chat purge (retention) unless another worker already has: the run queues
    the next one itself, so the schedule lives in the queue and survives worker restarts."""
    from datetime import timedelta

    from chat.retention import schedule_purge

    if schedule_purge(after=timedelta(minutes=1)):
        log.info("The daily purge of expired chats is scheduled")


def die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        log.info("Could not tie the job process to its worker", exc_info=True)


def redis_is_back(connection: redis.Redis, *, max_wait: float = 30.0) -> None:
    """Block until Redis answers, with backoff (1 s doubling to `max_wait`)."""
    delay = 1.0
    while True:
        try:
            connection.ping()
            return
        except (redis.ConnectionError, redis.TimeoutError):
            log.warning("Redis is unreachable; the worker tries again in %.0f s", delay)
            time.sleep(delay)
            delay = min(delay * 2, max_wait)


class PreloadingWorker(Worker):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("worker_ttl", WORKER_TTL)
        super().__init__(*args, **kwargs)
        self._swept_at = 0.0
        try:
            schedule_daily_jobs()
        except Exception:  # noqa: BLE001  (a worker that cannot schedule still ingests files)
            log.exception("Could not schedule the daily purge of expired chats")
        try:
            seconds = preload_modules()
        except ImportError:  # the horse will raise the same error where a user can see it
            log.exception("Could not import the embedding libraries in the worker")
            return
        if seconds is not None:
            log.info("Embedding libraries imported in %.1f s; every job's process inherits them", seconds)

    # Riding out failures -------------------------------------------------------------------------

    def work(self, burst: bool = False, *args, **kwargs) -> bool:
        """rq's loop, started again after Redis went away (rq itself quits on any error there).
        Any other reason to stop returns, and `make run` starts a fresh worker."""
        while True:
            try:
                worked = super().work(burst, *args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError):  # its teardown could not reach Redis
                worked = False
            if burst or self._stop_requested or self._redis_ok():
                return worked
            log.warning("Worker %s lost Redis; waiting for it to come back", self.name)
            redis_is_back(self.connection)
            self.connection.delete(self.key)  # our own registration, left half-dead by the outage
            self._stop_requested = False

    def _redis_ok(self) -> bool:
        try:
            return bool(self.connection.ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False

    def heartbeat(self, *args, **kwargs):
        super().heartbeat(*args, **kwargs)
        now = time.monotonic()
        if now - self._swept_at >= SWEEP_SECONDS:
            self._swept_at = now
            try:
                lifecycle.fail_stalled_files()
            except Exception:  # noqa: BLE001 — the database may be briefly away; the next beat retries
                log.warning("Could not check for files whose worker died", exc_info=True)

    def main_work_horse(self, job, queue):
        die_with_parent()
        super().main_work_horse(job, queue)

    def handle_work_horse_killed(self, job, retpid, ret_val, rusage):
        """The job's process ended without a result (killed, out of memory): fail its file now."""
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        if job.func_name != INGEST_TASK or len(job.args) < 2:
            return
        signal_no = ret_val & 0x7F if ret_val else 0
        # Lazy: the sentence is stored in the language of the collection's owner (lifecycle.fail_lost).
        if signal_no == signal.SIGKILL:
            why = gettext_lazy(
                "its process was killed by signal 9, which usually means the server ran out of memory or an "
                "operator stopped it"
            )
        elif signal_no:
            why = format_lazy(gettext_lazy("its process was killed by signal {signal}"), signal=signal_no)
        else:
            why = gettext_lazy("its process ended unexpectedly")
        try:
            language = str(job.args[3]) if len(job.args) > 3 else ""
            lifecycle.fail_lost(int(job.args[0]), int(job.args[1]), why, language)
        except Exception:  # noqa: BLE001 — the periodic sweep fails it later
            log.exception("Could not mark the file of job %s failed", job.id)
