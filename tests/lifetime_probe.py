"""Run only by tests/test_service_lifetimes.py, in a pytest of its own (the name keeps it out of
the suite's collection): start the services tests start, write down their process ids, and wait
to be killed."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import redis

from scripts.redis_stack import free_port
from tests import services
from tests.oidc_op import OpenIdProvider
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parent.parent


async def app(scope, receive, send):
    """The live server's application: the process is what matters here, not what it serves (and a
    production module another change leaves broken must not hide a leak)."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def _answers(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def _rq_workers() -> int:
    return len(redis.Redis.from_url(os.environ["REDIS_URL"]).smembers("rq:workers"))


def test_start_services_and_wait_to_be_killed():
    pids = {"pytest": os.getpid(), "redis": services.redis_server().process.pid}
    if "postgres" in services._state:
        pids["postgres"] = services._state["postgres"].postmaster_pid()
    port = free_port()
    web = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "tests.lifetime_probe:app"], cwd=ROOT
    )
    rq = Path(sys.executable).parent / "rq"
    worker = subprocess.Popen([str(rq), "worker", "--url", os.environ["REDIS_URL"], "probe"], cwd=ROOT)
    pids |= {"daphne": web.pid, "rqworker": worker.pid, "idp": OpenIdProvider().start().process.pid}
    wait_for(lambda: _answers(port) or web.poll() is not None, 120, "daphne to listen")
    wait_for(lambda: _rq_workers() or worker.poll() is not None, 120, "the rq worker to register")
    Path(os.environ["LIFETIME_PROBE_OUT"]).write_text(json.dumps(pids))
    threading.Event().wait(600)  # killed long before; the outer test's deadline fails it otherwise
