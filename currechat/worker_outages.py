"""How the worker (`currechat.worker.PreloadingWorker`) and its scheduler ride out Redis outages
(docs/RELIABILITY.md, "Redis goes away").

rq's loop quits on a Redis error outside its wait for a job; `RidesOutages.work` waits for Redis
and starts it again, and keeps through that:
- the job's process that was running: rq's watch over it no longer ends on a Redis error
  (`maintain_heartbeats`), so no next job starts beside it and it is reaped (no zombie);
- the scheduler's process, which rides the outage out itself (`SteadyScheduler`), instead of
  stopping it and starting another after Redis came back;
- a short wait: rq's retry wait, while idle, doubled up to 60 s (`max_connection_wait_time`).
A stop (SIGTERM, Ctrl-C) ends the worker at once even while Redis is away.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable

import redis
from rq import Worker
from rq.exceptions import StopRequested
from rq.scheduler import RQScheduler
from rq.worker import WorkerStatus

from currechat import lifeline
from kernel.outages import GaveUp, wait_for_redis

log = logging.getLogger("currechat.worker")

# The longest pause between two pings of an unreachable Redis, for rq's own wait and ours alike: a
# ping is cheap, and work waiting in the queue starts this soon after Redis is back.
LONGEST_WAIT = 2.0


def redis_is_back(connection: redis.Redis, *, stop: Callable[[], bool] = lambda: False) -> bool:
    """Block until Redis answers, pinging after 1 s, then every LONGEST_WAIT (kernel.outages, on
    redis-py's Retry); False when `stop()` said to give up first (checked at least every second)."""
    try:
        wait_for_redis(connection, first=1.0, longest=LONGEST_WAIT, give_up=stop, on_failure=_unreachable)
    except GaveUp:
        return False
    return True


def _unreachable(_error: Exception, pause: float) -> None:
    log.warning("Redis is unreachable; trying again in %.0f s", pause)


class SteadyScheduler(RQScheduler):
    """rq's scheduler (the process `--with-scheduler` forks: the daily purge and other delayed
    jobs), riding out Redis outages. rq's own loop raises at the first connection error and its
    process ends; the worker started another only at its next maintenance, up to 10 minutes later."""

    def work(self) -> None:
        # No scheduler left running without its worker; SIGTERM, so it releases its locks first.
        lifeline.die_with_parent(signal.SIGTERM)
        while not self._stop_requested:
            try:
                super().work()  # returns only when asked to stop
                return
            except (redis.ConnectionError, redis.TimeoutError):
                self.log.warning("The scheduler lost Redis; it goes on when Redis is back")
            self._scheduled_job_registries = []
            redis_is_back(self.connection, stop=lambda: self._stop_requested)
        # Asked to stop while Redis was away: its locks and registration expire by themselves.
        self.log.info("Scheduler stopped while Redis was unreachable")


class RidesOutages(Worker):
    """The outage handling of our worker class (the module's docstring)."""

    # rq waits for an unreachable Redis 1 s, doubling up to 60 s: a file uploaded just after a 30 s
    # outage waited up to 26 s for an idle worker.
    max_connection_wait_time = LONGEST_WAIT
    _signalled = False

    def work(self, burst: bool = False, *args, **kwargs) -> bool:
        """rq's loop, started again after Redis went away (rq itself quits on any error there).
        A stop signal, or any other reason to stop, returns, and `make run` starts a fresh worker."""
        try:
            return self._work_through_outages(burst, *args, **kwargs)
        finally:
            # A stop heard while Redis was away comes after rq's loop kept its scheduler running for
            # the next loop (`teardown`): stopped here, or this process never exits (multiprocessing
            # waits for its children at exit, and the scheduler waits for Redis).
            self._stop_kept_scheduler()

    def _work_through_outages(self, burst: bool, *args, **kwargs) -> bool:
        while True:
            try:
                worked = super().work(burst, *args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError):  # its teardown could not reach Redis
                worked = False
            if burst or self._stop_requested or self._signalled or self._redis_ok():
                return worked
            log.warning("Worker %s lost Redis; waiting for it to come back", self.name)
            self._reap_horse()
            try:
                if not redis_is_back(self.connection, stop=lambda: self._signalled):
                    return worked
            except StopRequested:  # the signal arrived while we waited (rq raises it from its handler)
                return worked
            self.connection.delete(self.key)  # our own registration, left half-dead by the outage
            self._stop_requested = False

    def maintain_heartbeats(self, job, execution):
        """rq's beat while a job runs, which Redis being away no longer ends: rq let the error out
        of its watch over the job's process, its loop started again and took the next file beside
        the running one, and nobody reaped the first (a zombie). The watch goes on; the job's
        process rides the outage out itself (or fails its file with its sentence)."""
        try:
            super().maintain_heartbeats(job, execution)
        except (redis.ConnectionError, redis.TimeoutError):
            log.warning("Redis is unreachable; worker %s still watches its job %s", self.name, job.id)

    def _stop_kept_scheduler(self) -> None:
        process = self.scheduler._process if self.scheduler is not None else None
        if process is not None and process.is_alive():
            self.stop_scheduler()

    def _reap_horse(self) -> None:
        """Wait for a job's process that rq's loop left behind (its error came after the watch ended,
        or from elsewhere): no next job beside it, no zombie."""
        if not self._horse_pid:
            return
        log.warning("Worker %s waits for the process of its last job (pid %d) to end", self.name, self._horse_pid)
        self.wait_for_horse()
        self._horse_pid = 0

    def teardown(self):
        """rq's teardown, but the scheduler's process is left running when rq's loop ended because
        Redis went away: it rides the outage out itself (`SteadyScheduler`), and this worker's next
        loop keeps it (`_start_scheduler`) instead of stopping and starting another."""
        if not (self._stop_requested or self._signalled or self._redis_ok()):
            scheduler, self.scheduler = self.scheduler, None
            try:
                super().teardown()
            finally:
                self.scheduler = scheduler
            return
        super().teardown()

    def heartbeat(self, *args, **kwargs):
        """rq's heartbeat, which also hears a stop signal again. rq's handler raises StopRequested
        into whatever runs; raised while a log line is written, logging swallows it (its handlers
        catch every error of their own), and rq's wait for an unreachable Redis, which beats at each
        of its turns, then went on for ever. Not while a job runs: that stop waits for the job."""
        if self._signalled and self.get_state() != WorkerStatus.BUSY:
            raise StopRequested
        return super().heartbeat(*args, **kwargs)

    def request_stop(self, signum, frame):
        # rq's handler raises StopRequested into whatever runs, and its loop's teardown then fails
        # on Redis: remembered here, so the first signal ends the worker whatever Redis is doing.
        self._signalled = True
        super().request_stop(signum, frame)

    def _start_scheduler(self, burst=False, logging_level="INFO", date_format=None, log_format=None):
        """rq's `_start_scheduler`, with the scheduler that rides out Redis outages."""
        from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT

        # The same name as the scheduler of rq's previous loop, if any: its locks (left in Redis
        # when it stopped during an outage) are then refreshed at once, not waited out for minutes.
        previous = self.scheduler.name if self.scheduler else None
        if self.scheduler and self.scheduler._process is not None and self.scheduler._process.is_alive():
            return  # it rode out the outage that ended rq's previous loop (`teardown`)
        self.scheduler = SteadyScheduler(
            self.queues,
            name=previous,
            connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            date_format=date_format or DEFAULT_LOGGING_DATE_FORMAT,
            log_format=log_format or DEFAULT_LOGGING_FORMAT,
            serializer=self.serializer,
        )
        self.scheduler.acquire_locks()
        if not self.scheduler.acquired_locks:
            return  # another worker's scheduler has them; ours starts if that one goes (maintenance)
        if burst:
            try:
                self.scheduler.register_birth()
                self.scheduler.enqueue_scheduled_jobs()
            finally:
                self.scheduler.release_locks()
                self.scheduler.register_death()
        else:
            self.scheduler.start()

    def _redis_ok(self) -> bool:
        try:
            return bool(self.connection.ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False
