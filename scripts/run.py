"""`make run`: start Redis Stack (unless REDIS_URL is set), migrate, seed the demo, then the worker
and the web server together; Ctrl-C stops them all.

On its first run it writes `.env` with a generated SECRET_KEY (currechat/settings.py reads it), so
sessions survive restarts and `manage.py` commands work in a plain shell with the same settings.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scripts.redis_stack import RedisStackError, embedded_server  # noqa: E402

PY = sys.executable
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
        )
    print(f"Wrote {path.name} with a new SECRET_KEY.")


def manage(*args: str, env: dict) -> None:
    subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, check=True)


def main() -> int:
    ensure_env_file()
    env = dict(os.environ)
    env.setdefault("DEBUG", "1")
    host = env.get("HOST", "127.0.0.1")
    port = env.get("PORT", "8000")
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

    children: list[subprocess.Popen] = []

    def stop(*_args) -> None:
        for child in children:
            if child.poll() is None:
                child.terminate()
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
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
        children.append(subprocess.Popen(worker, cwd=ROOT, env=env))
        children.append(
            subprocess.Popen(
                [PY, "-m", "daphne", "-b", host, "-p", port, "currechat.asgi:application"], cwd=ROOT, env=env
            )
        )
        print(f"\nCurreChat is running at http://{host}:{port}/  (Ctrl-C stops the web server, worker and Redis)\n")
        # Ctrl-C and SIGTERM both mean "stop everything"; set SIGINT explicitly because a process
        # started in the background of a shell inherits it ignored.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        print("A CurreChat process exited; stopping the others.", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as exc:
        print(f"error: '{' '.join(exc.cmd[1:])}' failed; see the message above.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        stop()


if __name__ == "__main__":
    sys.exit(main())
