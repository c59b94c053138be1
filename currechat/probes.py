"""Liveness and readiness for load balancers and process managers, and the web process's shutdown.

An ASGI wrapper around the whole application, so probes cost no middleware, no session, no host
check (a load balancer asks by address, not by the site's name) and no HTTPS redirect:

    GET /healthz   200 {"status": "alive"}: the process answers (also while it drains: a process
                   manager must not kill a process that is finishing answers)
    GET /readyz    200 {"status": "ready"}: the database, Redis and the task queue answer;
                   503 {"status": "draining"} once shutdown began; 503 {"status": "unavailable",
                   "failing": ["database" | "redis" | "queue", ...]} otherwise. Answered from the
                   last check for READY_CACHE_SECONDS, so probes cannot drive the checks.

Unauthenticated, so nothing internal is in them: no address, version, count or error text (those
are for teachers and staff at /api/v1/health and in the logs). nginx answers them only to the load
balancer and loopback (deploy/nginx/currechat.conf); the cache bounds their cost for any other path.

The ASGI lifespan is answered here too (channels' router has none): on shutdown the process stops
taking new turns and waits up to CHAT_DRAIN_SECONDS for the running ones (kernel/draining.py).
uvicorn closes every websocket with 1012 (service restart) before that, and the page reconnects
through the proxy to another process, which shows the answer as this one stores it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
import time
from typing import Any

from django.conf import settings

from kernel import draining, threads
from kernel.ttlcache import TTLCache
from rag.providers import wire

log = logging.getLogger(__name__)

LIVE_PATH, READY_PATH = "/healthz", "/readyz"
# A readiness check that takes longer than this counts as failing: a load balancer must learn
# quickly that a process cannot reach its database, not time out itself.
READY_TIMEOUT_SECONDS = 3.0
# After CHAT_DRAIN_SECONDS, turns told to give up end at their next event; one waiting on a silent
# model server cannot, and the process exits without it after this long (as a crash would).
ABANDON_GRACE_SECONDS = 5.0

# The checks run here, not on the chat-turn pool: a process busy with 200 turns still answers probes.
_probe_pool = threads.pool("probe", 2)


def _check_database() -> bool:
    from django.db import close_old_connections, connection

    close_old_connections()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except Exception:  # noqa: BLE001 — any failure means "not ready"; the detail goes to the log
        log.warning("Readiness: the database does not answer", exc_info=True)
        return False
    finally:
        close_old_connections()


def _check_redis() -> bool:
    from kernel.redis_client import get_redis

    try:
        return bool(get_redis().ping())
    except Exception:  # noqa: BLE001
        log.warning("Readiness: Redis does not answer", exc_info=True)
        return False


def _check_queue() -> bool:
    """Every task queue's Redis answers (they may live on another server than the index)."""
    import django_rq

    for name in settings.TASK_QUEUES:
        # django_rq makes a new client (and connection pool) per call: closed here, not left to GC.
        connection = django_rq.get_connection(name)
        try:
            connection.ping()
        except Exception:  # noqa: BLE001
            log.warning("Readiness: the task queue %s does not answer", name, exc_info=True)
            return False
        finally:
            connection.close()
    return True


CHECKS = {"database": _check_database, "redis": _check_redis, "queue": _check_queue}


# The last readiness answer and the check under way, shared by every probe of this process: a
# flood of probes waits for one check instead of starting one each.
_recent: TTLCache[str, tuple[int, dict[str, Any]]] = TTLCache(lambda: settings.READY_CACHE_SECONDS, maxsize=1)
_checking: asyncio.Task | None = None


async def readiness() -> tuple[int, dict[str, Any]]:
    """(status code, body) of /readyz: from the last check while it is under READY_CACHE_SECONDS old
    (anyone may ask, so asking must not cost a round of checks each time); draining at once."""
    global _checking
    if draining.draining():
        return 503, {"status": "draining"}
    if (recent := _recent.get("ready")) is not None:
        return recent
    loop = asyncio.get_running_loop()
    if _checking is None or _checking.done() or _checking.get_loop() is not loop:
        _checking = loop.create_task(_check_all())
    # Shielded: a prober that hangs up must not cancel the check the others wait for.
    return await asyncio.shield(_checking)


async def _check_all() -> tuple[int, dict[str, Any]]:
    started = time.monotonic()
    answer = await _run_checks()
    return _recent.put("ready", answer, at=started)  # as old as the check's start


async def _run_checks() -> tuple[int, dict[str, Any]]:
    loop = asyncio.get_running_loop()
    names = list(CHECKS)
    futures = [loop.run_in_executor(_probe_pool, CHECKS[name]) for name in names]
    try:
        results = await asyncio.wait_for(asyncio.gather(*futures), READY_TIMEOUT_SECONDS)
    except TimeoutError:
        slow = [name for name, future in zip(names, futures, strict=True) if not future.done()]
        return 503, {"status": "unavailable", "failing": slow}
    failing = [name for name, ok in zip(names, results, strict=True) if not ok]
    if failing:
        return 503, {"status": "unavailable", "failing": failing}
    return 200, {"status": "ready"}


def forget_for_tests() -> None:
    """The next probe checks again (each test sees the services as they are then)."""
    global _checking
    _recent.clear()
    _checking = None


async def _respond(send, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _hook_sigterm() -> None:
    """Drain from the moment SIGTERM arrives, then let the server handle it as it would: readiness
    fails before the server has closed its connections. Only the main thread may set handlers."""
    if threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)

    def on_sigterm(signum, frame):
        draining.begin()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_sigterm)


async def drain() -> None:
    """Stop taking turns; wait for the running ones; give up on those left after CHAT_DRAIN_SECONDS."""
    draining.begin()
    running = draining.running()
    if running:
        log.info("Shutting down: waiting up to %ss for %s chat answers", settings.CHAT_DRAIN_SECONDS, running)
    left = await asyncio.to_thread(draining.wait_for_turns, settings.CHAT_DRAIN_SECONDS)
    if not left:
        return
    log.warning(
        "Shutting down: %s chat answers still running after %ss; ending them",
        left,
        settings.CHAT_DRAIN_SECONDS,
    )
    draining.abandon()
    wire.wake_waiting()  # answers whose model is silent end now too, not at their next token
    left = await asyncio.to_thread(draining.wait_for_turns, ABANDON_GRACE_SECONDS)
    if left:
        # Their threads wait on a silent model server; Python would wait for them at exit. What
        # they streamed is stored (every second), and another process fails them as after a crash.
        log.error("Shutting down: %s chat answers did not end; exiting without them", left)
        logging.shutdown()
        os._exit(0)


class Probes:
    """The application with /healthz, /readyz and the lifespan in front of it."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind == "http" and scope["path"] in (LIVE_PATH, READY_PATH):
            if scope["path"] == LIVE_PATH:
                await _respond(send, 200, {"status": "alive"})
            else:
                await _respond(send, *(await readiness()))
            return
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        await self.app(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _hook_sigterm()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await drain()
                await send({"type": "lifespan.shutdown.complete"})
                return
