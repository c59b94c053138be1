"""Where a passage is on its page: the words a reader should see marked.

A passage is Markdown (from the VLM or the text layer); the page has its own words with their
boxes (PyMuPDF). Both become the same kind of tokens (letters and digits, case folded, Markdown
and LaTeX left out), and the longest runs they share mark the passage on the page: a reader sees
the passage's lines highlighted even where the model wrote a table or formula differently.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where it is used: see rag/ingest/pdf/safety.py
    import pymupdf


_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$|\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
_TAG = re.compile(r"<[^>\n]+>")
_LINK = re.compile(r"\]\([^)]*\)")
_TOKEN = re.compile(r"[^\W_]+")
MIN_RUN = 3  # shared runs shorter than this are chance ("of the", a number)


def tokens(text: str) -> list[str]:
    """The words of `text` as compared: Unicode NFKC, case folded, no Markdown, LaTeX or link targets."""
    return plain_tokens(_LINK.sub("]", _TAG.sub(" ", _MATH.sub(" ", text))))


def plain_tokens(text: str) -> list[str]:
    """The words of plain text (a page's text as a browser shows it), compared as `tokens` does."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold())


@dataclass(frozen=True)
class Located:
    """The passage on one page: boxes in page points (x0, y0, x1, y1), one per line of marked words,
    and the share of the passage's words found there (0 to 1)."""

    width: float
    height: float
    boxes: list[tuple[float, float, float, float]]
    found: float


def locate_on_page(page: pymupdf.Page, passage: str) -> Located:
    """The passage's words on `page`. Only runs of at least MIN_RUN words count (or the whole
    passage when it is shorter), so a passage that is not on the page marks nothing."""
    wanted = tokens(passage)
    width, height = page.rect.width, page.rect.height
    if not wanted:
        return Located(width, height, [], 0.0)
    page_tokens: list[str] = []
    owners: list[int] = []  # for each page token, the index of the word box it came from
    words = page.get_text("words", sort=False)  # reading order as the text layer gives it (columns whole)
    for i, word in enumerate(words):
        for token in tokens(word[4]):
            page_tokens.append(token)
            owners.append(i)
    minimum = min(MIN_RUN, len(wanted))
    matcher = SequenceMatcher(None, page_tokens, wanted, autojunk=False)
    runs = [block for block in matcher.get_matching_blocks() if block.size >= minimum]
    if not runs:
        return Located(width, height, [], 0.0)
    marked: set[int] = set()
    for run in runs:
        marked.update(owners[run.a : run.a + run.size])
    # Join the words marked on one line into one box, so the highlight reads as lines, not confetti.
    lines: dict[tuple[int, int], list[float]] = {}
    for i in sorted(marked):
        x0, y0, x1, y1, _, block, line, _ = words[i]
        box = lines.setdefault((block, line), [x0, y0, x1, y1])
        box[0], box[1], box[2], box[3] = min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)
    boxes = sorted((tuple(b) for b in lines.values()), key=lambda b: (b[1], b[0]))
    found = sum(run.size for run in runs) / len(wanted)
    return Located(width, height, [(b[0], b[1], b[2], b[3]) for b in boxes], min(found, 1.0))
