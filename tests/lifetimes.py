"""Nothing a test process starts outlives it, however it ends (SIGTERM, SIGKILL, a crash).

Every test process (the xdist controller and each worker) marks its environment with its own
identity, `CURRECHAT_TEST_OWNER=<pid>:<start time>`, so every process it starts inherits the mark
(Redis Stack, daphne and uvicorn, rq workers, node's IdP, nginx, and PostgreSQL's postmaster even
after pg_ctl has detached it from us). Linux keeps a process's starting environment readable in
/proc/<pid>/environ; a marked process whose owner is gone is a leftover.

Redis and PostgreSQL rewrite their process title over that environment, so every process a test
process starts through subprocess is also written down, with its start time, in a file of its
owner's under var/test-cache/lifetimes/ (PostgreSQL's postmaster, which pg_ctl detaches, is added
by tests/services.py). A process written down that leads a process group takes its group along.

Two things end leftovers:
- a watchdog per test process, this file run as a script in a session of its own, holding the
  read end of a pipe whose write end only the test process holds: when the test process ends in
  any way, the kernel closes the pipe, and the watchdog ends everything of its owner;
- a sweep when any test process starts, for what a watchdog that was killed too left behind.

A parent-death signal (prctl) would not do: it fires when the *thread* that forked ends, and
misses processes that detach themselves (pg_ctl, nginx). Standard library only: the watchdog runs
as a plain script, before and without Django.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

MARK = "CURRECHAT_TEST_OWNER"
REGISTRY = Path(__file__).resolve().parent.parent / "var" / "test-cache" / "lifetimes"
_PROC = Path("/proc")
_watchdog: list[subprocess.Popen] = []


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (with the pid, its identity), or None."""
    stat = _stat(pid)
    return stat[19] if stat else None


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat from field 3 (state) on; None for a process that is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    return text.rsplit(")", 1)[1].split()


def alive(owner: str) -> bool:
    """Whether the test process named by a mark still runs (a killed one may linger as a zombie)."""
    pid, _, started = owner.partition(":")
    return pid.isdigit() and _running(int(pid)) and start_time(int(pid)) == started


def _me() -> str:
    return f"{os.getpid()}:{start_time(os.getpid())}"


def _record(owner: str) -> Path:
    return REGISTRY / f"{owner.replace(':', '-')}.pids"


def register(pid: int) -> None:
    """Write `pid` down as this test process's, to be ended with it."""
    owner = os.environ.get(MARK)
    started = start_time(pid)
    if owner and started and _watchdog:
        with _record(owner).open("a") as record:
            record.write(f"{pid} {started}\n")


def marked() -> dict[int, str]:
    """Every process whose environment carries a mark, with the owner it names."""
    found: dict[int, str] = {}
    needle = f"{MARK}=".encode()
    for entry in _PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or another user's
            continue
        for item in environ.split(b"\0"):
            if item.startswith(needle):
                found[int(entry.name)] = item[len(needle) :].decode(errors="replace")
    return found


def _recorded(owner: str) -> set[int]:
    """The processes written down for `owner` that still run (the same process: same start time),
    and the members of the process groups they lead."""
    try:
        lines = _record(owner).read_text().splitlines()
    except OSError:
        return set()
    pids = {int(pid) for pid, started in (line.split() for line in lines if line) if start_time(int(pid)) == started}
    leaders = {pid for pid in pids if (stat := _stat(pid)) and int(stat[2]) == pid}
    if leaders:
        pids |= {
            int(e.name)
            for e in _PROC.iterdir()
            if e.name.isdigit() and (s := _stat(int(e.name))) and int(s[2]) in leaders
        }
    return pids


def end_orphans(owner: str | None = None, grace: float = 5.0) -> set[int]:
    """End the processes of `owner` (None: of every test process that is gone); the pids ended.

    SIGTERM first, so Redis and PostgreSQL shut down as they do in production; SIGKILL for what
    still runs at the deadline."""
    marks = marked()
    if owner is not None:
        owners = {owner}
    else:
        recorded = {path.stem.replace("-", ":") for path in REGISTRY.glob("*.pids")}
        owners = {mark for mark in {*marks.values(), *recorded} if not alive(mark)}
    targets = {pid for pid, mark in marks.items() if mark in owners}
    for gone in owners:
        targets |= _recorded(gone)
    targets.discard(os.getpid())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while any(_running(pid) for pid in targets) and time.monotonic() < deadline:
            time.sleep(0.05)
    for gone in owners:
        _record(gone).unlink(missing_ok=True)
    return targets


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed child of ours waits for its parent to collect it)."""
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def guard(scratch: Path) -> None:
    """Mark this test process, end the leftovers of test processes that are gone, and start this
    process's watchdog, which also removes the process's `scratch` directory. From here on, every
    process started through subprocess is written down. Once per test process, before any service."""
    if _watchdog:
        return
    me = _me()
    os.environ[MARK] = me
    REGISTRY.mkdir(parents=True, exist_ok=True)
    end_orphans()
    env = {k: v for k, v in os.environ.items() if k != MARK}  # the watchdog must not end itself
    watchdog = subprocess.Popen(
        [sys.executable, __file__, me, str(scratch)], stdin=subprocess.PIPE, env=env, start_new_session=True
    )
    _watchdog.append(watchdog)
    assert watchdog.stdin is not None
    pipe = watchdog.stdin.fileno()
    # A child forked without exec (multiprocessing) would keep the pipe open after we die: in it,
    # the pipe's number points at /dev/null instead, so the number stays valid and the pipe closes.
    os.register_at_fork(after_in_child=lambda: _release(pipe))
    _record_every_child()


def _record_every_child() -> None:
    """Whatever code starts a process in a test process (a fixture, a helper, the app under test),
    subprocess.Popen writes it down."""
    started = subprocess.Popen.__init__

    @functools.wraps(started)
    def start_and_record(self, *args, **kwargs):
        started(self, *args, **kwargs)
        register(self.pid)

    subprocess.Popen.__init__ = start_and_record  # type: ignore[method-assign]


def _release(fd: int) -> None:
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def _watch(owner: str, scratch: str) -> None:
    """The watchdog: wait for the owner's end (end of input), then end what it left."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in the terminal is for the test process
    sys.stdin.buffer.read()
    end_orphans(owner)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    _watch(sys.argv[1], sys.argv[2])
