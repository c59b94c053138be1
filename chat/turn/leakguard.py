"""The leak guard: stands between a guided prompt's model stream and the student (pure, no I/O).

What counts as a leak, after normalisation (case folded, accents dropped, punctuation and spacing
ignored, numbers written one way: `1,000.5`, `1 000,5` and `1000.5` are one number):
- any N consecutive words of the protected material (answer keys, worked solutions, hidden
  instructions) with at least two that are not common words (a stop list: "of the course and" is
  not a leak); formulas are words too (`=`, `+`, `/`, `<` ... are tokens), so `t=sqrt(2h/g)` and
  `t = √(2h / g)` are the same tokens whatever the spacing;
- the same for the prompt's own instructions (seed 001's prompt-leak check), with three words that
  are not common, so that the assistant may still say what it is for;
- a number of the protected material that tells something (two digits or more) with (within N-1
  tokens of it) two words or operators it stands beside in the material, at least one a word:
  "29.7 m/s" paraphrased as "at 29,7 m / s"; a precise result of the material (three digits or
  more, right after `=`) with one such word: "t = 3.03 s" paraphrased as "about 3,03 s". A number alone, or beside other
  words, is no leak (the exercise's givens and constants such as "g = 9.81" are explained with).
Text the student may read anyway (their own messages, the passages searches found) is allowed:
its N-grams and numbers never count as leaks (`StreamGuard.allow`).

`StreamGuard.push` takes the model's text as it arrives and returns what may go to the student now:
everything except the last N-1 complete words (and the word still being written), which a next
word could turn into a leak. A leak raises `Leak` before any of its words are returned, so they
never reach the student. N is chosen by measurement (bench/leakguard.py, docs/BENCHMARKS.md).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, lru_cache

from rag.languages import LANGUAGES, stopwords
from rag.text import canonical_number, compare_form

# Words per n-gram, measured (bench/leakguard.py, docs/BENCHMARKS.md): 3 and 4 stop tutors' hints that
# reuse the exercise's wording ("the net force on the block"), 5 is the shortest that stops none of
# them and catches every scripted leak; each word more holds the stream back one word longer.
N = 5
MIN_DIGITS = 2  # a number with fewer digits ("step 3") says nothing by itself
BESIDE = 2  # words or operators of its neighbourhood in the material a number must come with to leak
RESULT_DIGITS = 3  # a result this precise ("= 3.03") leaks with one word beside it; "= 30" needs BESIDE

_OPERATORS = "=+/<>≤≥≈≠±√"
# A number (with its separators: 1,000.5 / 1 000,5 / 3.03), a word (letters of any alphabet), an operator.
_WORD = r"[^\W\d_](?:[^\W\d_]|[\u0300-\u036f])*"  # combining marks too: a stress mark cuts no word in two
_TOKEN = re.compile(rf"\d{{1,3}}(?:[ \u00a0\u202f]\d{{3}})+(?:[.,]\d+)?(?!\d)|\d+(?:[.,]\d+)*|{_WORD}|[{_OPERATORS}]")
# LaTeX and Markdown words that are layout, not content: `2 \cdot 45` is `2 * 45` is `2 × 45`.
_LAYOUT = frozenset({"cdot", "times", "left", "right", "mathrm", "text", "textbf", "mathbf", "quad", "displaystyle"})
_OPERATOR_TOKENS = frozenset("=+/<>≠±")
_SAME_OPERATOR = {"≤": "<", "≥": ">", "≈": "=", "√": "sqrt"}


class Leak(Exception):  # noqa: N818 — a finding, raised to end the model's stream at once
    """The text about to be sent would give protected material (or the instructions) away."""

    def __init__(self, kind: str, words: tuple[str, ...]):
        super().__init__(f"{kind} leak: {' '.join(words)}")
        self.kind = kind  # "material", "instructions", "number"
        self.words = words


@lru_cache(maxsize=8192)  # called for every streamed word; a course's words repeat
def normal(token: str) -> str | None:
    """The token as compared (None: layout, not content), in the one comparison form
    (rag.text: `compare_form`, `canonical_number`)."""
    if token[0].isdigit():
        return canonical_number(token)
    word = compare_form(token)
    if word in _LAYOUT:
        return None
    return _SAME_OPERATOR.get(word, word)


def tokens(text: str) -> Iterator[str]:
    for match in _TOKEN.finditer(text):
        word = normal(match.group())
        if word is not None:
            yield word


def _is_number(token: str) -> bool:
    return token[0].isdigit()


def _digits(token: str) -> int:
    return sum(c.isdigit() for c in token.lstrip("0."))


def _telling(token: str) -> bool:
    return _is_number(token) and _digits(token) >= MIN_DIGITS


@cache
def common_words() -> frozenset[str]:
    """The stop list: the stop words of every language collections may have, as `normal` writes them.
    Letters alone stay content (a formula's `t`, `s` or `m`), except the words "a" and "i"."""
    words = {normal(w) for language in LANGUAGES for w in stopwords(language) for w in w.split()}
    return frozenset(w for w in words if w and (len(w) > 1 or w in ("a", "i")))


def _content(gram: tuple[str, ...], common: frozenset[str]) -> int:
    return sum(1 for w in gram if w not in common)


def ngrams(words: list[str], n: int | None = None) -> Iterator[tuple[str, ...]]:
    n = n or N
    for i in range(len(words) - n + 1):
        yield tuple(words[i : i + n])


@dataclass(frozen=True)
class Protected:
    """What must not reach the student, built once per prompt version (`build`)."""

    material: frozenset[tuple[str, ...]]
    instructions: frozenset[tuple[str, ...]]
    numbers: dict[str, frozenset[str]] = field(default_factory=dict)  # number -> words beside it
    results: frozenset[str] = frozenset()  # numbers the material gives as a result ("= 3.03")

    @classmethod
    def build(cls, material: str, instructions: str = "") -> Protected:
        common = common_words()
        words = list(tokens(material))
        grams = frozenset(g for g in ngrams(words) if _content(g, common) >= 2)
        said = frozenset(g for g in ngrams(list(tokens(instructions))) if _content(g, common) >= 3)
        beside: dict[str, set[str]] = {}
        results = set()
        for i, word in enumerate(words):
            if _telling(word):
                near = words[max(0, i - N + 1) : i] + words[i + 1 : i + N]
                # Its neighbours that say something: no common word, no digit alone ("2" of "2:30").
                telling = (w for w in near if w not in common and w != word and not (_is_number(w) and len(w) == 1))
                beside.setdefault(word, set()).update(telling)
                if i and words[i - 1] == "=" and _digits(word) >= RESULT_DIGITS:
                    results.add(word)
        return cls(grams, said, {k: frozenset(v) for k, v in beside.items()}, frozenset(results))

    def __bool__(self) -> bool:
        return bool(self.material or self.instructions or self.numbers)


class StreamGuard:
    """One model stream's text, checked as it arrives (`push`, then `flush` at its end)."""

    def __init__(self, protected: Protected, allowed: Iterable[str] = ()):
        self.protected = protected
        self.pending = ""  # not yet released: the last N-1 complete words and the word being written
        self.checked = 0  # complete tokens in `pending` already checked
        self.window: deque[str] = deque(maxlen=N)
        self.allowed_grams: set[tuple[str, ...]] = set()
        self.allowed_numbers: set[str] = set()
        for text in allowed:
            self.allow(text)

    def allow(self, text: str) -> None:
        """Text the student may read anyway: its n-grams and numbers are no leak."""
        words = list(tokens(text))
        self.allowed_grams.update(ngrams(words))
        self.allowed_numbers.update(w for w in words if _is_number(w))

    def push(self, text: str) -> str:
        """The text that may go to the student now. Raises Leak (nothing of it released)."""
        self.pending += text
        return self._advance(final=False)

    def flush(self) -> str:
        """The stream ended: check its last words and release the rest. Raises Leak."""
        return self._advance(final=True)

    def _advance(self, *, final: bool) -> str:
        spans = [(m.start(), word) for m in _TOKEN.finditer(self.pending) if (word := normal(m.group())) is not None]
        complete = spans if final else spans[:-1]  # the last may still grow ("3.0" -> "3.03")
        for _start, word in complete[self.checked :]:
            self.window.append(word)
            self._check()
        self.checked = len(complete)
        if final:
            out, self.pending, self.checked = self.pending, "", 0
            return out
        keep = len(complete) - (N - 1)
        if keep <= 0:
            return ""
        cut = complete[keep][0]
        out, self.pending, self.checked = self.pending[:cut], self.pending[cut:], self.checked - keep
        return out

    def _check(self) -> None:
        window = tuple(self.window)
        protected = self.protected
        if len(window) == N and window not in self.allowed_grams:
            if window in protected.material:
                raise Leak("material", window)
            if window in protected.instructions:
                raise Leak("instructions", window)
        for word in window:
            beside = protected.numbers.get(word)
            if beside and word not in self.allowed_numbers:
                near = beside.intersection(window)
                needed = 1 if word in protected.results else BESIDE
                if len(near) >= needed and not near <= _OPERATOR_TOKENS:  # "= ... /" is any formula
                    raise Leak("number", window)
