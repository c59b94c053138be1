"""Per-user rate limit and one turn at a time per chat, kept in Redis so every web process agrees."""

from __future__ import annotations

import logging
import threading
import time
import weakref

import redis
from django.conf import settings
from django.utils.translation import gettext as _

from kernel.beacon import ALIVE_TTL, alive_key, beacon
from kernel.errors import Conflict
from kernel.outages import defer_until_redis
from kernel.ratelimit import RateLimited, SlidingWindow
from kernel.redis_client import get_redis, quick_redis
from kernel.threads import DaemonThread
from rag.providers import wire

log = logging.getLogger(__name__)

# The process beacon and the deferred Redis writes live in the kernel (kernel/beacon.py,
# kernel/outages.py); named here too for the callers that knew them here.
__all__ = [
    "ALIVE_TTL",
    "ChatBusy",
    "RateLimited",
    "StopSignal",
    "TurnLock",
    "alive_key",
    "check_rate",
    "defer_until_redis",
]

# A turn that crashed without releasing its lock frees the chat after this long, at the latest:
# a lock whose process is gone is broken at once (`holder_alive`, through the process's beacon).
TURN_LOCK_SECONDS = 600


class ChatBusy(Conflict):
    """A turn is already running in this chat."""

    code = "busy"
    retryable = True


def _key(*parts: object) -> str:
    return ":".join([settings.REDIS_INDEX_PREFIX, "chat", *map(str, parts)])


def check_rate(user_id: int) -> None:
    """Count one message for the user; raise RateLimited when the last window already holds the
    limit (the shared sliding window of kernel/ratelimit.py)."""
    SlidingWindow(
        "chat",
        settings.CHAT_RATE_LIMIT,
        settings.CHAT_RATE_WINDOW_SECONDS,
        _(
            "You have sent {limit} messages in the last {window} seconds, the most allowed. "
            "Try again in {retry_after} seconds."
        ),
    ).hit(user_id)


class TurnLock:
    """Held while a chat's answer is being written, so two tabs cannot interleave turns.

    The lock's value names the process that holds it ("<process id>:<time>"), so a lock left by a
    process that is gone can be broken at once instead of after TURN_LOCK_SECONDS."""

    def __init__(self, session_id: int):
        self.key = _key("turn", session_id)
        self.token = ""

    def acquire(self, stop: StopSignal) -> None:
        """Take the lock and clear the chat's `stop` (a Stop sent before this turn does not stop
        it), and say this process is alive (in case Redis lost its beacon since the last beat): one
        Redis call. Raises ChatBusy, with the Stop left as it was, when a turn holds the lock."""
        process = beacon.ensure(beat=False)
        self.token = f"{process}:{time.time_ns()}"
        keys = [alive_key(process), self.key, stop.key]
        if not get_redis().eval(_ACQUIRE, len(keys), *keys, ALIVE_TTL, self.token, TURN_LOCK_SECONDS):
            raise ChatBusy(_("The assistant is still answering your previous message in this chat. Wait for it."))

    def current(self) -> str | None:
        """The holder's token, or None when the chat is free."""
        value = get_redis().get(self.key)
        return value.decode() if isinstance(value, bytes) else value

    def held(self) -> bool:
        """Whether a live process holds this chat's lock."""
        token = self.current()
        return token is not None and holder_alive(token)

    def break_stale(self, token: str) -> bool:
        """Remove the lock if it still holds `token` (whose holder is gone or whose turn ended)."""
        return bool(get_redis().eval(_COMPARE_AND_DELETE, 1, self.key, token))

    def release(self) -> None:
        """Only the holder releases (compare-and-delete), in case the lock expired and was retaken.
        Never raises: with Redis away the release is done as soon as Redis answers again
        (`defer_until_redis`), so the chat takes the next question then, not after a timeout."""
        try:
            self._release()
        except Exception:  # noqa: BLE001 — see above
            log.warning("Could not release the turn lock %s; releasing it when Redis is back", self.key)
            defer_until_redis(self._release)

    def _release(self) -> None:
        quick_redis().eval(_COMPARE_AND_DELETE, 1, self.key, self.token)


_COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
_ACQUIRE = """
redis.call('set', KEYS[1], '1', 'EX', ARGV[1])
if redis.call('set', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[3]) then
  redis.call('del', KEYS[3])
  return 1
end
return 0
"""


