"""Split a document's Markdown into chunks that keep their page(s), heading path and position.

Sections first: every Markdown heading starts a section, and the section's heading path ("Chapter
2 > 2.1 Sampling") goes with each of its chunks. Then each section is split to about
`INGEST_CHUNK_SIZE` characters with `INGEST_CHUNK_OVERLAP` overlap, preferring paragraph breaks,
then line and sentence breaks (`splitter`). Page numbers come from the character
offsets where each page starts, so a chunk that runs over a page break reports both pages.

The character size is a target, not a promise: an embedder reads only so many tokens (all-MiniLM-L6-v2
256 word pieces, and Finnish or Greek text takes far more pieces per character than English), and
drops the rest without a word. Given the model's `fits` test (rag/providers/limits.py), a piece whose
embedding input (heading path + text) is too long is split again, at a size in proportion to how far
over it is, until every piece fits.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rag import config
from rag.ingest import splitter
from rag.ingest.job import Chunk, PageText

_HEADING_PATTERN = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
# A heading is a line, not a document: a "heading" longer than this is text that starts with "#"
# (a file whose line breaks were lost begins "# Title ## Part …" and goes on for megabytes, and as a
# heading it became every passage's heading path, copied into each passage's embedding input).
MAX_HEADING_CHARS = 300
FENCE = re.compile(r"^\s*(```|~~~)")


def _heading(line: str) -> re.Match[str] | None:
    """The ATX heading on `line` (without its line break), or None."""
    return _HEADING_PATTERN.match(line) if len(line) <= MAX_HEADING_CHARS else None


_PAGE_MARKER = re.compile(r"^<!-- page (\d+) -->$", re.MULTILINE)
# Paragraphs, then lines, then sentence ends, then clauses and words: never mid-word unless forced.
SEPARATORS = ["\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", ""]
MIN_CHUNK_CHARS = 40  # below this a heading path alone may not fit: stop splitting, keep the text


def embedding_text(heading_path: str, text: str) -> str:
    """What the embedding model reads for a chunk. The heading path gives a short passage its
    context ("Loops > While loop")."""
    return f"{heading_path}\n\n{text}" if heading_path else text


@dataclass(frozen=True)
class Section:
    start: int  # offset of the section's first character in the document text
    text: str
    heading_path: str


def compose(pages: Sequence[PageText]) -> str:
    """The document's Markdown as stored: pages joined, each PDF page introduced by a marker line."""
    parts = []
    for page in pages:
        if page.number is not None:
            parts.append(f"<!-- page {page.number} -->")
        parts.append(page.markdown.strip())
    return "\n\n".join(part for part in parts if part)


def decompose(markdown: str) -> list[PageText]:
    """Inverse of `compose` (used by reindex to re-chunk stored Markdown without extracting again)."""
    markers = list(_PAGE_MARKER.finditer(markdown))
    if not markers:
        return [PageText(None, markdown)]
    pages = []
    for i, marker in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(markdown)
        pages.append(PageText(int(marker.group(1)), markdown[marker.end() : end].strip()))
    return pages


def _join_pages(pages: Sequence[PageText]) -> tuple[str, list[int], list[int | None]]:
    text_parts, starts, numbers = [], [], []
    offset = 0
    for page in pages:
        body = page.markdown.strip()
        starts.append(offset)
        numbers.append(page.number)
        text_parts.append(body)
        offset += len(body) + 2
    return "\n\n".join(text_parts), starts, numbers


def document_text(pages: Sequence[PageText]) -> str:
    """The text the chunker splits (pages joined, no page markers): chunks are substrings of it."""
    return _join_pages(pages)[0]


def fence_safe_breaks(text: str) -> list[int]:
    """Offsets of the paragraph breaks in `text` that are outside code fences: where a part of the
    text may start or end and still render as the whole would."""
    breaks, in_fence, offset = [0], False, 0
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            in_fence = not in_fence
        offset += len(line)
        if not in_fence and not line.strip():
            breaks.append(offset)
    breaks.append(len(text))
    return breaks


def split_sections(text: str) -> list[Section]:
    """Sections at ATX headings outside code fences; a heading with no body joins the next section.

    One pass over the lines (linear: a run of 50,000 headings without text once took minutes when
    each heading re-read everything since the last section)."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    start, in_fence, offset = 0, False, 0
    current_path = ""
    has_body = False  # the text since `start` holds a line that is not a heading
    for line in text.splitlines(keepends=True):
        if FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _heading(line.rstrip("\n"))
        if match:
            if has_body:
                sections.append(Section(start, text[start:offset], current_path))
                start, has_body = offset, False
            level = len(match.group(1))
            path = [(lvl, title) for lvl, title in path if lvl < level] + [(level, _clean_heading(match.group(2)))]
            current_path = " > ".join(title for _, title in path)
        elif line.strip() and not _heading(line.rstrip("\n")):
            has_body = True
        offset += len(line)
    if text[start:].strip():
        sections.append(Section(start, text[start:], current_path))
    return sections


def _only_headings(body: str) -> bool:
    return all(_heading(line) for line in body.strip().splitlines() if line.strip())


def _clean_heading(title: str) -> str:
    # Headings keep their words, not their Markdown emphasis or links.
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)
    return re.sub(r"[*_`]+", "", title).strip()


def _pieces(
    text: str, size: int, overlap: int, fits: Callable[[str], bool] | None, heading_path: str
) -> list[tuple[int, str]]:
    """(offset in `text`, stripped piece) at about `size` characters, each fitting the embedder."""
    pieces: list[tuple[int, str]] = []
    for found, piece in splitter.split(text, size, min(overlap, size // 2), SEPARATORS):
        body, start = piece.strip(), max(found, 0)
        if not body:
            continue
        if fits is None or size <= MIN_CHUNK_CHARS or fits(embedding_text(heading_path, body)):
            pieces.append((start, body))
            continue
        # Too many tokens: split this piece again, smaller by at least a quarter, with the overlap
        # scaled alike so neighbours still share a sentence or so.
        smaller = max(MIN_CHUNK_CHARS, min(int(size * 0.75), len(body) * 3 // 4))
        for offset, part in _pieces(piece, smaller, overlap * smaller // size, fits, heading_path):
            pieces.append((start + offset, part))
    return pieces


def chunk_pages(
    pages: Sequence[PageText],
    *,
    chunk_size: int | None = None,
    overlap: int | None = None,
    fits: Callable[[str], bool] | None = None,
) -> list[Chunk]:
    """Chunks of a document given page by page, numbered from 0 in reading order. With `fits` (the
    embedding model's token limit), no chunk's embedding input exceeds what the model reads."""
    text, starts, numbers = _join_pages(pages)
    size = chunk_size or config.ingestion().chunk_size
    overlap = config.ingestion().chunk_overlap if overlap is None else overlap

    def page_at(offset: int) -> int | None:
        return numbers[max(bisect.bisect_right(starts, offset) - 1, 0)] if numbers else None

    chunks: list[Chunk] = []
    for section in split_sections(text):
        for offset, body in _pieces(section.text, size, overlap, fits, section.heading_path):
            if _only_headings(body):
                continue
            begin = section.start + offset
            chunks.append(
                Chunk(
                    position=len(chunks),
                    text=body,
                    page_start=page_at(begin),
                    page_end=page_at(begin + len(body) - 1),
                    heading_path=section.heading_path,
                )
            )
    return chunks
