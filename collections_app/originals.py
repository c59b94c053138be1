"""The original behind a passage: a PDF page as an image, or a text file's section around it.
Who may see which is decided by `accounts.permissions.get_file_for_source`."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils.translation import gettext as _

from collections_app.models import FileType, SourceFile
from currechat.errors import NotFound
from rag.index import ChunkStore, IndexedChunk
from rag.ingest.pdf import open_pdf, render_png

PAGE_DPI = 110
CONTEXT_CHUNKS = 2  # passages shown before and after the cited one


def page_image(source: SourceFile, page: int) -> bytes:
    """Page `page` (1-based) of a PDF as PNG, rendered once and kept beside the media files."""
    if source.file_type != FileType.PDF:
        raise NotFound(_("This file has no pages."))
    if not 1 <= page <= (source.pages or 0):
        raise NotFound(_("“%(name)s” has no page %(page)s.") % {"name": source.original_name, "page": page})
    cached = _cache_path(source, page)
    if cached.exists():
        return cached.read_bytes()
    doc = open_pdf(Path(source.file.path), check_streams=False)
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


@dataclass(frozen=True)
class SectionContext:
    cited: IndexedChunk
    before: list[IndexedChunk]
    after: list[IndexedChunk]


def section_context(source: SourceFile, position: int) -> SectionContext:
    """The cited passage with its neighbours from the same section, in reading order."""
    chunks = ChunkStore(source.collection_id).file_chunks(source.pk)
    index = next((i for i, c in enumerate(chunks) if c.position == position), None)
    if index is None:
        raise NotFound(_("That passage is no longer in the file (it was re-indexed); search again."))
    cited = chunks[index]
    same = [c for c in chunks if c.heading_path == cited.heading_path]
    at = same.index(cited)
    return SectionContext(cited, same[max(0, at - CONTEXT_CHUNKS) : at], same[at + 1 : at + 1 + CONTEXT_CHUNKS])
