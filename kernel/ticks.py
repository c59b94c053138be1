"""An event loop that many streams keep waking, paced to wake at most once a tick.

With 200 answers streaming into one web process, every token woke its event loop on its own (a
model server writes a token at a time, and each chat's tokens come apart from the others'): on a
quiet machine each wake-up paid the return from `epoll_wait`, the scheduler's switch back and cold
caches for one token, a fifth of the process's CPU per token. A busy machine made the loop find
many sockets ready at each wake-up, and the same tokens cost a quarter less (docs/BENCHMARKS.md,
"The event loop's tick"). `pace` does that on purpose: while `busy()` says so, the loop sleeps
out what is left of each tick after its work, so each wake-up finds the tokens of many streams
waiting together. A loop whose work fills its tick never sleeps (pacing costs no throughput), and
nothing on the loop waits more than one tick for it.

The sleep releases the GIL: the process's threads run meanwhile, and what they hand the loop
(`call_soon_threadsafe`) is there at its next wake-up.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

# How often an idle pacer asks `busy()` again: a burst of new streams is paced this soon.
IDLE_CHECK_SECONDS = 0.05


def pace(loop: asyncio.AbstractEventLoop, busy: Callable[[], bool], tick: float) -> None:
    """From now on, while `busy()`, let `loop` wake at most once every `tick` seconds (0: never
    paced). Call once per loop, on the loop."""
    if tick <= 0:
        return
    loop.call_soon(_Pacer(loop, busy, tick).step)


class _Pacer:
    def __init__(self, loop: asyncio.AbstractEventLoop, busy: Callable[[], bool], tick: float):
        self.loop, self.busy, self.tick = loop, busy, tick
        self.since = time.monotonic()  # when the loop last woke from a paced sleep

    def step(self) -> None:
        if not self.busy():
            self.since = time.monotonic()  # a first busy round sleeps a tick after the last idle one
            self.loop.call_later(IDLE_CHECK_SECONDS, self.step)
            return
        rest = self.since + self.tick - time.monotonic()
        if rest > 0:
            time.sleep(rest)  # everything that arrives meanwhile waits for the next wake-up, together
        self.since = time.monotonic()
        # Next in the loop's next round, after the I/O that round finds ready: a ready callback keeps
        # the loop from blocking in its poll, so this sleep is the only wait while busy.
        self.loop.call_soon(self.step)
