"""`bench/chat_load.py --guard`: tutor mode's leak guard (chat/turn/leakguard.py) under chat load.

Each round pairs chats of an unguided prompt ("guard off") with chats of the same prompt made
guided, with an answer key as protected material ("guard on"); the model's answers never leak, so
every streamed word goes through the guard and none is stopped. The delay the guard adds is read
from the mixed chats (both settings in the same window, as the budget comparison does). The CPU is
the web process's own, which a mixed window cannot split: after each mixed window the same number
of chats runs once guard off only and once guard on only (the order alternating by round), and the
CPU per streamed token of the two passes is compared.
"""

from __future__ import annotations

import asyncio
import statistics
import time

# An answer key of the kind teachers add: sentences, numbers, formulas.
KEY = (
    "Solution to exercise 3: the ball falls for t = sqrt(2 * 45 / 9.81) = 3.03 s and hits the ground with speed "
    "v = g t = 29.7 m/s. Solution to exercise 4: the car brakes from 72 km/h = 20 m/s with a = 4 m/s^2, so it "
    "stops after s = v^2 / (2 a) = 50 m in t = v / a = 5 s. Marking: full points only with both results and "
    "the units; half points when the formula is right and the arithmetic is wrong."
)


def guide(chats: list[tuple[int, str]]) -> None:
    """Make the prompt of these chats (prepared by `prepare_data`) guided, with `KEY` protected."""
    from chat.models import ChatSession, Prompt, TutorMode

    prompt_id = ChatSession.objects.get(pk=chats[0][0]).prompt_id
    Prompt.objects.filter(pk=prompt_id).update(tutor_mode=TutorMode.GUIDE, protected_material=KEY)


def cpu_pass(port: int, daphne_pid: int, chats: list[tuple[int, str]], args, first_index: int) -> float:
    """Server CPU µs per streamed word of one setting's chats on their own (no Stop pressed)."""
    from bench.chat_load import cpu_seconds, run_chats

    before = cpu_seconds(daphne_pid)
    runs = asyncio.run(run_chats(port, chats, args.ramp, first_index=first_index))
    cpu = cpu_seconds(daphne_pid) - before
    failed = [run.error for run in runs if run.error]
    if failed:
        raise RuntimeError(f"{len(failed)} chats of a CPU pass failed, e.g. {failed[0]}")
    streamed = sum(len("".join(run.tokens).split()) for run in runs)
    return cpu / max(1, streamed) * 1e6


def cpu_pair(port: int, daphne_pid: int, off: list, on: list, args, first_index: int, on_first: bool) -> dict:
    """{"off": µs, "on": µs} per streamed word, the two passes back to back."""
    order = ("on", "off") if on_first else ("off", "on")
    chats = {"off": off, "on": on}
    result = {}
    for i, setting in enumerate(order):
        result[setting] = cpu_pass(port, daphne_pid, chats[setting], args, first_index + i * 10000)
        time.sleep(1.0)  # the last answers' saves and counts settle before the next pass
    return result


def cpu_table(pairs: dict[tuple[int, str], dict]) -> str:
    lines = [
        "\n| protocol | round | CPU per streamed word, guard off | guard on | added by the guard |",
        "|---|---|---|---|---|",
    ]
    for protocol in sorted({p for _, p in pairs}):
        added = []
        for (r, p), cpu in sorted(pairs.items()):
            if p != protocol:
                continue
            added.append(cpu["on"] - cpu["off"])
            lines.append(f"| {p} | {r + 1} | {cpu['off']:.0f} µs | {cpu['on']:.0f} µs | {added[-1]:+.0f} µs |")
        lines.append(f"| {protocol} | **median** | | | **{statistics.median(added):+.0f} µs** |")
    return "\n".join(lines)
