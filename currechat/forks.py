"""What every process the worker forks does first: a job's process, and rq's scheduler.

They must not outlive the worker (Linux's parent-death signal, `currechat.lifeline`), and they
must not keep the worker's Redis connections open: those are the worker's, whatever the child does.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

import redis

from currechat import lifeline

log = logging.getLogger(__name__)


def die_with_parent() -> None:
    """Ask Linux to kill this process when its parent dies (no-op elsewhere)."""
    if not lifeline.die_with_parent(signal.SIGKILL) and sys.platform.startswith("linux"):
        log.info("Could not tie the job process to its worker")


_forks_tied = False


def tie_forks_to_this_process(connection: redis.Redis) -> None:
    """Every process this one forks from now on gets SIGTERM when it dies (rq's scheduler, which
    then releases its lock and stops within a second instead of running on orphaned), and closes
    its copies of this process's Redis sockets at once (`drop_inherited_sockets`). (A job's process
    asks for SIGKILL itself, in `main_work_horse`.)"""
    global _forks_tied
    if not _forks_tied:
        pool = connection.connection_pool

        def in_the_child() -> None:
            lifeline.die_with_parent(signal.SIGTERM)
            drop_inherited_sockets(pool)

        os.register_at_fork(after_in_child=in_the_child)
        _forks_tied = True


def drop_inherited_sockets(pool: redis.ConnectionPool) -> None:
    """In a forked process: close its copies of the parent's Redis sockets (the child makes its own).

    A copy keeps a socket open after the parent dies, so Redis still counts the parent's wait for a
    job (BLPOP) as waiting: a worker killed while its scheduler took a second to stop had the next
    queued job handed to a socket no process read, and that file stayed queued for ever. Closing a
    copy leaves the parent's socket alone (redis-py shuts a socket down only in the process that
    opened it; here it is only closed). Read without the pool's lock: another thread of the parent
    may have held it at the fork, and a child that waited for it would wait for ever."""
    inherited = [*getattr(pool, "_available_connections", ()), *getattr(pool, "_in_use_connections", ())]
    for connection in inherited:
        sock, connection._sock = connection._sock, None  # noqa: SLF001
        if sock is not None:
            sock.close()
