"""This process's sign of life in Redis, so another process can tell a lock whose holder died (a
crash, `kill -9`, a restart) from one whose work is still going on (the chat's turn lock,
chat.turn.limits.TurnLock). A daemon thread refreshes a short-lived key; a forked child is another
process and gets an id of its own."""

from __future__ import annotations

import logging
import os
import threading
import uuid

from django.conf import settings

from kernel.redis_client import get_redis
from kernel.threads import Periodic

log = logging.getLogger(__name__)

# Every process that holds such locks says it is alive this often; silent for ALIVE_TTL, it is gone.
ALIVE_BEAT_SECONDS = 2.0
ALIVE_TTL = 10


def alive_key(process_id: str) -> str:
    # Named under "chat" as when only the chat's turns used it: processes of the previous release
    # and this one read each other's beacons during a rolling restart.
    return f"{settings.REDIS_INDEX_PREFIX}:chat:alive:{process_id}"


class ProcessBeacon:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self.id = ""
        self._thread = Periodic("alive-beacon", ALIVE_BEAT_SECONDS, self._beat_quietly)
        os.register_at_fork(after_in_child=self._forked)

    def ensure(self, *, beat: bool = True) -> str:
        """This process's id, its beacon running (started on first use). `beat=False`: the caller
        sets `alive_key(id)` itself now, with the lock it takes (one Redis call, not two)."""
        with self._lock:
            if self._pid != os.getpid():
                self._pid, self.id = os.getpid(), f"{uuid.uuid4().hex[:12]}"
            if beat:
                self._beat()  # a lock is taken: say so now, in case Redis lost the key since the last beat
            self._thread.start()
            return self.id

    def is_me(self, process_id: str) -> bool:
        return self._pid == os.getpid() and process_id == self.id

    def alive(self, process_id: str) -> bool:
        """Whether the process of this id still shows signs of life."""
        if self.is_me(process_id):
            return True
        return bool(process_id) and bool(get_redis().exists(alive_key(process_id)))

    def _beat(self) -> None:
        get_redis().set(alive_key(self.id), "1", ex=ALIVE_TTL)

    def _beat_quietly(self) -> None:
        try:
            self._beat()
        except Exception:  # noqa: BLE001 — Redis away: the next beat retries
            log.debug("alive beacon missed a beat", exc_info=True)

    def _forked(self) -> None:
        self._lock = threading.Lock()  # a thread of the parent's may have held it


beacon = ProcessBeacon()
