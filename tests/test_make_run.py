"""`make run`'s script starts Redis Stack, the worker and the web server together, and stops them together."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from scripts.redis_stack import free_port

ROOT = Path(__file__).resolve().parent.parent


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status, response.read().decode()
    except OSError:
        return 0, ""


@pytest.mark.slow
def test_run_script_serves_login_page_and_stops_everything(tmp_path, ollama):
    web_port, redis_port = free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DEBUG", "ALLOW_PLAIN_HTTP")}
    env.update(
        EMBEDDING_WARMUP="1",
        PORT=str(web_port),
        EMBEDDED_REDIS_PORT=str(redis_port),
        CURRECHAT_VAR_DIR=str(tmp_path / "var"),
        CURRECHAT_ENV_FILE=str(tmp_path / ".env"),
    )
    log = open(tmp_path / "run.log", "w+")  # noqa: SIM115 — read after the process ends
    process = subprocess.Popen(
        [sys.executable, "scripts/run.py"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + 120
        status, body = 0, ""
        while time.monotonic() < deadline and process.poll() is None:
            status, body = _get(f"http://127.0.0.1:{web_port}/login/")
            if status == 200:
                break
            time.sleep(0.5)
        log.seek(0)
        output = log.read()
        assert status == 200, output
        assert "Log in" in body and "Service:" in body
        password = (tmp_path / "var" / "redis" / "password").read_text().strip()
        assert password not in output and password not in body, "the Redis password is never printed"
        assert (tmp_path / ".env").exists()
        assert "demo-teacher / " in output and "demo-student / " in output
        assert (tmp_path / "var" / "redis" / "appendonlydir").exists()  # persistence is on
        # The web process loads the embedder at start, not when the first student searches; the
        # worker imports the embedding libraries before it forks, and the forked job that ingests
        # the demo file embeds with them.
        expected = (
            "Embedding model local:all-MiniLM-L6-v2 loaded in",
            "Embedding libraries imported in",
            "rag.ingest.pipeline: file 1 ready:",
        )
        while time.monotonic() < deadline + 90 and not all(line in output for line in expected):
            time.sleep(0.5)
            log.seek(0)
            output = log.read()
        for line in expected:
            assert line in output, output
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    assert _get(f"http://127.0.0.1:{web_port}/login/")[0] == 0
    with __import__("socket").socket() as probe:
        assert probe.connect_ex(("127.0.0.1", redis_port)) != 0  # Redis stopped with the rest


def test_run_script_refuses_a_port_in_use_before_starting_anything(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "DEBUG", "ALLOW_PLAIN_HTTP")}
    with __import__("socket").socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env.update(PORT=str(port), CURRECHAT_VAR_DIR=str(tmp_path / "var"), CURRECHAT_ENV_FILE=str(tmp_path / ".env"))
        done = subprocess.run(
            [sys.executable, "scripts/run.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 1
    assert f"127.0.0.1:{port} is already in use" in done.stderr and "Is CurreChat already running?" in done.stderr
    assert not (tmp_path / "var" / "redis").exists(), "no Redis, worker or web server was started"
    bad = subprocess.run(
        [sys.executable, "scripts/run.py"], cwd=ROOT, env={**env, "PORT": "eighty"}, capture_output=True, text=True
    )
    assert bad.returncode == 1 and "PORT must be a port number" in bad.stderr
