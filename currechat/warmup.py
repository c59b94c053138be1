"""What a web process loads when it starts, before its first request needs it.

The model providers' client libraries (`registry.import_providers`), at once: imported by the first page
or chat that asks for a model, they held the interpreter for about a second, and every answer the
process was streaming stood still meanwhile (a web process restarted in a rolling restart takes
chats at once). About a second more before the process listens.

The thread count of in-process models (`rag.providers.threads`), before torch is imported.

The in-process embedding model (`start_warm_up`), in the background: without it the first search
after a start (a student's first question) waits several seconds while the model loads. The load
runs on a daemon thread so the server accepts connections at once; a search that arrives
meanwhile waits on the same load instead of starting a second one.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from kernel.threads import spawn

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


def at_start() -> None:
    """Called as the ASGI application is imported, before the server listens."""
    from rag.providers import threads
    from rag.providers.registry import import_providers

    # Before torch is imported: each search embeds its question on EMBED_QUERY_THREADS (1), so the
    # process's searches run side by side instead of their threads waiting on each other.
    threads.use(threads.for_queries())
    import_providers()
    start_warm_up()


def start_warm_up() -> threading.Thread | None:
    if not settings.EMBEDDING_WARMUP:
        return None
    # Named for what it starts: torch's compute threads, started by the first embedding, inherit the
    # OS name of the thread that started them, so `top -H` shows them as "embedder" too.
    return spawn("embedder", _warm_up)
