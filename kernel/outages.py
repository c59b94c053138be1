"""Riding out a Redis outage, on redis-py's own `Retry` and backoff.

Three places wait for Redis to come back: the worker and its scheduler (currechat.worker_outages),
an ingestion step (rag.ingest.pipeline) and the writes a chat turn could not make (`defer_until_redis`).
Each pings or writes again after a pause that doubles up to a cap (`pauses`): short enough that work
waiting in the queue starts soon after Redis is back, long enough that a dead Redis is not hammered.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import redis
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

from kernel.threads import DaemonThread

log = logging.getLogger(__name__)

# An unreachable Redis, or one that does not answer in time.
UNREACHABLE = (redis.ConnectionError, redis.TimeoutError)


def pauses(first: float, longest: float) -> ExponentialBackoff:
    """Pauses of `first` seconds after the first failure, doubling up to `longest`."""
    return ExponentialBackoff(cap=longest, base=first / 2)  # redis-py's first pause is base * 2


class GaveUp(Exception):
    """Stopped waiting for Redis: asked to stop, or past the deadline."""


def wait_for_redis(
    client: redis.Redis,
    *,
    first: float,
    longest: float,
    give_up: Callable[[], bool] = lambda: False,
    deadline: float | None = None,
    on_failure: Callable[[Exception, float], object] | None = None,
) -> None:
    """Return once `client` answers a ping, pinging after pauses of `first` seconds doubling to
    `longest` (redis-py's `Retry` with an exponential backoff). Raises GaveUp when `give_up()` says
    so (asked before each ping and at least every second of a pause) or when Redis is still away
    at `deadline` (time.monotonic(); no pause runs past it). `on_failure(error, pause)` hears of
    each failed ping."""
    backoff = pauses(first, longest)

    def ping() -> None:
        if give_up() or (deadline is not None and time.monotonic() >= deadline):
            raise GaveUp
        client.ping()

    def pause(error: Exception, failures: int) -> None:
        # The pause is taken here rather than by Retry's own sleep, so that a stop is heard within
        # a second and a deadline is never slept past.
        seconds = backoff.compute(failures)
        if deadline is not None:
            seconds = max(0.0, min(seconds, deadline - time.monotonic()))
        if on_failure is not None:
            on_failure(error, seconds)
        until = time.monotonic() + seconds
        while (left := until - time.monotonic()) > 0 and not give_up():
            time.sleep(min(1.0, left))

    retry = Retry(NoBackoff(), -1, supported_errors=UNREACHABLE)
    retry.call_with_retry(ping, pause, with_failure_count=True)


# Writes that must reach Redis --------------------------------------------------------------------

SETTLE_PAUSE_SECONDS = (0.5, 5.0)  # first and longest pause between tries while Redis is away


class _Settler:
    """Writes that must reach Redis but found it away (a turn's token counts, its lock's
    release), done by one thread of the process as soon as Redis answers again, in order."""

    def __init__(self) -> None:
        self._pending: list[Callable[[], None]] = []
        self._thread = DaemonThread("redis-settler", self._run)

    def add(self, write: Callable[[], None]) -> None:
        with self._thread.lock:
            self._pending.append(write)
            self._thread.start_locked()

    def pending(self) -> int:
        with self._thread.lock:
            return len(self._pending)

    def _run(self) -> None:
        retry = Retry(pauses(*SETTLE_PAUSE_SECONDS), -1, supported_errors=(redis.RedisError,))
        while True:
            with self._thread.lock:
                if not self._pending:
                    self._thread.end_locked()
                    return
                write = self._pending[0]
            try:
                retry.call_with_retry(write, lambda _error: None)
            except Exception:  # noqa: BLE001 — a write that cannot succeed must not block the others
                log.exception("A deferred Redis write failed")
            with self._thread.lock:
                self._pending.pop(0)


_settler = _Settler()


def defer_until_redis(write: Callable[[], None]) -> None:
    """Run `write` (a Redis write) in the background as soon as Redis answers again, in the order
    deferred. Kept in this process's memory: what it settles is also stored in the database (token
    counts in `TokenUsage`)."""
    _settler.add(write)


def deferred_writes() -> int:
    """How many deferred writes wait for Redis (for tests and health)."""
    return _settler.pending()
