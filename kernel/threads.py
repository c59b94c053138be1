"""The background threads of a process: one named daemon thread per job, started on first use,
at most one at a time, and started again in a forked child.

Threads do not survive a fork (only the forking thread goes on in the child), and a lock another
thread held at the fork stays held in the child for ever. So every `DaemonThread` forgets its
thread and gets a fresh lock in a forked child (`os.register_at_fork`), and the first use there
starts a new one: the worker forks a process per job, and the job's process may stream answers,
save them and beat like any other.

Four shapes of use:
- a thread that runs while there is work (`start`/`start_locked` when work arrives; the thread,
  finding none under `lock`, calls `end_locked` and returns, and the next `start` starts another);
- a thread that beats every few seconds until stopped (`Periodic`);
- a one-off (`spawn`);
- a pool of threads of one kind (`pool`).
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)

_every: weakref.WeakSet[DaemonThread] = weakref.WeakSet()


def _forked() -> None:
    for thread in list(_every):
        thread._forked()


os.register_at_fork(after_in_child=_forked)


def _set_os_name() -> Callable[[bytes], object] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):  # not Linux: threads keep the process's name
        return None
    return lambda name: prctl(_PR_SET_NAME, ctypes.c_char_p(name), 0, 0, 0)


_PR_SET_NAME = 15
_os_name = _set_os_name()


def name_os_thread(name: str | None = None) -> None:
    """Give the calling thread's OS thread its Python name without the pool's number ("chat-turn_12"
    -> "chat-turn"; the kernel keeps 15 bytes), so that `top -H`, `ps -L` and /proc say which kind of
    thread spends the CPU (Python 3.11 leaves every thread named after the process)."""
    if _os_name is not None:
        kind = re.sub(r"[_-]?\d+$", "", name or threading.current_thread().name) or "thread"
        _os_name(kind.encode()[:15])


def _named(name: str, target: Callable[..., object], *args: object) -> object:
    name_os_thread(name)
    return target(*args)


def spawn(name: str, target: Callable[..., object], *args: object) -> threading.Thread:
    """Start `target(*args)` on a named daemon thread (a one-off: nothing waits for it at exit)."""
    thread = threading.Thread(target=_named, args=(name, target, *args), name=name, daemon=True)
    thread.start()
    return thread


def pool(kind: str, workers: int) -> ThreadPoolExecutor:
    """A thread pool whose threads carry `kind` as their Python and OS name ("chat-turn_3" and
    "chat-turn"), as `spawn`'s do."""
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix=kind, initializer=name_os_thread)


class DaemonThread:
    """One named daemon thread running `target`, started by `start` unless it already runs in this
    process. `lock` guards the thread's state and may guard the caller's too (the work the thread
    serves), so that adding work and the thread's deciding there is none are one step each."""

    def __init__(self, name: str, target: Callable[[], object]) -> None:
        self.name = name
        self._target = target
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None
        _every.add(self)

    @property
    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self) -> bool:
        """Start the thread unless it runs; whether this started it."""
        with self.lock:
            return self.start_locked()

    def start_locked(self) -> bool:
        """`start`, for a caller holding `lock`."""
        if self.alive:
            return False
        self._thread = spawn(self.name, self._target)
        return True

    def end_locked(self) -> None:
        """Called by the thread, holding `lock`, as it returns for want of work: the next `start`
        starts another (checked under the same lock, so no work is left without a thread)."""
        if self._thread is threading.current_thread():
            self._thread = None

    def join(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _forked(self) -> None:
        """In a forked child: no thread of the parent's runs here, and its lock may be held."""
        self.lock = threading.Lock()
        self._thread = None


class Periodic(DaemonThread):
    """A daemon thread calling `beat()` every `seconds` (a number, or a callable read before each
    wait, so a changed setting holds) until `stop()`, or until `beat` returns False. An exception
    from `beat` is logged and the next beat comes as usual; `at_end` runs on the thread as it ends
    (to close what the thread opened, e.g. its database connection)."""

    def __init__(
        self,
        name: str,
        seconds: float | Callable[[], float],
        beat: Callable[[], bool | None],
        at_end: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(name, self._run)
        self._seconds = seconds
        self._beat = beat
        self._at_end = at_end
        self._stop = threading.Event()

    def start_locked(self) -> bool:
        if self.alive:
            return False
        self._stop = threading.Event()  # each thread its own: a stopped one never hears a later start
        self._thread = spawn(self.name, self._run, self._stop)
        return True

    def stop(self, timeout: float | None = None) -> None:
        """Ask the thread to end, and wait up to `timeout` seconds for it (never for itself)."""
        self._stop.set()
        self.join(timeout)

    def _interval(self) -> float:
        return self._seconds() if callable(self._seconds) else self._seconds

    def _run(self, stop: threading.Event | None = None) -> None:
        stop = stop or self._stop
        try:
            while not stop.wait(self._interval()):
                try:
                    if self._beat() is False:
                        return
                except Exception:  # noqa: BLE001 — a missed beat is harmless; the next one retries
                    log.warning("%s: a beat failed", self.name, exc_info=True)
        finally:
            if self._at_end is not None:
                self._at_end()

    def _forked(self) -> None:
        super()._forked()
        self._stop = threading.Event()
