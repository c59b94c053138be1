"""PDF pages to Markdown: a vision-language model reads each page image, or PyMuPDF's text layer.

One module per job: `safety` (the checks made on opening a file, before any page is extracted),
`headings` (from the outline, else inferred from the fonts), `text_layer` (the fast path, and the
fallback for pages the model cannot read), `images` (a page as PNG) and `vlm` (the model loop).
"""

from __future__ import annotations

from rag.ingest.pdf.headings import headings_by_page
from rag.ingest.pdf.images import render_png
from rag.ingest.pdf.safety import open_pdf
from rag.ingest.pdf.text_layer import fast_pages, page_blocks, page_text
from rag.ingest.pdf.vlm import PICTURE_REQUEST, clean_vlm_markdown, read_image, vlm_pages

__all__ = [
    "PICTURE_REQUEST",
    "read_image",
    "clean_vlm_markdown",
    "fast_pages",
    "headings_by_page",
    "open_pdf",
    "page_blocks",
    "page_text",
    "render_png",
    "vlm_pages",
]
