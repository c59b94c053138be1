"""The kernel's shared machinery: background threads that survive a fork, waiting out a Redis
outage on redis-py's Retry, the writes deferred until Redis answers, and the TTL cache."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from kernel.outages import GaveUp, defer_until_redis, wait_for_redis
from kernel.redis_client import get_redis
from kernel.threads import DaemonThread, Periodic
from kernel.ttlcache import TTLCache
from scripts.redis_stack import free_port


def _in_child(check) -> int:
    """Run `check()` in a forked child; its exit status (0: it returned True)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover — the child's own process
        code = 1
        try:
            code = 0 if check() else 1
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_a_daemon_thread_starts_again_in_a_forked_child():
    ran = threading.Event()
    release = threading.Event()

    def run() -> None:
        ran.set()
        release.wait(10)

    thread = DaemonThread("test-daemon", run)
    assert thread.start() and ran.wait(5)
    assert not thread.start(), "a running thread is not started twice"

    def child() -> bool:
        ran.clear()
        return not thread.alive and thread.start() and ran.wait(5)

    assert _in_child(child) == 0
    release.set()
    thread.join(5)


def _os_name() -> str:
    """The calling thread's name as `top -H`, `ps -L` and /proc show it."""
    return Path(f"/proc/self/task/{threading.get_native_id()}/comm").read_text().strip()


def test_background_threads_carry_their_names_outside_python():
    from chat.turn.runner import executor

    seen: list[str] = []
    done = threading.Event()
    thread = DaemonThread("stream-saves", lambda: (seen.append(_os_name()), done.set()))
    thread.start()
    assert done.wait(10)
    # A pool's threads are named by kind, without their number: one line per kind in `top -H`.
    assert seen + [executor().submit(_os_name).result(timeout=10)] == ["stream-saves", "chat-turn"]


def test_a_thread_that_ended_for_want_of_work_is_started_by_the_next_work():
    work: list[int] = []
    done: list[int] = []
    finished = threading.Event()

    def run() -> None:
        while True:
            with thread.lock:
                if not work:
                    thread.end_locked()
                    finished.set()
                    return
                done.append(work.pop())

    thread = DaemonThread("test-worklist", run)
    for item in (1, 2):
        finished.clear()
        with thread.lock:
            work.append(item)
            thread.start_locked()
        assert finished.wait(5)
    assert done == [1, 2]
    assert not thread.alive


def test_a_periodic_thread_beats_until_its_beat_says_stop_and_runs_its_end():
    beats: list[int] = []
    ended = threading.Event()

    def beat() -> bool:
        beats.append(1)
        return len(beats) < 3

    Periodic("test-beat", 0.01, beat, at_end=ended.set).start()
    assert ended.wait(5)
    assert len(beats) == 3


def test_a_stopped_periodic_thread_ends():
    beating = threading.Event()
    thread = Periodic("test-stop", 0.01, beating.set)
    thread.start()
    assert beating.wait(5)
    thread.stop(timeout=5)
    assert not thread.alive


def test_waiting_for_redis_returns_once_it_answers():
    wait_for_redis(get_redis(), first=0.5, longest=2.0)


def test_waiting_for_an_unreachable_redis_gives_up_when_told():
    away = redis.Redis(port=free_port(), socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    failures: list[float] = []
    with pytest.raises(GaveUp):
        wait_for_redis(
            away,
            first=0.01,
            longest=0.04,
            give_up=lambda: len(failures) >= 4,
            on_failure=lambda _e, p: failures.append(p),
        )
    assert failures == [0.01, 0.02, 0.04, 0.04], "pauses double up to the longest"


def test_waiting_for_an_unreachable_redis_gives_up_at_the_deadline():
    away = redis.Redis(port=free_port(), socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))
    with pytest.raises(GaveUp):
        wait_for_redis(away, first=0.5, longest=5.0, deadline=0.0)


def test_a_deferred_write_is_tried_again_until_redis_takes_it():
    tries: list[int] = []
    written = threading.Event()

    def write() -> None:
        tries.append(1)
        if len(tries) < 2:
            raise redis.ConnectionError("Redis is away")
        written.set()

    defer_until_redis(write)
    assert written.wait(10)
    assert len(tries) == 2


def test_a_ttl_cache_keeps_a_value_while_fresh_including_none():
    seconds = [3600.0]
    cache: TTLCache[str, int | None] = TTLCache(lambda: seconds[0], maxsize=2)
    looked_up: list[str] = []

    def make(key: str):
        return lambda: looked_up.append(key)  # returns None: an unreachable server's answer

    assert cache.get_or_make("a", make("a")) is None
    cache.get_or_make("a", make("a"))
    assert looked_up == ["a"], "a kept None is not looked up again"
    cache.get_or_make("a", make("a"), fresh=True)
    assert looked_up == ["a", "a"]
    seconds[0] = 0.0  # the setting changed: every value is stale now
    cache.get_or_make("a", make("a"))
    assert looked_up == ["a", "a", "a"]
    assert cache.get("a") is None


def test_a_ttl_cache_forgets_the_oldest_beyond_its_size():
    cache: TTLCache[str, int] = TTLCache(3600, maxsize=2)
    for number, key in enumerate("abc"):
        cache.put(key, number)
    assert cache.peek("a") is None
    assert (cache.get("b"), cache.get("c")) == (1, 2)
    cache.clear()
    assert cache.peek("c") is None
