"""Per-user rate limit and one turn at a time per chat, kept in Redis so every web process agrees."""

from __future__ import annotations

import time

from django.conf import settings

from currechat.errors import Conflict, CurreChatError
from currechat.redis_client import get_redis

# A turn that crashed without releasing its lock frees the chat after this long.
TURN_LOCK_SECONDS = 600


class RateLimited(CurreChatError):
    status_code = 429

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


def _key(*parts: object) -> str:
    return ":".join([settings.REDIS_INDEX_PREFIX, "chat", *map(str, parts)])


def check_rate(user_id: int) -> None:
    """Count one message for the user in the current window; raise RateLimited past the limit.

    A fixed window (INCR + EXPIRE) is enough here: the limit is a guard against runaway use, not
    billing, and it costs one round trip.
    """
    limit = settings.CHAT_RATE_LIMIT
    if limit <= 0:
        return
    window = settings.CHAT_RATE_WINDOW_SECONDS
    slot = int(time.time()) // window
    key = _key("rate", user_id, slot)
    pipe = get_redis().pipeline()
    pipe.incr(key)
    pipe.expire(key, window + 1)
    count, _ = pipe.execute()
    if count > limit:
        retry_after = window - int(time.time()) % window
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
            raise Conflict("The assistant is still answering your previous message in this chat. Wait for it.")

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
