"""PDF pages to Markdown from PyMuPDF's text layer (the fast path, and the VLM path's fallback)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag.ingest.job import IngestCancelled, PageText
from rag.ingest.pdf.headings import headings_by_page, repeat_key

if TYPE_CHECKING:  # imported where it is used: see rag/ingest/pdf/safety.py
    import pymupdf

ProgressFn = Callable[[int], None]  # pages done so far
CancelledFn = Callable[[], bool]


def _block_text(lines: list[str]) -> str:
    # Prose lines fill the column and are joined into one paragraph; short lines (code, lists) stay.
    lines = [line.rstrip() for line in lines if line.strip()]
    if not lines:
        return ""
    if sum(map(len, lines)) / len(lines) < 50:
        return "\n".join(lines)
    joined = lines[0]
    for line in lines[1:]:
        if joined.endswith("-") and line[:1].islower():
            joined = joined[:-1] + line
        else:
            joined += " " + line.lstrip()
    return joined


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def page_blocks(page: pymupdf.Page, headings: list[tuple[int, str]], outline: bool = True) -> list[str]:
    """A page's text layer as Markdown paragraphs, with its headings marked as headings.

    An outline's heading that no block shows is added at the top of its page (the outline says it
    starts there); a heading inferred from the fonts always comes from the page's own blocks, one
    or a few consecutive ones (a title over several lines), which become the heading."""
    blocks = []
    for block in page.get_text("blocks", sort=False):
        if block[6] != 0:  # image block
            continue
        text = _block_text(block[4].splitlines())
        # Plain text is not Markdown: a leading "#" (a code comment) must not become a heading.
        if text:
            blocks.append(re.sub(r"^(\s*)#", r"\1\\#", text, flags=re.MULTILINE))
    for level, title in reversed(headings):
        marker = "#" * level + " "
        for i, block in enumerate(blocks):
            flat = " ".join(block.split())
            if outline and flat.casefold().endswith(title.casefold()) and len(flat) <= len(title) + 12:
                # Keep the numbering the page shows ("2.4 Setting up ..."), else the outline's wording.
                blocks[i] = marker + (flat if flat.endswith(title) else title)
                break
            if not outline and (end := _spans_title(blocks, i, title)):
                blocks[i:end] = [marker + title]
                break
        else:
            if outline:
                blocks.insert(0, marker + title)
    return blocks


def _spans_title(blocks: list[str], start: int, title: str) -> int | None:
    """The end of the run of blocks from `start` whose text together is `title`, if there is one."""
    wanted, joined = _flat(title), ""
    for end in range(start, min(start + 4, len(blocks))):
        joined = f"{joined} {_flat(blocks[end])}".strip()
        if joined == wanted:
            return end + 1
        if not wanted.startswith(joined):
            return None
    return None


def page_text(page: pymupdf.Page, headings: list[tuple[int, str]], outline: bool = True) -> str:
    return "\n\n".join(page_blocks(page, headings, outline))


def _drop_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Remove running headers and footers: edge blocks repeated (digits aside) on most pages."""
    if len(pages) < 4:
        return pages

    counts: dict[str, int] = {}
    for blocks in pages:
        for block in set(blocks[:2] + blocks[-2:]):
            counts[repeat_key(block)] = counts.get(repeat_key(block), 0) + 1
    running = {k for k, n in counts.items() if n >= max(3, len(pages) // 2) and not k.startswith("#")}
    cleaned = []
    for blocks in pages:
        edge = set(range(min(2, len(blocks)))) | set(range(max(len(blocks) - 2, 0), len(blocks)))
        kept = [b for i, b in enumerate(blocks) if i not in edge or repeat_key(b) not in running]
        # A page whose every block looks "running" (one line per page, "Slide 3: ...") is content,
        # not a header: keep it rather than delete the document and call it scanned.
        cleaned.append(kept or blocks)
    return cleaned


def fast_pages(doc: pymupdf.Document, progress: ProgressFn, cancelled: CancelledFn) -> list[PageText]:
    headings, outline = headings_by_page(doc, cancelled)
    pages = []
    for index in range(doc.page_count):
        page = doc[index]
        if index % 10 == 0 and cancelled():
            raise IngestCancelled
        pages.append(page_blocks(page, headings.get(index + 1, []), outline))
        progress(index + 1)
    return [PageText(i + 1, "\n\n".join(blocks)) for i, blocks in enumerate(_drop_running_lines(pages))]
