"""The original behind a passage: a page as an image with the passage marked on it, or the
passage in its section.
Who may see which is decided by `access.rules.get_file_for_source`."""

from __future__ import annotations

import hashlib
import html
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from collections_app.models import FileType, SourceFile
from kernel.errors import NotFound
from kernel.rendering import render_markdown
from rag.index import ChunkStore, IndexedChunk
from rag.ingest import chunking
from rag.ingest.image import image_png
from rag.ingest.pdf import open_pdf, render_png
from rag.ingest.slides import rendered_pdf
from rag.locate import Located, locate_on_page, plain_tokens

PAGE_DPI = 110


def page_image(source: SourceFile, page: int) -> bytes:
    """Page `page` (1-based) of a PDF, a picture or a presentation's slide as PNG, rendered once and
    kept beside the media files."""
    if not has_page_images(source):
        raise NotFound(_("This file has no page images."))
    if not 1 <= page <= (source.pages or 0):
        raise NotFound(_("“%(name)s” has no page %(page)s.") % {"name": source.original_name, "page": page})
    cached = _cache_path(source, page)
    if cached.exists():
        return cached.read_bytes()
    if source.file_type == FileType.IMAGE:
        png = image_png(Path(source.file.path).read_bytes(), source.original_name)
    else:
        doc = open_pdf(_page_pdf(source) or Path(source.file.path), check_streams=False)
        try:
            png = render_png(doc[page - 1], PAGE_DPI)
        finally:
            doc.close()
    cached.parent.mkdir(parents=True, exist_ok=True)
    temporary = cached.with_suffix(".tmp")
    temporary.write_bytes(png)
    temporary.replace(cached)  # another process rendering the same page writes the same bytes
    return png


def _cache_path(source: SourceFile, page: int) -> Path:
    # Inside the collection's folder, so deleting the collection removes them; keyed by content, so
    # a file uploaded again never shows an old picture.
    digest = hashlib.sha256(f"{source.sha256}:{page}:{PAGE_DPI}".encode()).hexdigest()[:32]
    return Path(settings.MEDIA_ROOT) / "collections" / str(source.collection_id) / "pages" / f"{digest}.png"


SECTION_WINDOW = 12_000  # characters of a long section shown around the cited passage


@dataclass(frozen=True)
class CitedSection:
    """A cited passage in its section, rebuilt from the file's stored text: `markdown` is the
    section (or, for a long one, the paragraphs around the passage) once, without the overlaps of
    neighbouring passages; `words` are the passage's words, for the page to mark."""

    heading_path: str
    markdown: str
    words: list[str]
    cut_before: bool
    cut_after: bool


_MATH_HTML = re.compile(r"<math\b.*?</math>", re.DOTALL)
_ANY_TAG = re.compile(r"<[^>]*>")


def shown_words(markdown: str) -> list[str]:
    """The words a reader sees of a passage, rendered as its page renders it: original.js marks the
    page from the passage's first words to its last. Words of the Markdown source that a page does
    not show as text (an ordered list's numbers in a block quote, a code fence's language) broke the
    runs it looks for, so the mark stopped short of a quoted, listed or code part."""
    if sum(1 for line in markdown.splitlines() if chunking.FENCE.match(line)) % 2:
        markdown += "\n```"  # a passage that ends inside a code block: its page shows code, not "```python"
    text = _ANY_TAG.sub(" ", _MATH_HTML.sub(" ", render_markdown(markdown)))
    return plain_tokens(html.unescape(text))


def cited_chunk(source: SourceFile, position: int) -> IndexedChunk:
    chunk = ChunkStore(source.collection_id).file_chunk(source.pk, position)
    if chunk is None:
        raise NotFound(_("That passage is no longer in the file (it was re-indexed); search again."))
    return chunk


def cited_section(source: SourceFile, position: int) -> CitedSection:
    """The section of the passage at `position`, rebuilt from the stored Markdown as the chunker
    split it (so it starts at its heading, never inside a code fence)."""
    cited = cited_chunk(source, position)
    text = chunking.document_text(chunking.decompose(source.markdown))
    sections = [s for s in chunking.split_sections(text) if s.heading_path == cited.heading_path]
    section = next((s for s in sections if cited.text in s.text), None)
    words = shown_words(cited.text)
    if section is None:  # the stored text changed since the passage was indexed: show the passage
        return CitedSection(cited.heading_path, cited.text, words, False, False)
    body = section.text
    at = body.find(cited.text)
    if len(body) <= SECTION_WINDOW:
        return CitedSection(cited.heading_path, body, words, False, False)
    # A long section (a plain-text file is one): the paragraphs around the passage, cut where a
    # paragraph ends outside a code fence, so the part renders as it does in the whole.
    breaks = chunking.fence_safe_breaks(body)
    room = max(0, (SECTION_WINDOW - len(cited.text)) // 2)
    begin = max((b for b in breaks if b <= max(0, at - room)), default=0)
    end = min((b for b in breaks if b >= min(len(body), at + len(cited.text) + room)), default=len(body))
    return CitedSection(cited.heading_path, body[begin:end], words, begin > 0, end < len(body))


def page_markdown(source: SourceFile, page: int) -> str:
    """The stored Markdown of one page (a slide, or a page whose image cannot be shown)."""
    return next((p.markdown for p in chunking.decompose(source.markdown) if p.number == page), "")


def _page_pdf(source: SourceFile) -> Path | None:
    """The PDF whose pages are the file's pages: a PDF itself, or the one LibreOffice made of a
    presentation at ingestion (None when it could not: its slides are shown as text)."""
    if not source.file:
        return None
    if source.file_type == FileType.PDF:
        return Path(source.file.path)
    if source.file_type == FileType.PPTX:
        rendered = rendered_pdf(Path(source.file.path))
        return rendered if rendered.exists() else None
    return None


def has_page_images(source: SourceFile) -> bool:
    return source.file_type == FileType.IMAGE or _page_pdf(source) is not None


def passage_on_page(source: SourceFile, page: int, position: int) -> Located | None:
    """Where the passage at `position` is on page `page` of a PDF or a rendered slide (None for
    other files)."""
    path = _page_pdf(source)
    if path is None:
        return None
    chunk = cited_chunk(source, position)
    doc = open_pdf(path, check_streams=False)
    try:
        return locate_on_page(doc[page - 1], chunk.text)
    finally:
        doc.close()


def skipped_pages(shown: list[int], page: int, pages: int) -> str:
    """Why previous/next on a cited page jump over pages (a student opens only the pages their
    searches returned): a sentence naming the pages left out next to `page`, or "" for none."""
    previous = max((n for n in shown if n < page), default=0)
    following = min((n for n in shown if n > page), default=pages + 1)
    runs = [(first, last) for first, last in ((previous + 1, page - 1), (page + 1, following - 1)) if first <= last]
    if not runs:
        return ""
    named = ", ".join(str(first) if first == last else f"{first}–{last}" for first, last in runs)
    count = sum(last - first + 1 for first, last in runs)
    sentence = ngettext(
        "Page %(pages)s is left out: no search in your chats found a passage on it.",
        "Pages %(pages)s are left out: no search in your chats found a passage on them.",
        count,
    )
    return sentence % {"pages": named}
