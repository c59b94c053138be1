"""Per-user rate limit and one turn at a time per chat, kept in Redis so every web process agrees."""

from __future__ import annotations

import time

from django.conf import settings

from currechat.errors import Conflict
from currechat.ratelimit import RateLimited, SlidingWindow
from currechat.redis_client import get_redis

__all__ = ["ChatBusy", "RateLimited", "StopSignal", "TurnLock", "check_rate"]

# A turn that crashed without releasing its lock frees the chat after this long.
TURN_LOCK_SECONDS = 600


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
        "You have sent {limit} messages in the last {window} seconds, the most allowed. "
        "Try again in {retry_after} seconds.",
    ).hit(user_id)


class TurnLock:
    """Held while a chat's answer is being written, so two tabs cannot interleave turns."""

    def __init__(self, session_id: int):
        self.key = _key("turn", session_id)
        self.token = f"{time.time_ns()}"

    def acquire(self) -> None:
        if not get_redis().set(self.key, self.token, nx=True, ex=TURN_LOCK_SECONDS):
            raise ChatBusy("The assistant is still answering your previous message in this chat. Wait for it.")

    def held(self) -> bool:
        """Whether any turn holds this chat's lock."""
        return bool(get_redis().exists(self.key))

    def release(self) -> None:
        # Only the holder releases (compare-and-delete), in case the lock expired and was retaken.
        get_redis().eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0",
            1,
            self.key,
            self.token,
        )


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
