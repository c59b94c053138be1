"""Tutor mode's leak guard (chat/turn/leakguard.py): the n-gram length, its cost per streamed token
and the delay it adds, guard on against off in one run.

    DEBUG=1 .venv/bin/python bench/leakguard.py [--rate 30]

1. N by measurement. The "answer key" is a set of worked solutions written for the bench (numbers,
   formulas, sentences); the ordinary answers are the project's own documentation, paragraph by
   paragraph (explanations on other topics that share the language's common phrasing), and hints
   on the same exercises written as a tutor would (same words, no solution). A false alarm is an
   ordinary answer or a hint the guard stops; a catch is a scripted leak (verbatim, tiny tokens, a
   code block, other spacing and punctuation, the same numbers in other words) it stops.
2. CPU per streamed token: every answer streamed word by word through `StreamGuard.push`, timed
   per push, against the same loop without the guard.
3. Added delay: how long each piece of text waits for release, in tokens, and at `--rate` tokens a
   second (a model's streaming speed).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "currechat.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from chat.turn import leakguard  # noqa: E402
from chat.turn.leakguard import Leak, Protected, StreamGuard  # noqa: E402

KEY = """\
Exercise 1. The ball falls for t = sqrt(2 * 45 / 9.81) = 3.03 s and hits the ground at v = g t = 29.7 m/s.
Exercise 2. The net force is F = m a = 12 kg * 2.5 m/s^2 = 30 N, so the block accelerates to the right.
Exercise 3. The sample mean is (4 + 8 + 15 + 16 + 23 + 42) / 6 = 18, and the median is (15 + 16) / 2 = 15.5.
Exercise 4. Integrating by parts with u = x and dv = e^x dx gives x e^x - e^x + C; on [0, 1] the value is 1.
Exercise 5. The loop runs n - 1 times because the last element is already in place after the inner pass.
Marking: full points only when both the formula and the numeric result are given with units."""

HINTS = [
    "Think about which formula links the height of a fall to its time. What do you know about h and g?",
    "Newton's second law connects force, mass and acceleration. Which of them are given in the exercise?",
    "To find the mean, add up all the values and divide by how many there are. How many values are there?",
    "For the median, first sort the values. What happens when there is an even number of them?",
    "Integration by parts needs a choice of u and dv. Which part becomes simpler when you differentiate it?",
    "Look at what the inner loop does on each pass. After one pass, where is the largest element?",
    "Units matter here: check that your answer for the speed is in metres per second.",
    "Try writing the equation of motion for a free fall first, then solve it for the time.",
    # Hints in the exercise's own words: what a short N would stop.
    "While the ball falls, which force acts on it? Write down what you know before computing anything.",
    "What is the net force on the block if nothing else pushes it? Start from the free-body diagram.",
    "The sample mean is the sum of the values divided by their count. Can you add them up?",
    "How many times does the loop run? Count the passes for a list of three elements first.",
    "Integrating by parts with a good choice of u makes the integral simpler. Which part would you pick?",
    "Full points need the formula and the result with units, so keep track of the units as you go.",
]


def leaks() -> list[tuple[str, str]]:
    verbatim = "Sure! " + KEY.splitlines()[0]
    return [
        ("verbatim", verbatim),
        ("tiny tokens", verbatim),  # streamed two characters at a time below
        ("code block", "```\nF = m a = 12 kg * 2.5 m/s^2 = 30 N\n```"),
        ("spacing and punctuation", "THE   SAMPLE... mean is: (4+8+15+16+23+42)/6=18!"),
        ("same numbers, other words", "It takes roughly 3,03 s and arrives at 29,7 m / s."),
        ("a sentence of the key", "Note that the loop runs n - 1 times because the last element is in place."),
    ]


def ordinary_answers() -> list[str]:
    texts = []
    for path in ("README.md", "docs/ARCHITECTURE.md", "docs/DEPLOY.md"):
        for paragraph in re.split(r"\n\s*\n", (ROOT / path).read_text(encoding="utf-8")):
            if len(paragraph.split()) >= 30:
                texts.append(paragraph)
    return texts


def stream(guard: StreamGuard | None, pieces: list[str]) -> tuple[bool, list[float], list[int]]:
    """Whether the guard stopped it; seconds per push; tokens each piece waited for release."""
    times, waits, released, sent = [], [], 0, 0
    ends = []  # the character offset at which each piece ends
    for piece in pieces:
        sent += len(piece)
        ends.append(sent)
    try:
        for i, piece in enumerate(pieces):
            start = time.perf_counter_ns()
            out = guard.push(piece) if guard else piece
            times.append((time.perf_counter_ns() - start) / 1e9)
            released += len(out)
            waits += [i - j for j in range(len(waits), len(pieces)) if ends[j] <= released]
        if guard:
            guard.flush()
        waits += [len(pieces) - j for j in range(len(waits), len(pieces))]
    except Leak:
        return True, times, waits
    return False, times, waits


def words(text: str) -> list[str]:
    return re.findall(r"\S+\s*|\s+", text)


def choose_n(answers: list[str]) -> None:
    print("| N | false alarms: documentation paragraphs | false alarms: hints | leaks caught |")
    print("|---|---|---|---|")
    for n in (3, 4, 5, 6, 7):
        leakguard.N = n
        protected = Protected.build(KEY, "")
        doc_alarms = sum(stream(StreamGuard(protected), words(a))[0] for a in answers)
        hint_alarms = sum(stream(StreamGuard(protected), words(h))[0] for h in HINTS)
        caught = 0
        for name, text in leaks():
            pieces = [text[i : i + 2] for i in range(0, len(text), 2)] if name == "tiny tokens" else words(text)
            caught += stream(StreamGuard(protected), pieces)[0]
        print(f"| {n} | {doc_alarms} of {len(answers)} | {hint_alarms} of {len(HINTS)} | {caught} of {len(leaks())} |")
    leakguard.N = 5


def cost(answers: list[str], rate: float) -> None:
    protected = Protected.build(KEY, "You are a patient tutor for the physics and statistics course.")
    on, off, waits = [], [], []
    for _round in range(5):  # paired: each answer through both, in turn
        for answer in answers:
            pieces = words(answer)
            _stopped, times, waited = stream(StreamGuard(protected, [answer[:40]]), pieces)
            on += times
            waits += waited
            off += stream(None, pieces)[1]
    q = statistics.quantiles
    print(f"\nStreamed pieces: {len(on)} per setting ({len(answers)} answers x 5 rounds, a word per piece)")
    print("| | p50 µs / token | p95 µs / token | mean µs / token |")
    print("|---|---|---|---|")
    for name, values in (("guard off", off), ("guard on", on)):
        p = q(values, n=20)
        print(f"| {name} | {p[9] * 1e6:.1f} | {p[18] * 1e6:.1f} | {statistics.mean(values) * 1e6:.1f} |")
    p = q([float(w) for w in waits], n=20)
    print(f"\nAdded delay (tokens a piece waits): p50 {p[9]:.0f}, p95 {p[18]:.0f}, max {max(waits)}")
    print(f"At {rate:g} tokens/s: p50 {p[9] / rate * 1000:.0f} ms, p95 {p[18] / rate * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=float, default=30.0, help="the model's tokens per second, for the delay")
    args = parser.parse_args()
    answers = ordinary_answers()
    choose_n(answers)
    cost(answers, args.rate)


if __name__ == "__main__":
    main()
