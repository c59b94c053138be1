"""An event loop paced by kernel/ticks.py: while busy, what other threads hand it waits for its next
tick and is handled together; while not, at once."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
import uvloop

from kernel import ticks

CALLS = 100


class Batches:
    """Counts the loop's rounds that handled at least one of the calls (on the loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop, self.rounds, self.handled, self._open = loop, 0, 0, False
        self.all_handled = threading.Event()

    def call(self) -> None:
        self.handled += 1
        if not self._open:  # the first of this round: the round ends before the next round's callbacks
            self._open = True
            self.rounds += 1
            self.loop.call_soon(self._close)
        if self.handled == CALLS:
            self.all_handled.set()

    def _close(self) -> None:
        self._open = False


def running(new_loop):
    loop = new_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    return loop, thread


def hand_over(loop: asyncio.AbstractEventLoop, batches: Batches) -> float:
    """CALLS calls from this thread a millisecond apart, as tokens of many streams come; the seconds
    until the loop has handled them all."""
    started = time.monotonic()
    for _ in range(CALLS):
        loop.call_soon_threadsafe(batches.call)
        time.sleep(0.001)
    assert batches.all_handled.wait(30), f"{batches.handled} of {CALLS} calls handled"
    return time.monotonic() - started


def stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


@pytest.mark.parametrize("new_loop", [uvloop.new_event_loop, asyncio.new_event_loop], ids=["uvloop", "asyncio"])
def test_a_busy_loop_wakes_once_a_tick_and_handles_what_came_meanwhile_together(new_loop):
    tick = 0.05
    loop, thread = running(new_loop)
    try:
        loop.call_soon_threadsafe(ticks.pace, loop, lambda: True, tick)
        batches = Batches(loop)
        seconds = hand_over(loop, batches)
    finally:
        stop(loop, thread)
    # Without the tick, a quiet machine's loop wakes for each call: about CALLS rounds.
    assert batches.rounds <= seconds / tick + 2, (batches.rounds, seconds)


@pytest.mark.slow
@pytest.mark.parametrize("new_loop", [uvloop.new_event_loop, asyncio.new_event_loop], ids=["uvloop", "asyncio"])
def test_a_loop_is_paced_only_while_busy(new_loop):
    tick = 5.0  # far longer than the waits below: a call that waited for it would not be handled in time
    busy, asked_while_busy = threading.Event(), threading.Event()

    def is_busy() -> bool:
        if busy.is_set():
            asked_while_busy.set()
            return True
        return False

    loop, thread = running(new_loop)
    try:
        loop.call_soon_threadsafe(ticks.pace, loop, is_busy, tick)
        at_once = threading.Event()
        loop.call_soon_threadsafe(at_once.set)
        assert at_once.wait(tick / 2), "a loop that is not busy waited for its tick"
        # Busy from now on: once the pacer has seen it, it sleeps out its tick first.
        busy.set()
        assert asked_while_busy.wait(10)
        handled = threading.Event()
        loop.call_soon_threadsafe(handled.set)
        assert not handled.wait(tick / 4), "a busy loop handled a call before its tick was out"
        assert handled.wait(10), "the call was not handled after the tick"
    finally:
        busy.clear()
        stop(loop, thread)
