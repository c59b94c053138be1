"""Pages a vision model probably got wrong, for the teacher to check, and the teacher's corrections.

A page is flagged when the model's Markdown is empty or very short, repeats a line (a model stuck
in a loop), or holds words that are not in the page's own text layer beyond a threshold. The
thresholds were tuned on the shared PDFs (`bench/ingest.py --flags`, docs/BENCHMARKS.md "VLM page flags"): a
faithful transcription (pymupdf4llm's, standing in for a good model) of 65 of those pages has at
most 28% of its words outside the text layer on a whole page (median 1.6%), and no line of 6 or
more words with more than 83% of them outside it (ligatures, hyphenation); a line the model made up
has nearly all of its words outside it.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal, TypedDict

from rag.ingest.job import PageText
from rag.locate import tokens

SHORT_WORDS = 5  # fewer words than this from a page whose text layer has many is "very short"
REPEATS = 3  # the same line this many times on one page
PAGE_UNKNOWN_SHARE = 0.35  # of the page's words, not in its text layer
LINE_UNKNOWN_SHARE = 0.85  # of one line's words (a line of LINE_WORDS or more), not in the text layer
LINE_WORDS = 6
LAYER_WORDS = 20  # a text layer with fewer words says too little to judge the model by

Why = Literal["short", "repeated", "unknown_words"]


class Flag(TypedDict):
    page: int
    why: Why


def _content_words(text: str) -> list[str]:
    return [w for w in tokens(text) if len(w) >= 3 and not w.isdigit()]


def flag_page(markdown: str, layer: str | None) -> Why | None:
    """Why the model's Markdown of one page needs checking (None when nothing looks wrong).
    `layer` is the page's own text layer, None when it has none (a scan, a picture)."""
    layer_tokens = tokens(layer or "")
    layer_words = set(layer_tokens)
    words = _content_words(markdown)
    if len(words) < SHORT_WORDS and (layer is None or len(layer_tokens) >= LAYER_WORDS):
        return "short"
    lines = [" ".join(line.split()) for line in markdown.splitlines() if len(line.strip()) >= 10]
    if lines and Counter(lines).most_common(1)[0][1] >= REPEATS:
        return "repeated"
    if len(layer_tokens) < LAYER_WORDS:
        return None
    if sum(w not in layer_words for w in words) / len(words) > PAGE_UNKNOWN_SHARE:
        return "unknown_words"
    for line in markdown.splitlines():
        line_words = _content_words(line)
        if len(line_words) >= LINE_WORDS and sum(w not in layer_words for w in line_words) / len(line_words) > (
            LINE_UNKNOWN_SHARE
        ):
            return "unknown_words"
    return None


def flag_pages(pages: list[PageText], layers: dict[int, str | None], skip: frozenset[int] = frozenset()) -> list[Flag]:
    """The flags of the model-read pages (`layers` holds each page's text layer; `skip`, pages
    that were not read by the model)."""
    flags: list[Flag] = []
    for page in pages:
        if page.number is None or page.number in skip or page.number not in layers:
            continue
        if (why := flag_page(page.markdown, layers[page.number])) is not None:
            flags.append(Flag(page=page.number, why=why))
    return flags


def apply_corrections(pages: list[PageText], corrections: dict[int, str]) -> list[PageText]:
    """The pages with the teacher's corrections in place (key 0: a file without pages)."""
    return [PageText(p.number, corrections.get(p.number or 0, p.markdown)) for p in pages]
