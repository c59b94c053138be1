"""The background worker class (`settings.RQ["WORKER_CLASS"]`, used by `manage.py rqworker`).

rq forks a fresh work horse for every job, so one file's crash (a PDF that kills its parser)
cannot take the worker down. But whatever a job loads dies with its horse: every file paid again
for importing torch and sentence-transformers (about 4 s) and loading the model's weights (0.5 s
quiet, 1.5 s on a loaded machine) before it could embed a single passage. This worker imports them
and loads the weights once, before its first fork; each horse inherits them.

No model is run in the parent, and it computes on one thread (`rag.providers.threads`): a process
whose OpenMP pool has started must not fork. Each horse then computes on EMBED_THREADS.

It also keeps files from being stuck when a process dies (docs/RELIABILITY.md):
- a job's process that dies (killed, out of memory) fails its file at once, with a Retry;
- every worker fails the files whose job stopped beating (`liveness.fail_stalled_files`) when it
  starts and then every few seconds, so a whole worker or machine that vanished is noticed too;
- a job's process dies with its worker (Linux `PR_SET_PDEATHSIG`) instead of running on orphaned;
- Redis going away: the worker and its scheduler ride it out (`currechat.worker_outages`);
- it beats every WORKER_HEARTBEAT_SECONDS, idle or in a job, whatever command line started it
  (`manage.py rqworker` passes rq's `--worker-ttl` of 420 s, under which an idle worker beat, and
  looked for dead workers' files, only every 405 s); health counts a silent worker as dead;
- it registers before its imports, and beats from a thread of its own (`Liveness`), so a worker
  busy importing torch (20-40 s on a loaded machine) or in a long job is never taken for a dead one;
- rq's scheduler process dies with its worker too, and every process the worker forks closes its
  copies of the worker's Redis sockets (a dead worker's wait for a job took the next job with it);
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import time

import redis
from django.conf import settings
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy
from rq import Worker
from rq.utils import now, utcformat
from rq.worker import WorkerStatus

from collections_app import liveness
from currechat.forks import die_with_parent, tie_forks_to_this_process
from currechat.worker_outages import RidesOutages
from kernel.threads import Periodic

INGEST_TASK = "collections_app.tasks.ingest_file"
INGEST_QUEUE = "ingest"
# How often a worker without a scheduler tries to take the scheduler's lock (`_revive_scheduler`).
SCHEDULER_RETRY_SECONDS = 10.0

log = logging.getLogger(__name__)


def preload_modules() -> float | None:
    """Import what the jobs need from the embedding side and load the default local embedder's
    weights; the seconds it took, or None if nothing is needed (the default embedder runs on a
    model server)."""
    from rag.providers import local, threads
    from rag.providers.registry import load_local_embedder

    # Before torch is imported (it sizes its pools from the environment then), and one thread: this
    # process forks the job processes, which set their own count (threads.use).
    threads.use(1)
    local.for_file_embedding()  # its job processes embed whole files (rag/providers/local.py)
    # PDF jobs need pymupdf (1.5-2 s to import); other processes import it at their first PDF
    # (rag/ingest/pdf/safety.py), this one once for all the job processes it forks.
    import pymupdf  # noqa: F401

    return load_local_embedder(settings.EMBEDDING_MODEL)


def schedule_daily_jobs() -> None:
    """Queue the daily jobs (the chat purge of retention, the weekly topics mail, the learning
    platforms' roster sync) unless another worker already has: each run queues the next one itself
    (kernel/schedule.py), so the schedule lives in the queue and survives worker restarts."""
    from datetime import timedelta

    from chat.tasks import schedule_mail, schedule_purge
    from lti.tasks import schedule_daily_sync

    daily = (
        (schedule_purge, 1, "The daily purge of expired chats is scheduled"),
        (schedule_mail, 2, "The daily run of the weekly topics mail is scheduled"),
        (schedule_daily_sync, 3, "The daily roster sync of learning platforms' courses is scheduled"),
    )
    for schedule, minutes, sentence in daily:
        if schedule(after=timedelta(minutes=minutes)):
            log.info(sentence)


def silent_seconds() -> int:
    """After this long without a heartbeat a worker counts as dead (health, and rq's TTL)."""
    return settings.WORKER_HEARTBEAT_SECONDS * settings.WORKER_DEAD_BEATS


# Refreshes a live registration only: a worker's hash that expired or records its death stays so.
_BEAT = """
if redis.call('EXISTS', KEYS[1]) == 1 and redis.call('HEXISTS', KEYS[1], 'death') == 0 then
  redis.call('HSET', KEYS[1], 'last_heartbeat', ARGV[1])
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""


class Liveness:
    """A registered worker's heartbeat, from a thread of its own, every WORKER_HEARTBEAT_SECONDS.

    rq beats only from the worker's main thread, between the things that thread does; while it
    imported torch (20-40 s on a loaded machine) or waited on the database, no beat came, and the
    status band said "No background worker is running" about a worker that was busy. The thread
    says only that the process is alive; what it does (idle, busy) is still the main thread's
    `state`. A process that dies takes its thread along, so a dead worker still falls silent, and
    a job's process (forked) has no copy of the thread."""

    def __init__(self, worker: Worker):
        self.worker = worker
        self._beat = worker.connection.register_script(_BEAT)
        self._thread = Periodic("worker-liveness", lambda: settings.WORKER_HEARTBEAT_SECONDS, self._beat_once)

    @property
    def running(self) -> bool:
        return self._thread.alive

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop(timeout=5)

    def _beat_once(self) -> None:
        try:
            self._beat(keys=[self.worker.key], args=[utcformat(now()), self.worker.worker_ttl + 60])
        except redis.RedisError:  # Redis is away: the main thread waits for it, health says so
            log.debug("Worker %s: no heartbeat, Redis is unreachable", self.worker.name)


class PreloadingWorker(RidesOutages):
    def __init__(self, *args, **kwargs):
        # Ours whatever the command line says: `manage.py rqworker` always passes a TTL (420 s).
        asked = kwargs.get("worker_ttl")
        kwargs["worker_ttl"] = silent_seconds()
        kwargs["job_monitoring_interval"] = settings.WORKER_HEARTBEAT_SECONDS  # beats during a job
        super().__init__(*args, **kwargs)
        if asked and asked != self.worker_ttl:
            log.info(
                "Worker liveness from the settings: a heartbeat every %d s, dead after %d s "
                "(WORKER_HEARTBEAT_SECONDS; the command line's TTL of %d s is not used)",
                settings.WORKER_HEARTBEAT_SECONDS,
                self.worker_ttl,
                asked,
            )
        self._swept_at = 0.0
        self._scheduler_tried_at = 0.0
        self._own_pid = os.getpid()  # heartbeat also runs in a job's process, which has no scheduler
        self._liveness = Liveness(self)
        self._announced = False  # registered before the imports; rq's own registration keeps that
        self._preloaded = False
        try:
            schedule_daily_jobs()
        except Exception:  # noqa: BLE001  (a worker that cannot schedule still ingests files)
            log.exception("Could not schedule the daily purge of expired chats")

    def _preload(self) -> None:
        """Import what every job needs, once, before the first fork (the module's docstring)."""
        self._preloaded = True
        try:
            seconds = preload_modules()
        except Exception:  # noqa: BLE001  (the horse will raise the same error where a user can see it)
            log.exception("Could not load the embedding model in the worker")
            return
        if seconds is not None:
            log.info(
                "The worker loaded the embedding model %s in %.1f s; every job's process shares it",
                settings.EMBEDDING_MODEL,
                seconds,
            )
        # The processes forked from here (each job, the scheduler) share these pages with us until
        # one writes to them, and the collector's passes write to every object it tracks: frozen,
        # the imported objects are left alone, so the pages stay shared (docs/BENCHMARKS.md).
        gc.freeze()

    # Liveness ----------------------------------------------------------------------------------

    @property
    def dequeue_timeout(self) -> int:
        """How long an idle worker waits for a job before it beats again (rq: its TTL less 15 s)."""
        return settings.WORKER_HEARTBEAT_SECONDS

    def bootstrap(self, *args, **kwargs):
        """rq's start (registration, "*** Listening on"), after the imports. The worker registers
        before them, as starting (health counts it busy), and beats from then on: for the 20-40 s
        that importing torch takes on a loaded machine, the band used to say no worker was running."""
        tie_forks_to_this_process(self.connection)  # before rq forks its scheduler
        if not self._preloaded:
            self.register_birth()
            self.set_state(WorkerStatus.STARTED)
            self._announced = True
            self._preload()
        super().bootstrap(*args, **kwargs)

    def register_birth(self):
        """rq's registration, then the beat from a thread (`Liveness`) until the death is registered.
        rq's own call just after an early registration (`bootstrap`) keeps that one."""
        if self._announced:
            self._announced = False
            return
        super().register_birth()
        self._liveness.start()

    def register_death(self):
        self._liveness.stop()  # first: even when Redis is away and rq's registration fails
        super().register_death()

    def heartbeat(self, *args, **kwargs):
        """rq's heartbeat, then (at most every half beat) a look for files whose worker died: a file
        of a worker killed mid-job is failed within INGEST_STALE_SECONDS + one beat; and, when no
        ingestion job waits, for queued files whose job was lost (queued again)."""
        super().heartbeat(*args, **kwargs)
        now = time.monotonic()
        if now - self._swept_at >= settings.WORKER_HEARTBEAT_SECONDS / 2:
            self._swept_at = now
            try:
                liveness.fail_stalled_files()
                ingest = [queue for queue in self.queues if queue.name == INGEST_QUEUE]
                if ingest and ingest[0].count == 0:
                    liveness.queue_lost_files()
            except Exception:  # noqa: BLE001 — the database may be briefly away; the next beat retries
                log.warning("Could not check for files whose worker died or whose job was lost", exc_info=True)
        self._revive_scheduler(now)

    def _revive_scheduler(self, now: float) -> None:
        """Take the scheduler's lock again, every few seconds, while this worker runs without a
        scheduler (another worker's may hold it). rq tries only at its maintenance, every 10 minutes:
        after a hard kill (worker, scheduler and Redis at once) the dead scheduler's lock (61 s)
        outlives it in Redis, and a worker started within that minute ran without one for ten."""
        scheduler = self.scheduler
        if os.getpid() != self._own_pid or scheduler is None:
            return
        if scheduler._process is not None and scheduler._process.is_alive():
            return
        if now - self._scheduler_tried_at < SCHEDULER_RETRY_SECONDS:
            return
        self._scheduler_tried_at = now
        try:
            scheduler.acquire_locks(auto_start=True)
        except (redis.ConnectionError, redis.TimeoutError):
            log.info("Could not take the scheduler's lock (Redis unreachable); trying again shortly")

    def main_work_horse(self, job, queue):
        from rag.providers import threads

        die_with_parent()
        threads.use(threads.for_jobs())  # the worker itself computes on one (module docstring)
        super().main_work_horse(job, queue)

    def handle_work_horse_killed(self, job, retpid, ret_val, rusage):
        """The job's process ended without a result (killed, out of memory): fail its file now."""
        super().handle_work_horse_killed(job, retpid, ret_val, rusage)
        if job.func_name != INGEST_TASK or len(job.args) < 2:
            return
        signal_no = ret_val & 0x7F if ret_val else 0
        # Lazy: the sentence is stored in the language of the collection's owner (liveness.fail_lost).
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
            liveness.fail_lost(int(job.args[0]), int(job.args[1]), why, language)
        except Exception:  # noqa: BLE001 — the periodic sweep fails it later
            log.exception("Could not mark the file of job %s failed", job.id)
