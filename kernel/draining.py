"""A web process's shutdown: stop taking new chat turns, let the running ones finish, give up on the rest.

    serving    → begin()   on SIGTERM (currechat/probes.py hooks the ASGI server's handler), or when
                            the server starts its lifespan shutdown: readiness answers "draining" and
                            new turns are refused with a sentence to send again (the browser's socket
                            is closed by the server meanwhile and reconnects to another process);
    draining   → abandon() when CHAT_DRAIN_SECONDS have passed with turns still running: each of them
                            ends at its next streamed event, stored as after a crash (its text kept,
                            failed with "The server stopped before this answer was finished"), so the
                            student can retry it on another process.

Kept per process in plain memory (no Redis, no database): it must work while those are away. The
module knows no app: chat turns say they run with `running_turn()` and ask `abandoned()`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_changed = threading.Condition()
_state = "serving"
_running = 0


def begin() -> None:
    """Stop taking new turns (idempotent; never undone in a process's life)."""
    global _state
    with _changed:
        if _state == "serving":
            _state = "draining"
        _changed.notify_all()


def abandon() -> None:
    """Tell running turns to end now, as a crash would have ended them."""
    global _state
    with _changed:
        _state = "abandoning"
        _changed.notify_all()


def draining() -> bool:
    return _state != "serving"


def abandoned() -> bool:
    return _state == "abandoning"


def running() -> int:
    """Turns running in this process now."""
    return _running


@contextmanager
def running_turn() -> Iterator[None]:
    """Counts a turn as running while the block runs (any thread)."""
    global _running
    with _changed:
        _running += 1
    try:
        yield
    finally:
        with _changed:
            _running -= 1
            _changed.notify_all()


def wait_for_turns(timeout: float) -> int:
    """Block until no turn runs or `timeout` seconds have passed; the number still running."""
    deadline = time.monotonic() + timeout
    with _changed:
        while _running and (left := deadline - time.monotonic()) > 0:
            _changed.wait(left)
        return _running


def reset_for_tests() -> None:
    """Back to serving (a test process drains and serves again; a real one never does)."""
    global _state
    with _changed:
        _state = "serving"
