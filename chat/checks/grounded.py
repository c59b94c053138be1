"""Groundedness: the share of an answer's sentences that a passage it cites supports.

Deterministic, no model call. The answer (citation markers and Markdown marks removed) is split
into sentences at `.`, `!`, `?` and line ends. A sentence's content words are its terms as the
index reads them (`rag.query.tokenize`: the search form, case folded) without the stop words of
the material's language (redisvl's lists), reduced to their Snowball stems. A sentence with fewer
than MIN_CONTENT_WORDS content words ("Yes.", "In short:") is not counted. A counted sentence is
supported when at least SUPPORT_THRESHOLD of its distinct stems occur in one cited passage.
The figure is supported / counted, or None when nothing was counted or no passage was cited.
SUPPORT_THRESHOLD was checked with bench/answers.py on SQuAD v1.1 dev (docs/BENCHMARKS.md).

An answer without a language model (extractive mode) only quotes passages: its quoted lines are
measured, and its framing sentences ("No language model is connected ...") are not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from kernel.rendering import strip_citations
from rag.languages import LANGUAGES, stopwords
from rag.query import stem, tokenize

MIN_CONTENT_WORDS = 3
SUPPORT_THRESHOLD = 0.5

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_MARKS = re.compile(r"[*_`#]+|^\s*(?:[-+]|\d+[.)])\s+", re.MULTILINE)


@dataclass(frozen=True)
class Groundedness:
    share: float | None
    unsupported: list[str] = field(default_factory=list)
    counted: int = 0


def content_stems(text: str, language: str) -> set[str]:
    stop = stopwords(language) if language in LANGUAGES else frozenset()
    return {stem(t, language) for t in tokenize(text, language) if t not in stop}


def sentences(answer: str, *, quoted: bool = False) -> list[str]:
    """The answer's sentences as a reader sees them (citation markers and Markdown marks gone).
    With `quoted`, only the lines quoted with `>` (an extractive answer's passages)."""
    if quoted:
        answer = "\n".join(line.lstrip()[1:] for line in answer.splitlines() if line.lstrip().startswith(">"))
    else:
        answer = "\n".join(line.lstrip().removeprefix(">") for line in answer.splitlines())
    plain = _MARKS.sub("", strip_citations(answer))
    return [" ".join(s.split()) for s in _SENTENCE_END.split(plain) if s.strip()]


def measure(answer: str, cited: Sequence[dict], *, language: str, quoted: bool = False) -> Groundedness:
    """How much of `answer` the `cited` passages (dicts with `text`) support."""
    passages = [content_stems(p.get("text") or "", language) for p in cited]
    if not passages:
        return Groundedness(None)
    counted, unsupported = 0, []
    for sentence in sentences(answer, quoted=quoted):
        words = content_stems(sentence, language)
        if len(words) < MIN_CONTENT_WORDS:
            continue
        counted += 1
        best = max(len(words & passage) / len(words) for passage in passages)
        if best < SUPPORT_THRESHOLD:
            unsupported.append(sentence)
    if not counted:
        return Groundedness(None)
    return Groundedness(round((counted - len(unsupported)) / counted, 3), unsupported, counted)
