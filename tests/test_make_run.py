"""`make run`'s script starts Redis Stack, the worker and the web server together, and stops them together."""

from __future__ import annotations

import os
import shutil
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
@pytest.mark.database  # `make run` migrates and serves the database of DATABASE_URL, when there is one
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
        assert "Log in" in body
        # The service answers its health check (a visitor sees the status band only when degraded:
        # while the worker imports its libraries it already counts as running, busy).
        health_status, health = _get(f"http://127.0.0.1:{web_port}/api/v1/health")
        assert health_status == 200 and '"status"' in health
        password = (tmp_path / "var" / "redis" / "password").read_text().strip()
        assert password not in output and password not in body, "the Redis password is never printed"
        assert (tmp_path / ".env").exists()
        assert "demo-teacher / " in output and "demo-student / " in output
        assert (tmp_path / "var" / "redis" / "appendonlydir").exists()  # persistence is on
        # The web process loads the embedder at start, not when the first student searches; the
        # worker loads it before it forks, and the forked job that ingests the demo file embeds with it.
        expected = (
            "Embedding model local:all-MiniLM-L6-v2 loaded in",
            "The worker loaded the embedding model local:all-MiniLM-L6-v2 in",
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
    # The refusal names who holds the port (here this test's own process) and how to stop it.
    assert f"127.0.0.1:{port} is already in use by process {os.getpid()} (" in done.stderr
    assert f"Stop it with `kill {os.getpid()}`, or start this one on another port: PORT={port + 1}" in done.stderr
    assert not (tmp_path / "var" / "redis").exists(), "no Redis, worker or web server was started"
    bad = subprocess.run(
        [sys.executable, "scripts/run.py"], cwd=ROOT, env={**env, "PORT": "eighty"}, capture_output=True, text=True
    )
    assert bad.returncode == 1 and "PORT must be a port number" in bad.stderr


# --- Killed hard, run again, tested in the same tree -------------------------------------------------

# Variables the test session set for itself: a developer's shell has none of them.
SESSION_ONLY = (
    "REDIS_URL",
    "SECRET_KEY",
    "DEBUG",
    "CURRECHAT_VAR_DIR",
    "CURRECHAT_ENV_FILE",
    "MEDIA_ROOT",
    "REDIS_INDEX_PREFIX",
    "DATABASE_URL",
    "HEALTH_CACHE_SECONDS",
    "ALLOWED_HOSTS",
    "SECURE_COOKIES",
    "DJANGO_SETTINGS_MODULE",
    "PYTEST_XDIST_WORKER",
    "PYTEST_XDIST_WORKER_COUNT",
    "PYTEST_CURRENT_TEST",
)


def checkout_copy(target: Path) -> Path:
    """The project's files in `target`, as a fresh checkout has them (no var/, no .env), plus the
    compiled catalogues and the OpenSSL 1.1 the bundled Redis needs (a tool cache, linked)."""
    ignore = shutil.ignore_patterns(
        ".git", ".venv", "node_modules", "var", ".env", "artifacts", "__pycache__", "*_cache"
    )
    shutil.copytree(ROOT, target, ignore=ignore, symlinks=True)
    libssl = ROOT / "var" / "libssl1.1"
    if libssl.exists():
        (target / "var").mkdir()
        (target / "var" / "libssl1.1").symlink_to(libssl.resolve())
    return target


def descendants(pid: int) -> set[int]:
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            parents.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead
    except OSError:
        return False


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class MakeRun:
    """`make run`'s script in a tree of its own, on free ports."""

    def __init__(self, tree: Path, env: dict):
        self.tree, self.env = tree, env
        self.web = f"http://127.0.0.1:{env['PORT']}"
        self.process: subprocess.Popen | None = None
        self.runs = 0

    def start(self) -> subprocess.Popen:
        self.runs += 1
        self.log = self.tree / f"run{self.runs}.log"
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [sys.executable, "scripts/run.py"], cwd=self.tree, env=self.env, stdout=log, stderr=subprocess.STDOUT
            )
        return self.process

    def output(self) -> str:
        return self.log.read_text()

    def wait_until_serving(self) -> set[int]:
        """Wait for the login page and for the web server, the worker (with its scheduler) and Redis
        to run; their process ids."""
        assert self.process is not None
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and self.process.poll() is None:
            tree = descendants(self.process.pid)
            commands = " ".join(command_of(pid) for pid in tree)
            started = all(part in commands for part in ("uvicorn", "rqworker", "redis-server"))
            if started and len(tree) >= 4 and _get(f"{self.web}/login/")[0] == 200:  # 4: and the scheduler
                return tree
            time.sleep(0.5)
        pytest.fail(f"make run did not start:\n{self.output()}")


@pytest.mark.slow
def test_make_run_killed_hard_leaves_nothing_behind_and_the_tests_pass_in_its_tree(tmp_path, ollama):
    tree = checkout_copy(tmp_path / "checkout")
    env = {k: v for k, v in os.environ.items() if k not in SESSION_ONLY}
    env.update(
        PORT=str(free_port()),
        EMBEDDED_REDIS_PORT=str(free_port()),
        EMBEDDING_MODEL="ollama:snowflake-arctic-embed2",  # the demo file's passages: quick, from the test server
        EMBEDDING_WARMUP="0",
    )
    run = MakeRun(tree, env)
    run.start()
    first = run.wait_until_serving()

    # A second `make run` while the first serves is refused, naming the web server and how to stop it.
    web_pid = next(pid for pid in first if "uvicorn" in command_of(pid))
    again = subprocess.run(
        [sys.executable, "scripts/run.py"], cwd=tree, env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 1
    assert f"is already in use by process {web_pid} (" in again.stderr, again.stderr
    assert f"a CurreChat web server (left running by an earlier `make run`?). Stop it with `kill {web_pid}`" in (
        again.stderr
    )

    # SIGKILL: the script has no chance to stop anything; Linux tells its children.
    assert run.process is not None
    run.process.kill()
    run.process.wait()
    killed_at = time.monotonic()
    deadline = killed_at + 30
    while any(alive(pid) for pid in first) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = {pid: command_of(pid) for pid in first if alive(pid)}
    assert not left, f"still running after make run was killed: {left}"
    print(f"every process of make run gone {time.monotonic() - killed_at:.1f} s after its SIGKILL")
    assert _get(f"{run.web}/login/")[0] == 0

    # `make test` in the same tree reads neither the .env `make run` wrote nor its var/.
    assert "SECRET_KEY=" in (tree / ".env").read_text()
    settings_test = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/test_settings_env.py", "-q", "-k", "secret_key"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert settings_test.returncode == 0, settings_test.stdout + settings_test.stderr
    assert "1 passed" in settings_test.stdout

    # Nothing stale: the next `make run` starts, and Ctrl-C stops all of it.
    run.start()
    second = run.wait_until_serving()
    run.process.send_signal(signal.SIGINT)
    assert run.process.wait(timeout=120) == 0, run.output()
    assert not [pid for pid in second if alive(pid)], run.output()
