"""Processes that die with the process that started them (Linux's parent-death signal).

`make run` (scripts/run.py) ties the web server, the worker and the bundled Redis to itself, and
the worker ties its job processes and rq's scheduler to itself: whatever ends the parent (SIGKILL,
the out-of-memory killer, a crash), nothing of ours lives on holding a port, a queue or a lock.

Standard library only: scripts/run.py imports this before any Django settings exist, and
`preexec` runs in a forked child before it execs.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1
_libc: ctypes.CDLL | None = None


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, loaded once in the parent (a forked child should not have to dlopen)."""
    global _libc
    if not sys.platform.startswith("linux"):
        return None
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None, use_errno=True)
        except OSError:
            return None
    return getattr(_libc, "prctl", None)


def die_with_parent(sig: int = signal.SIGKILL, *, parent: int | None = None) -> bool:
    """Ask Linux to send `sig` to this process when the thread that started it ends.

    `parent`: the pid that started this process, when known. If it died before we asked (a race
    the signal itself cannot cover), `sig` is sent now. False where Linux cannot do it."""
    prctl = _prctl()
    if prctl is None or prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
        return False
    if parent is not None and os.getppid() != parent:
        os.kill(os.getpid(), sig)
    return True


def preexec(sig: int = signal.SIGKILL) -> Callable[[], None]:
    """A `preexec_fn` for subprocess.Popen that ties the child to this process (started from this
    thread: Linux watches the thread that forked, so call Popen from the thread that lives longest)."""
    _prctl()  # loaded here, in the parent
    parent = os.getpid()

    def tie() -> None:
        die_with_parent(sig, parent=parent)

    return tie
