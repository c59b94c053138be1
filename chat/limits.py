"""Per-user rate limit and one turn at a time per chat, kept in Redis so every web process agrees."""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid

from django.conf import settings
from django.utils.translation import gettext as _

from currechat.errors import Conflict
from currechat.ratelimit import RateLimited, SlidingWindow
from currechat.redis_client import get_redis

log = logging.getLogger(__name__)

__all__ = ["ChatBusy", "RateLimited", "StopSignal", "TurnLock", "check_rate"]

# A turn that crashed without releasing its lock frees the chat after this long, at the latest:
# a lock whose process is gone is broken at once (`TurnLock.holder_alive`).
TURN_LOCK_SECONDS = 600
# Every process that runs turns says it is alive this often; silent for ALIVE_TTL, it is gone.
ALIVE_BEAT_SECONDS = 2.0
ALIVE_TTL = 10


class ChatBusy(Conflict):
    """A turn is already running in this chat."""

    code = "busy"
    retryable = True


def _key(*parts: object) -> str:
    return ":".join([settings.REDIS_INDEX_PREFIX, "chat", *map(str, parts)])


def check_rate(user_id: int) -> None:
    """Count one message for the user; raise RateLimited when the last window already holds the
    limit (the shared sliding window of currechat/ratelimit.py)."""
    SlidingWindow(
        "chat",
        settings.CHAT_RATE_LIMIT,
        settings.CHAT_RATE_WINDOW_SECONDS,
        _(
            "You have sent {limit} messages in the last {window} seconds, the most allowed. "
            "Try again in {retry_after} seconds."
        ),
    ).hit(user_id)


class _ProcessBeacon:
    """This process's sign of life in Redis, so another process can tell a turn lock whose
    holder died (a crash, `kill -9`, a restart) from one whose turn is still being answered. A
    daemon thread refreshes a short-lived key; a new id after a fork (the child is another process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self.id = ""

    def ensure(self) -> str:
        """This process's id, its beacon running (started on first use)."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self.id = os.getpid(), f"{uuid.uuid4().hex[:12]}"
                self._beat()
                threading.Thread(target=self._run, args=(self.id,), name="alive-beacon", daemon=True).start()
            else:
                self._beat()  # a turn starts: say so now, in case Redis lost the key since the last beat
            return self.id

    def is_me(self, process_id: str) -> bool:
        return self._pid == os.getpid() and process_id == self.id

    def _beat(self) -> None:
        get_redis().set(alive_key(self.id), "1", ex=ALIVE_TTL)

    def _run(self, beacon_id: str) -> None:
        while beacon_id == self.id and self._pid == os.getpid():
            time.sleep(ALIVE_BEAT_SECONDS)
            try:
                self._beat()
            except Exception:  # noqa: BLE001 — Redis away: the next beat retries
                log.debug("alive beacon missed a beat", exc_info=True)


def alive_key(process_id: str) -> str:
    return _key("alive", process_id)


_beacon = _ProcessBeacon()


class TurnLock:
    """Held while a chat's answer is being written, so two tabs cannot interleave turns.

    The lock's value names the process that holds it ("<process id>:<time>"), so a lock left by a
    process that is gone can be broken at once instead of after TURN_LOCK_SECONDS."""

    def __init__(self, session_id: int):
        self.key = _key("turn", session_id)
        self.token = ""

    def acquire(self) -> None:
        self.token = f"{_beacon.ensure()}:{time.time_ns()}"
        if not get_redis().set(self.key, self.token, nx=True, ex=TURN_LOCK_SECONDS):
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
        Never raises: with Redis away the lock stays, and the next turn breaks it once it sees the
        reply finished (`chat.agent.fail_orphaned_replies`)."""
        try:
            get_redis().eval(_COMPARE_AND_DELETE, 1, self.key, self.token)
        except Exception:  # noqa: BLE001 — see above
            log.warning("Could not release the turn lock %s", self.key, exc_info=True)


_COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def holder_alive(token: str) -> bool:
    """Whether the process named in a lock token still shows signs of life."""
    process_id, _, _ = token.partition(":")
    if _beacon.is_me(process_id):
        return True
    return bool(process_id) and bool(get_redis().exists(alive_key(process_id)))


def token_age(token: str) -> float:
    """Seconds since the lock with this token was taken."""
    _, _, stamp = token.partition(":")
    try:
        return time.time() - int(stamp) / 1e9
    except ValueError:
        return float("inf")


STOP_CHECK_SECONDS = 0.2


class StopSignal:
    """A student's Stop for the turn running in a chat, through Redis so that the process serving
    the student's websocket or API call reaches the turn in whichever process runs it."""

    def __init__(self, session_id: int):
        self.key = _key("stop", session_id)
        self._checked = 0.0
        self._stopped = False

    def clear(self) -> None:
        """At the start of a turn: a Stop sent before it began does not stop it."""
        get_redis().delete(self.key)

    def request(self) -> None:
        get_redis().set(self.key, "1", ex=TURN_LOCK_SECONDS)

    def requested(self) -> bool:
        """Checked between streamed tokens: asks Redis at most every STOP_CHECK_SECONDS."""
        now = time.monotonic()
        if not self._stopped and now - self._checked >= STOP_CHECK_SECONDS:
            self._checked = now
            self._stopped = bool(get_redis().exists(self.key))
        return self._stopped
