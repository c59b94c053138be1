"""`make run`: start Redis Stack (unless REDIS_URL is set), migrate, seed the demo, then the worker
and the web server together; Ctrl-C stops them all.

A worker or web server that exits (killed, crashed, quit after an outage) is started again, after a
pause that grows while it keeps failing, rather than taking the whole app down.
On its first run it writes `.env` with a generated SECRET_KEY (currechat/settings.py reads it), so
sessions survive restarts and `manage.py` commands work in a plain shell with the same settings.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.redis_stack import RedisStackError, embedded_server  # noqa: E402

PY = sys.executable
RESTART_DELAY_MAX = 30.0
STABLE_SECONDS = 60.0  # a child that ran this long had worked: its next restart is immediate again


class Child:
    """One supervised process, in a process group of its own so that stopping it also stops what
    it started (rq's scheduler process)."""

    def __init__(self, name: str, command: list[str], env: dict):
        self.name, self.command, self.env = name, command, env
        self.process: subprocess.Popen | None = None
        self.started = 0.0
        self.delay = 1.0
        self.restart_at: float | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, cwd=ROOT, env=self.env, start_new_session=True)
        self.started, self.restart_at = time.monotonic(), None

    def check(self) -> None:
        """Restart the process if it exited (after its back-off delay)."""
        now = time.monotonic()
        if self.restart_at is not None:
            if now >= self.restart_at:
                print(f"Starting the {self.name} again.", file=sys.stderr)
                self.start()
            return
        if self.process is None or (code := self.process.poll()) is None:
            return
        self._kill_group(signal.SIGKILL)  # whatever it left behind
        self.delay = 1.0 if now - self.started > STABLE_SECONDS else min(self.delay * 2, RESTART_DELAY_MAX)
        print(f"The {self.name} exited (code {code}); restarting it in {self.delay:.0f} s.", file=sys.stderr)
        self.restart_at = now + self.delay

    def _kill_group(self, sig: int) -> None:
        if self.process is not None:
            try:
                os.killpg(self.process.pid, sig)
            except OSError:  # the group is gone already
                pass

    def stop(self) -> None:
        if self.process is None:
            return
        self._kill_group(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill_group(signal.SIGKILL)
            self.process.wait()


ENV_FILE = Path(os.environ.get("CURRECHAT_ENV_FILE", ROOT / ".env"))


def ensure_env_file(path: Path = ENV_FILE) -> None:
    """Write `path` with a new SECRET_KEY unless it exists (an existing file is never changed)."""
    if path.exists():
        return
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(
            "# Written by `make run`; read by currechat/settings.py (environment variables win).\n"
            "# Keep it secret: whoever has SECRET_KEY can forge sessions.\n"
            f"SECRET_KEY={secrets.token_urlsafe(50)}\n"
            "# This machine serves plain http (make run), so manage.py in a plain shell (DEBUG off) may too.\n"
            "# Where people reach CurreChat over https, remove it: README, Security settings for production.\n"
            "ALLOW_PLAIN_HTTP=1\n"
        )
    print(f"Wrote {path.name} with a new SECRET_KEY.")


def manage(*args: str, env: dict) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, check=True)


def address_problem(host: str, port: str) -> str | None:
    """Why the web server could not listen on host:port, as a sentence; None when it can.

    Checked before anything starts: otherwise a second `make run` would start a second worker on
    the same queue and restart a web server that can never listen, over and over."""
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"PORT must be a port number from 1 to 65535, not '{port}'."
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, int(port)))
        except OSError as exc:
            return (
                f"{host}:{port} is already in use ({exc.strerror}). Is CurreChat already running? "
                f"Stop it, or start this one on another port: PORT={int(port) + 1} make run"
            )
    return None


def main() -> int:
    ensure_env_file()
    env = dict(os.environ)
    env.setdefault("DEBUG", "1")
    host = env.get("HOST", "127.0.0.1")
    port = env.get("PORT", "8000")
    problem = address_problem(host, port)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    redis_server = None
    if "REDIS_URL" not in env:
        redis_server = embedded_server()
        if redis_server.ping():
            print(f"Reusing the Redis Stack already running on 127.0.0.1:{redis_server.port}")
            url = redis_server.url
            redis_server = None
        else:
            try:
                redis_server.start()
            except RedisStackError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            print(f"Redis Stack started on 127.0.0.1:{redis_server.port} (data and password in var/redis)")
            url = redis_server.url
        env["REDIS_URL"] = url  # carries the generated password: never printed

    children: list[Child] = []

    def stop(*_args) -> None:
        for child in children:
            child.stop()
        if redis_server is not None:
            redis_server.stop()
            print("Redis Stack stopped.")

    try:
        manage("check_services", env=env)
        manage("migrate", "--noinput", env=env)
        manage("seed_demo", env=env)
        worker = [
            PY,
            "manage.py",
            "rqworker",
            "--job-class",
            "django_tasks_rq.Job",
            "--with-scheduler",
            "default",
            "ingest",
        ]
        web = [PY, "-m", "daphne", "-b", host, "-p", port, "currechat.asgi:application"]
        children.extend([Child("worker", worker, env), Child("web server", web, env)])
        for child in children:
            child.start()
        print(f"\nCurreChat is running at http://{host}:{port}/  (Ctrl-C stops the web server, worker and Redis)\n")
        # Ctrl-C and SIGTERM both mean "stop everything"; set SIGINT explicitly because a process
        # started in the background of a shell inherits it ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        while True:
            time.sleep(0.5)
            for child in children:
                child.check()
    except subprocess.CalledProcessError as exc:
        print(f"error: '{' '.join(exc.cmd[1:])}' failed; see the message above.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
