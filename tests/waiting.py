"""Waiting on an event in another process or thread: poll until it shows, fail by a deadline.

The timeout is a budget for a loaded machine, never a measurement: a test that passes returns as
soon as the event shows. One helper for the suite (it was copied into eight test files).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(
    check: Callable[[], T],
    timeout: float,
    what: str,
    log: Callable[[], str] | Path | None = None,
    *,
    interval: float = 0.05,
) -> T:
    """Poll `check` until it returns something true, and return that. After `timeout` seconds,
    fail naming `what`, followed by the end of `log` (a file, or a function giving text) if given."""
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}{_tail(log)}")
        time.sleep(interval)
    return value


def _tail(log: Callable[[], str] | Path | None) -> str:
    if log is None:
        return ""
    text = log.read_text(errors="replace")[-3000:] if isinstance(log, Path) else log()
    return f":\n{text}" if text else ""


def running(pid: int) -> bool:
    """Whether `pid` runs (a zombie has died: only its parent has not read its exit code yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")
