"""The background worker class (`settings.RQ["WORKER_CLASS"]`, used by `manage.py rqworker`).

rq forks a fresh work horse for every job, so one file's crash (a PDF that kills its parser)
cannot take the worker down. But whatever a job imports dies with its horse: every file paid
again for importing torch and sentence-transformers, about 4 s on our machines, before it could
embed a single passage. This worker imports them once, before its first fork; each horse inherits
the imported modules and only loads the model's weights (under half a second).

Only imports happen in the parent: no weights are loaded and no model is run there, because torch's
thread pools must not be started in a process that forks afterwards.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from rq import Worker

log = logging.getLogger(__name__)


def preload_modules() -> float | None:
    """Import what the jobs need from the embedding side; the seconds it took, or None if nothing
    is needed (the default embedder runs on a model server)."""
    from rag.providers.local import import_libraries
    from rag.providers.registry import split_name

    if split_name(settings.EMBEDDING_MODEL)[0] != "local":
        return None
    started = time.perf_counter()
    import_libraries()
    return time.perf_counter() - started


def schedule_daily_jobs() -> None:
    """Queue the daily chat purge (retention) unless another worker already has: the run queues
    the next one itself, so the schedule lives in the queue and survives worker restarts."""
    from datetime import timedelta

    from chat.retention import schedule_purge

    if schedule_purge(after=timedelta(minutes=1)):
        log.info("The daily purge of expired chats is scheduled")


class PreloadingWorker(Worker):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        try:
            schedule_daily_jobs()
        except Exception:  # noqa: BLE001  (a worker that cannot schedule still ingests files)
            log.exception("Could not schedule the daily purge of expired chats")
        try:
            seconds = preload_modules()
        except ImportError:  # the horse will raise the same error where a user can see it
            log.exception("Could not import the embedding libraries in the worker")
            return
        if seconds is not None:
            log.info("Embedding libraries imported in %.1f s; every job's process inherits them", seconds)
