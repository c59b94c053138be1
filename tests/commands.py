"""`manage.py` for a live app's tests, set up once: each command runs as `python manage.py <args>` would.

Browser tests prepare their data with `manage.py shell -c` and `create_teacher`, about a hundred
times a run. A new process for each spent 1.6 s of CPU setting Django up (2.2 s for a command
that runs the system checks, which import every URL module) before the command's own work: a
quarter of the browser tests' CPU, on a machine where they keep both cores busy. This process
sets Django up once, with the live app's environment, and then runs each command it is sent in
turn, through Django's own `ManagementUtility`, as a fresh `manage.py` would: its output and exit
code come back; database connections are closed after every command, as at a process's end.

Run as `python -m tests.commands` from the checkout; requests are JSON lines on stdin (the
arguments), answers JSON lines on the descriptor that was stdout at start. The process's own
stdout then points at its stderr, so nothing a command writes at the descriptor level can corrupt
an answer.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import subprocess
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class CommandFailed(AssertionError):
    """A command ended with an exit code other than 0 (its stderr is the message)."""


class Commands:
    """The test side: one runner process with `env`, started when made, its own log lines (Django's
    logging, say) to `log`; `close()` ends it."""

    def __init__(self, env: dict[str, str], log: Any = subprocess.DEVNULL):
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.commands"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )

    def run(self, *args: str, timeout: float = 120) -> str:
        """The command's stdout; `CommandFailed` with its stderr if it exits with anything but 0."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        with self._lock:
            try:
                process.stdin.write(json.dumps(list(args)) + "\n")
                process.stdin.flush()
            except BrokenPipeError:
                raise RuntimeError(f"the command runner ended with {process.wait()}") from None
            ready, _, _ = select.select([process.stdout], [], [], timeout)
            line = process.stdout.readline() if ready else ""
        if not line:
            if ready:  # the end of its output: the runner itself ended
                raise RuntimeError(f"the command runner ended with {process.wait()} during manage.py {args[0]}")
            process.kill()
            raise RuntimeError(f"manage.py {args[0]} gave no answer within {timeout:.0f} s")
        answer = json.loads(line)
        if answer["code"] != 0:
            raise CommandFailed(f"manage.py {args[0]} exited with {answer['code']}:\n{answer['stderr']}")
        return answer["stdout"]

    def close(self) -> None:
        process = self._process
        if process.stdin:
            process.stdin.close()  # the runner ends at end of input
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout:
            process.stdout.close()


def _exit_code(exit: SystemExit) -> int:
    """As the interpreter ends on `exit`: `sys.exit("message")` prints the message and exits 1."""
    if exit.code is None or isinstance(exit.code, int):
        return exit.code or 0
    print(exit.code, file=sys.stderr)
    return 1


def _run(args: list[str]) -> dict[str, Any]:
    from django.core.management import ManagementUtility
    from django.db import connections

    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ManagementUtility(["manage.py", *args]).execute()
        except SystemExit as exit:
            code = _exit_code(exit)
        except Exception:  # noqa: BLE001 — as the interpreter would: the traceback, exit code 1
            traceback.print_exc()
            code = 1
        finally:
            connections.close_all()
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "currechat.settings")  # as manage.py does
    import django

    django.setup()
    for line in sys.stdin:
        answers.write(json.dumps(_run(json.loads(line))) + "\n")
        answers.flush()


if __name__ == "__main__":
    main()
