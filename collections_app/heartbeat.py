"""The beat of a running ingestion: while a job runs, its file is touched every
INGEST_HEARTBEAT_SECONDS, so that collections_app/liveness.py can tell a live worker from a dead one.
The job's side (collections_app/ingesting.py) beats; liveness judges."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from collections_app.models import FileStatus, SourceFile
from kernel.threads import Periodic

log = logging.getLogger(__name__)


class Heartbeat:
    """While a job runs, touch its file every INGEST_HEARTBEAT_SECONDS from a thread, so a step
    that reports no progress for minutes (one slow VLM page) is not taken for a dead worker, and a
    dead one is noticed within INGEST_STALE_SECONDS. Writes nothing once the attempt is not live."""

    def __init__(self, file_id: int, attempt: int):
        self.file_id, self.attempt = file_id, attempt
        self._thread = Periodic(
            f"heartbeat-{file_id}",
            lambda: settings.INGEST_HEARTBEAT_SECONDS,
            self._beat,
            at_end=lambda: connection.close(),  # the thread's own (looked up on it)
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self._thread.stop(timeout=10)

    def _beat(self) -> bool:
        """Whether the attempt is still live (False ends the beats)."""
        try:
            live = SourceFile.objects.filter(
                pk=self.file_id, attempt=self.attempt, status=FileStatus.PROCESSING
            ).update(updated=timezone.now())
        except Exception:  # noqa: BLE001 — a missed beat is harmless; the next one retries
            log.warning("file %s: heartbeat failed", self.file_id, exc_info=True)
            close_old_connections()
            return True
        return bool(live)
