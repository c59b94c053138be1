"""Load the in-process embedding model when a web process starts, in the background.

Without this the first search after a start (a student's first question) waits several seconds
while the model loads. The load runs on a daemon thread so the server accepts connections at
once; a search that arrives meanwhile waits on the same load instead of starting a second one.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

log = logging.getLogger("currechat.warmup")


def _warm_up() -> None:
    from rag.providers.registry import warm_up_local_embedder

    try:
        seconds = warm_up_local_embedder(settings.EMBEDDING_MODEL)
    except Exception:  # a failed warm-up only means the first search loads the model itself
        log.exception("Could not load the embedding model %s at start", settings.EMBEDDING_MODEL)
        return
    if seconds is not None:
        log.info("Embedding model %s loaded in %.1f s", settings.EMBEDDING_MODEL, seconds)


def start_warm_up() -> threading.Thread | None:
    if not settings.EMBEDDING_WARMUP:
        return None
    thread = threading.Thread(target=_warm_up, name="embedding-warm-up", daemon=True)
    thread.start()
    return thread
