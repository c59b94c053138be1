"""A process's cache of values that go stale: each kept for a time to live, then looked up again.

Why not cachetools' TTLCache: its time to live is fixed when the cache is made, and ours come from
settings read at each lookup (`seconds` may be a callable), so a deployment's setting and a test's
change hold without a restart; and a looked-up value of None (a server that did not answer) is
kept like any other. Thread-safe: the web process serves pages on several threads.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TTLCache(Generic[K, V]):
    """Values by key, each fresh for `seconds` (a number, or a callable read at each lookup) after
    it was stored. At most `maxsize` keys: storing another forgets the one stored longest ago."""

    def __init__(self, seconds: float | Callable[[], float], *, maxsize: int = 64) -> None:
        self._seconds = seconds
        self._maxsize = maxsize
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()

    def _ttl(self) -> float:
        return self._seconds() if callable(self._seconds) else self._seconds

    def get(self, key: K) -> V | None:
        """The value stored for `key` while it is fresh, else None."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or time.monotonic() - entry[0] >= self._ttl():
            return None
        return entry[1]

    def peek(self, key: K) -> V | None:
        """The value stored for `key` however old, else None (never looks anything up)."""
        with self._lock:
            entry = self._entries.get(key)
        return entry[1] if entry is not None else None

    def put(self, key: K, value: V, *, at: float | None = None) -> V:
        """Store `value`, fresh from `at` (time.monotonic(); now when not given); returns it."""
        with self._lock:
            self._entries.pop(key, None)
            self._entries[key] = (time.monotonic() if at is None else at, value)
            while len(self._entries) > self._maxsize:
                self._entries.popitem(last=False)
        return value

    def get_or_make(self, key: K, make: Callable[[], V], *, fresh: bool = False) -> V:
        """The fresh value for `key`, or `make()`'s, stored (also when `fresh` asks to skip the
        stored one). `make` runs outside the lock: a slow lookup holds up no other key."""
        with self._lock:
            entry = self._entries.get(key)
        if not fresh and entry is not None and time.monotonic() - entry[0] < self._ttl():
            return entry[1]
        return self.put(key, make())

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