def holder_alive(token: str) -> bool:
    """Whether the process named in a lock token still shows signs of life."""
    process_id, _, _ = token.partition(":")
    return beacon.alive(process_id)


def token_age(token: str) -> float:
    """Seconds since the lock with this token was taken."""
    _, _, stamp = token.partition(":")
    try:
        return time.time() - int(stamp) / 1e9
    except ValueError:
        return float("inf")


STOP_CHECK_SECONDS = 0.2
# After Redis failed to answer a Stop check, it is not asked again for this long: each failed
# attempt may take up to the quick client's timeouts.
STOP_REDIS_PAUSE_SECONDS = 2.0

# The Stop of each turn running in this process, by chat: a Stop that reaches this process (the
# websocket or API call of the student whose turn runs here) stops the turn without Redis, and the
# watcher below sets it for a Stop sent to another process.
_local_stops: weakref.WeakValueDictionary[int, threading.Event] = weakref.WeakValueDictionary()
_local_lock = threading.Lock()


class _StopWatcher:
    """One thread per process asks Redis, every STOP_CHECK_SECONDS, for the Stops of all the turns
    running here, in one call, and sets their signals. A question per turn between its tokens cost
    a Redis round trip per turn five times a second: with 200 chats streaming, an eighth of the
    web process's CPU. Runs while turns do; Redis away only delays a Stop sent through another
    process."""

    def __init__(self) -> None:
        self._thread = DaemonThread("stop-watcher", self._run)

    def ensure_running(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(STOP_CHECK_SECONDS)
            with _local_lock:
                watched = [(chat, event) for chat, event in _local_stops.items() if not event.is_set()]
            if not watched:
                # Checked again under both locks: a turn registering after this starts a new thread.
                with self._thread.lock, _local_lock:
                    if not _local_stops:
                        self._thread.end_locked()
                        return
                continue
            try:
                stops = quick_redis().mget([_key("stop", chat) for chat, _ in watched])
            except redis.RedisError:
                log.info("Stop check could not reach Redis; Stops reach only this process's turns meanwhile")
                time.sleep(STOP_REDIS_PAUSE_SECONDS)
                continue
            found = [event for (_chat, event), stop in zip(watched, stops, strict=True) if stop is not None]
            for event in found:
                event.set()
            if found:
                wire.wake_waiting()  # a turn whose model is silent checks its Stop now


_watcher = _StopWatcher()


class StopSignal:
    """A student's Stop for the turn running in a chat, through Redis so that the process serving
    the student's websocket or API call reaches the turn in whichever process runs it, and through
    this process's memory when both are here (so Stop works while Redis is away)."""

    def __init__(self, session_id: int):
        self.session_id = session_id
        self.key = _key("stop", session_id)
        self._local: threading.Event | None = None

    def watch_here(self) -> None:
        """Make this the signal of the chat's turn running in this process, so a Stop reaching
        this process finds it (`request_here`) and one sent through Redis is seen by the process's
        watcher; forgotten when the turn is."""
        self._local = threading.Event()
        with _local_lock:
            _local_stops[self.session_id] = self._local
        _watcher.ensure_running()

    def forget_here(self) -> None:
        """The turn ended: its signal is watched no longer (the watcher stops with the last one)."""
        with _local_lock:
            if self._local is not None and _local_stops.get(self.session_id) is self._local:
                del _local_stops[self.session_id]

    def request(self) -> None:
        """Stop the chat's running turn: in this process at once, elsewhere through Redis. Raises
        a Redis error only when Redis is away and no turn of this chat runs in this process."""
        here = self.request_here()
        try:
            get_redis().set(self.key, "1", ex=TURN_LOCK_SECONDS)
        except redis.RedisError:
            if not here:
                raise
            log.warning("Stop for chat %s reached its turn in this process; Redis was away", self.session_id)

    def request_here(self) -> bool:
        """Stop the chat's turn if it runs in this process; whether one does."""
        with _local_lock:
            event = _local_stops.get(self.session_id)
        if event is None:
            return False
        event.set()
        wire.wake_waiting()  # a turn whose model is silent checks its Stop now
        return True

    def requested(self) -> bool:
        """Checked between streamed tokens: no Redis call here (the process's watcher makes one
        for all turns), so it costs nothing while Redis is slow or away."""
        return self._local is not None and self._local.is_set()
