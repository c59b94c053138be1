"""Launch state shared by every web process: nonces, states and launch data live in Redis.

PyLTI1p3 only checks that a nonce was issued; `consume_nonce` makes each one single-use, so a
captured id_token cannot be posted a second time.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from pylti1p3.launch_data_storage.base import LaunchDataStorage

from kernel.redis_client import get_redis

NONCE_KEY = "lti1p3-nonce-"  # how the library's SessionService names a nonce (prefix + nonce)


def _key(name: str) -> str:
    return f"{settings.REDIS_INDEX_PREFIX}:lti:{name}"


class RedisLaunchStorage(LaunchDataStorage[Any]):
    """Values are the library's own plain data (dicts, strings, booleans), stored as JSON with an expiry."""

    def get_session_cookie_name(self) -> str | None:
        # Not tied to a browser session: the state cookie (set at login) ties a launch to its browser,
        # and a session cookie would be one more cookie that third-party-cookie blocking can drop.
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        raw = get_redis().get(_key(self._prepare_key(key)))
        return json.loads(raw) if raw is not None else None

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        get_redis().set(_key(self._prepare_key(key)), json.dumps(value), ex=exp or settings.LTI_LAUNCH_TTL_SECONDS)

    def check_value(self, key: str) -> bool:
        return bool(get_redis().exists(_key(self._prepare_key(key))))


def consume_nonce(nonce: str) -> bool:
    """Remove an issued nonce; True only for the first caller (DEL is atomic across processes)."""
    storage = RedisLaunchStorage()
    return bool(get_redis().delete(_key(storage._prepare_key(NONCE_KEY + nonce))))
