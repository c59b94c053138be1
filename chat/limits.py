"""Per-user rate limit and one turn at a time per chat, kept in Redis so every web process agrees."""

from __future__ import annotations

import math
import time
import uuid

from django.conf import settings

from currechat.errors import Conflict, CurreChatError
from currechat.redis_client import get_redis

# A turn that crashed without releasing its lock frees the chat after this long.
TURN_LOCK_SECONDS = 600


class ChatBusy(Conflict):
    """A turn is already running in this chat."""

    code = "busy"
    retryable = True


class RateLimited(CurreChatError):
    status_code = 429
    code = "rate_limited"

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def _key(*parts: object) -> str:
    return ":".join([settings.REDIS_INDEX_PREFIX, "chat", *map(str, parts)])


# Sliding window, atomically: drop the timestamps that left the window, then either refuse (and
# say when the oldest message leaves it) or record this one.
_RATE_SCRIPT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
return false
"""


def check_rate(user_id: int) -> None:
    """Count one message for the user; raise RateLimited when the last window already holds the
    limit. The window slides (a sorted set of send times), so the refusal's "in the last N
    seconds" is true at every moment, unlike a fixed window, which lets twice the limit through
    around its boundary. A refused message is not counted. One round trip."""
    limit = settings.CHAT_RATE_LIMIT
    if limit <= 0:
        return
    window = settings.CHAT_RATE_WINDOW_SECONDS
    now = time.time()
    oldest = get_redis().eval(
        _RATE_SCRIPT, 1, _key("rate", user_id), repr(now), window, limit, f"{time.time_ns()}:{uuid.uuid4().hex}"
    )
    if oldest is not None:
        retry_after = max(1, math.ceil(float(oldest) + window - now))
        raise RateLimited(
            f"You have sent {limit} messages in the last {window} seconds, the most allowed. "
            f"Try again in {retry_after} seconds.",
            retry_after=retry_after,
        )


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
