"""`make run`: start Redis Stack (unless REDIS_URL is set), migrate, seed the demo, then the worker
and the web server together; Ctrl-C stops them all.

A worker or web server that exits (killed, crashed, quit after an outage) is started again, after a
pause that grows while it keeps failing, rather than taking the whole app down. Everything it starts
dies with it, however it ends (Ctrl-C, SIGTERM, a closed terminal, SIGKILL, the out-of-memory
killer): Linux sends each child a signal when this process is gone (`currechat.lifeline`), so the
next `make run` finds no web server holding the port and no worker taking jobs.
On its first run it writes `.env` with a generated SECRET_KEY (currechat/settings/ reads it), so
sessions survive restarts and `manage.py` commands work in a plain shell with the same settings.
"""

from __future__ import annotations

import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from currechat import lifeline  # noqa: E402
from scripts.redis_stack import RedisStackError, embedded_server  # noqa: E402

PY = sys.executable
# The web server as production runs it (docs/DEPLOY.md): its command line is read from here.
WEB_UNIT = ROOT / "deploy" / "systemd" / "currechat-web@.service"
RESTART_DELAY_MAX = 30.0
STABLE_SECONDS = 60.0  # a child that ran this long had worked: its next restart is immediate again
# The worker as the README and deployments start it (tests start it the same way).
WORKER = [PY, "manage.py", "rqworker", "--job-class", "django_tasks_rq.Job", "--with-scheduler", "default", "ingest"]


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
        # SIGKILL when this script is gone: the supervisor that would stop them gently is not there,
        # and a worker asked to stop gently finishes its job first (minutes). Its job process and
        # rq's scheduler die with it (currechat/worker.py); a file it was reading is failed, with a
        # Retry, by the next worker (INGEST_STALE_SECONDS).
        self.process = subprocess.Popen(
            self.command,
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
            preexec_fn=lifeline.preexec(signal.SIGKILL),
        )
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

    def terminate(self) -> None:
        self._kill_group(signal.SIGTERM)

    def stop(self, deadline: float) -> None:
        """Wait for it to end after `terminate` until `deadline` (monotonic), then kill it."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=max(deadline - time.monotonic(), 0.1))
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
            "# Written by `make run`; read by currechat/settings/ (environment variables win).\n"
            "# Keep it secret: whoever has SECRET_KEY can forge sessions.\n"
            f"SECRET_KEY={secrets.token_urlsafe(50)}\n"
            "# This machine serves plain http (make run), so manage.py in a plain shell (DEBUG off) may too.\n"
            "# Where people reach CurreChat over https, remove it: README, Security settings for production.\n"
            "ALLOW_PLAIN_HTTP=1\n"
        )
    print(f"Wrote {path.name} with a new SECRET_KEY.")


def web_command(host: str, port: str, unit: Path = WEB_UNIT) -> list[str]:
    """The production web process's command (the unit's ExecStart: uvicorn with its event loop,
    HTTP and websocket implementations, lifespan and keep-alive) on `host`:`port`, run by this
    Python. One home for those options: daphne, which `make run` used before, cost 15-35% more CPU
    per streamed token, and has no lifespan to drain running answers when stopped."""
    text = unit.read_text().replace("\\\n", " ")
    line = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    _server, *options = shlex.split(line.removeprefix("ExecStart="))
    values = {"--host": host, "--port": port}
    for i, option in enumerate(options[:-1]):
        if option in values:
            options[i + 1] = values[option]
    return [PY, "-m", "uvicorn", *options]


def manage(*args: str, env: dict) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, check=True, preexec_fn=lifeline.preexec())


def listeners(port: int) -> list[tuple[int, str]]:
    """The processes listening on TCP `port` (on any address) as (pid, command line), from /proc:
    those Linux lets this user see (all of them for root)."""
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # 0A: LISTEN
                sockets.add(f"socket:[{fields[9]}]")
    found: list[tuple[int, str]] = []
    for proc in Path("/proc").iterdir() if sockets else ():
        if not proc.name.isdigit():
            continue
        try:
            if any(os.readlink(fd) in sockets for fd in (proc / "fd").iterdir()):
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                found.append((int(proc.name), command))
        except OSError:  # gone meanwhile, or not ours to look at
            continue
    return found


# What a command line of ours looks like, and what to call it in a sentence.
OURS = {"currechat.asgi": "a CurreChat web server", "rqworker": "a CurreChat worker", "redis-server": "a Redis server"}


def holder(port: int) -> str:
    """Who holds `port`, as the middle of a sentence (" by process 123 (python -m uvicorn …), a CurreChat web
    server …. Stop it with `kill 123`"), or "" when Linux does not tell us."""
    found = listeners(port)
    if not found:
        return ""
    pid, command = found[0]
    command = " ".join(command.split())
    shown = command if len(command) <= 100 else command[:99] + "…"
    ours = next((name for marker, name in OURS.items() if marker in command), None)
    what = f", {ours} (left running by an earlier `make run`?)" if ours else ""
    return f" by process {pid} ({shown}){what}. Stop it with `kill {pid}`"


def address_problem(host: str, port: str, variable: str = "PORT") -> str | None:
    """Why a server of ours could not listen on host:port, as a sentence; None when it can.

    Checked before anything starts: otherwise a second `make run` would start a second worker on
    the same queue and restart a web server that can never listen, over and over."""
    if not port.isdigit() or not 0 < int(port) < 65536:
        return f"{variable} must be a port number from 1 to 65535, not '{port}'."
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, int(port)))
        except OSError as exc:
            by = holder(int(port))
            advice = by if by else f" ({exc.strerror}). Is CurreChat already running? Stop it"
            return (
                f"{host}:{port} is already in use{advice}, "
                f"or start this one on another port: {variable}={int(port) + 1} make run"
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
        redis_server.die_with_parent = signal.SIGTERM  # it saves its data on the way out
        if redis_server.ping():
            print(f"Reusing the Redis Stack already running on 127.0.0.1:{redis_server.port}")
            url = redis_server.url
            redis_server = None
        elif problem := address_problem("127.0.0.1", str(redis_server.port), "EMBEDDED_REDIS_PORT"):
            print(f"error: {problem}", file=sys.stderr)
            return 1
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
        # All at once, so stopping takes as long as the slowest (a worker in a job), not the sum.
        for child in children:
            child.terminate()
        deadline = time.monotonic() + 10
        for child in children:
            child.stop(deadline)
        if redis_server is not None:
            redis_server.stop()
            print("Redis Stack stopped.")

    try:
        manage("check_services", env=env)
        manage("migrate", "--noinput", env=env)
        manage("seed_demo", env=env)
        children.extend([Child("worker", WORKER, env), Child("web server", web_command(host, port), env)])
        for child in children:
            child.start()
        print(f"\nCurreChat is running at http://{host}:{port}/  (Ctrl-C stops the web server, worker and Redis)\n")
        # Ctrl-C and SIGTERM both mean "stop everything"; set SIGINT explicitly because a process
        # started in the background of a shell inherits it ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # A closed terminal (SIGHUP) too: its children are in sessions of their own and would not hear it.
        for stop_signal in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(stop_signal, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
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
