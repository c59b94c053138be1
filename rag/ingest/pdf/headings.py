"""A PDF's headings per page: from its outline, or inferred from its fonts when it has none."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag.ingest.job import IngestCancelled

if TYPE_CHECKING:  # imported where it is used: see rag/ingest/pdf/safety.py
    import pymupdf


def _toc_by_page(doc: pymupdf.Document) -> dict[int, list[tuple[int, str]]]:
    headings: dict[int, list[tuple[int, str]]] = {}
    for level, title, page in doc.get_toc(simple=True):
        if 1 <= page <= doc.page_count and title.strip():
            headings.setdefault(page, []).append((min(level, 6), " ".join(title.split())))
    return headings


_NUMBERED = re.compile(r"^\d+(\.\d+)+\.?\s+\S")  # "3.1 Vocabulary selection"


def repeat_key(text: str) -> str:
    """What a line repeated on many pages keeps from page to page: its words, digits aside."""
    return re.sub(r"\d+", "0", " ".join(text.split()))


_BOLD = 16  # PyMuPDF span flag


def _inferred_headings(doc: pymupdf.Document, cancelled: Callable[[], bool]) -> dict[int, list[tuple[int, str]]]:
    """Headings of a PDF without an outline (papers, handouts), from its fonts.

    A heading is a short block (at most 3 lines, 80 characters) set entirely in bold and larger
    than the body text (the size that carries the most characters), or in bold at body size when
    it starts with a section number such as "3.1". Larger means higher: each distinct (size,
    numbering) pair gets a level. Blocks repeated on several pages (running headers) are not
    headings, and a document that is nearly all bold (a poster) gets none: a wrong heading path
    on every passage would be worse than none."""
    sizes: Counter = Counter()
    blocks: list[tuple[int, int, float, str]] = []
    seen: Counter = Counter()
    import pymupdf  # loaded by open_pdf already; not at the top, see there

    for number in range(1, doc.page_count + 1):
        if number % 10 == 0 and cancelled():
            raise IngestCancelled
        pdf_page = doc[number - 1]
        # The same flags as page_blocks' text, so the titles found here match its blocks.
        for position, block in enumerate(pdf_page.get_text("dict", flags=pymupdf.TEXTFLAGS_BLOCKS)["blocks"]):
            spans = [s for line in block.get("lines", []) for s in line["spans"] if s["text"].strip()]
            if not spans:
                continue
            for span in spans:
                sizes[round(span["size"], 1)] += len(span["text"])
            text = " ".join(" ".join(s["text"] for s in spans).split())
            bold = all(s["flags"] & _BOLD or "bold" in s["font"].lower() for s in spans)
            if bold and len(block["lines"]) <= 3 and 2 <= len(text) <= 80 and any(c.isalpha() for c in text):
                blocks.append((number, position, max(round(s["size"], 1) for s in spans), text))
                seen[repeat_key(text)] += 1
    if not sizes:
        return {}
    body = sizes.most_common(1)[0][0]
    found = [
        (page, position, size, text)
        for page, position, size, text in blocks
        if (size > body * 1.05 or (size >= body and _NUMBERED.match(text))) and seen[repeat_key(text)] < 3
    ]
    if sum(len(text) for *_, text in found) > 0.2 * sum(sizes.values()):
        return {}
    # A title set over several lines can come as one block per line: the next block on the page,
    # in the same size and not numbered, continues the heading.
    merged: list[tuple[int, int, float, str]] = []
    for page, position, size, text in found:
        last = merged[-1] if merged else None
        if last and (last[0], last[1] + 1, last[2]) == (page, position, size) and not text[0].isdigit():
            merged[-1] = (page, position, size, last[3] + " " + text)
        else:
            merged.append((page, position, size, text))

    def rank(size: float, text: str) -> tuple[float, int]:
        match = _NUMBERED.match(text)
        return (-size, text.split()[0].rstrip(".").count(".") if match else 0)

    levels = {key: i + 1 for i, key in enumerate(sorted({rank(size, text) for _, _, size, text in merged}))}
    headings: dict[int, list[tuple[int, str]]] = {}
    for page, _, size, text in merged:
        headings.setdefault(page, []).append((min(levels[rank(size, text)], 6), text))
    return headings


def headings_by_page(
    doc: pymupdf.Document, cancelled: Callable[[], bool] = lambda: False
) -> tuple[dict[int, list[tuple[int, str]]], bool]:
    """The document's headings per page, and whether they come from its outline (else its fonts).
    Reading the fonts of every page takes seconds for a long PDF: `cancelled` is asked as it goes
    (IngestCancelled is raised), so a Cancel need not wait for it."""
    outline = _toc_by_page(doc)
    return (outline, True) if outline else (_inferred_headings(doc, cancelled), False)
