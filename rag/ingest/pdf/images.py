"""A PDF page as a PNG image for the vision model."""

from __future__ import annotations

import struct
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where it is used: see rag/ingest/pdf/safety.py
    import pymupdf


def _png(width: int, height: int, rgb: bytes) -> bytes:
    """A minimal PNG writer: faster than MuPDF's encoder, and zlib releases the GIL meanwhile."""
    stride = width * 3
    raw = b"".join(b"\x00" + rgb[y * stride : (y + 1) * stride] for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 3)) + chunk(b"IEND", b"")


def render_png(page: pymupdf.Page, dpi: int, max_side: int = 2000) -> bytes:
    """The page as a PNG image for the vision model."""
    # Cap the longest side: an oversized page (a poster) must not become a gigantic image.
    zoom = dpi / 72
    longest = max(page.rect.width, page.rect.height) * zoom
    if longest > max_side:
        zoom *= max_side / longest
    import pymupdf  # loaded by open_pdf already; not at the top, see there

    pix = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False, colorspace=pymupdf.csRGB)
    return _png(pix.width, pix.height, pix.samples)
