"""How many threads an in-process model (torch) computes on: chosen by each kind of process.

torch starts one compute thread per core and has them wait for each other at every step. On a
machine whose cores other processes share (a web process beside a worker, two job processes, the
database), a thread that is not running holds up the others: one query embedding took ~174 ms with
torch's default threads on a busy 2-core machine, 40 ms with one (docs/BENCHMARKS.md). So:

- a web process embeds one question per search and runs many searches side by side: each on
  EMBED_QUERY_THREADS (1) thread, so questions use the cores in parallel instead of fighting;
- a worker's job process embeds whole files: EMBED_THREADS, by default one per core it may use.

`use` is called by the process's start-up code before torch does any work: the environment
variables are read when torch is first imported (and by processes started from here), torch's own
setting is changed if it is imported already.
"""

from __future__ import annotations

import logging
import os
import sys

from rag import config

log = logging.getLogger(__name__)

# OpenMP (torch's CPU kernels), MKL and OpenBLAS each size their pools from one of these.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
# OpenMP's threads spin, burning a core, while they wait for each other between steps. With other
# processes on the cores, the spinning thread takes the time the awaited one needed: two threads
# took 148 ms of CPU per passage at batches of 8 on a loaded machine, 67 ms sleeping instead
# (docs/BENCHMARKS.md). Read once, when torch is first imported; a deployment may set its own.
WAIT_POLICY = ("OMP_WAIT_POLICY", "PASSIVE")

_chosen: tuple[int, int] | None = None  # (process id, threads): a forked process chooses again


def cores() -> int:
    """The cores this process may run on (its CPU affinity, which containers and taskset narrow)."""
    return len(os.sched_getaffinity(0))


def for_jobs() -> int:
    """A job process's threads: EMBED_THREADS, or one per core when it is 0."""
    return config.models().embed_threads or cores()


def for_queries() -> int:
    """A web process's threads per query embedding."""
    return config.models().embed_query_threads


def use(threads: int) -> None:
    """Compute on `threads` threads in this process from now on. A process that forks job
    processes later (the worker) computes on one itself: a process whose OpenMP pool has started
    must not fork (the pool's threads are not copied, and the child's first parallel step waits for
    them forever); each job process then calls `use` again for its own count."""
    for variable in THREAD_VARIABLES:
        os.environ[variable] = str(threads)
    os.environ.setdefault(*WAIT_POLICY)
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(threads)
    _set_interop_threads(torch)
    global _chosen
    _chosen = (os.getpid(), threads)


def _set_interop_threads(torch) -> None:
    """One inter-op thread: none of our models runs operators side by side, so a pool of them would
    only take memory. torch lets this be set once, before any inter-op work; a process forked from
    one that set it keeps that setting."""
    if torch is None:
        return
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass


def chosen() -> int | None:
    """The threads this process chose (None: its start-up code chose none, or it was forked since)."""
    if _chosen is None or _chosen[0] != os.getpid():
        return None
    return _chosen[1]


def ensure_chosen() -> None:
    """Before a model loads: a process whose kind chose nothing (a management command, a test, a
    benchmark) computes as a job process does."""
    if chosen() is None:
        use(for_jobs())
        log.info("Embedding on %d threads (EMBED_THREADS)", for_jobs())
