"""Checks on opening a PDF, before any page is extracted: the file must open, must not need a
password, must stay under the page limit, and no stream may inflate beyond `INGEST_MAX_STREAM_BYTES`
(a "decompression bomb" would otherwise exhaust the worker's memory)."""

from __future__ import annotations

import logging
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernel.formats import number
from rag import config
from rag.ingest.job import IngestFailed, TooLarge

if TYPE_CHECKING:  # imported where it is used: see open_pdf
    import pymupdf

log = logging.getLogger(__name__)

DAMAGED = gettext_lazy(
    "This PDF is damaged and cannot be read. Open it in a PDF viewer, save or print it as a new PDF, and upload that."
)


def open_pdf(source: Path | bytes, *, check_streams: bool = True) -> pymupdf.Document:
    """Open a PDF for extraction, refusing files that would fail or harm the worker."""
    # Imported here, not at the top: importing pymupdf loads pymupdf.layout and its ONNX model
    # (~2 s), and every Django start (server, worker, manage.py) imports this module through the
    # admin and the ingest pipeline, though only ingestion and page views open a PDF.
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)  # damaged files are reported to the teacher, not to stderr
    try:
        doc = pymupdf.open(stream=source, filetype="pdf") if isinstance(source, bytes) else pymupdf.open(source)
    except (pymupdf.FileDataError, RuntimeError, ValueError) as exc:
        log.info("PDF does not open: %s", exc)
        raise IngestFailed(str(DAMAGED)) from exc
    if doc.needs_pass:
        raise IngestFailed(
            _(
                "This PDF is password-protected. Remove the password (for example, open it and print it to a "
                "new PDF) and upload it again."
            )
        )
    if doc.page_count == 0:
        raise IngestFailed(str(DAMAGED))
    limit = config.ingestion().max_pdf_pages
    if doc.page_count > limit:
        raise TooLarge(
            _(
                "This PDF has %(pages)s pages; the limit is %(limit)s. Split it into parts (for example, "
                "one per chapter) and upload those."
            )
            % {"pages": number(doc.page_count), "limit": number(limit)}
        )
    if check_streams:
        _check_streams(doc)
    return doc


def _check_streams(doc: pymupdf.Document) -> None:
    max_bytes, max_pixels = config.ingestion().max_stream_bytes, config.ingestion().max_image_pixels
    too_big = TooLarge(
        _(
            "This PDF contains an object that expands to more than the server accepts (it may be damaged or "
            "built to overload the server). Print it to a new PDF and upload that, or upload its text."
        )
    )
    for xref in range(1, doc.xref_length()):
        try:
            if not doc.xref_is_stream(xref):
                continue
            if doc.xref_get_key(xref, "Subtype")[1] == "/Image":
                width, height = (_int_key(doc, xref, k) for k in ("Width", "Height"))
                if width * height > max_pixels:
                    raise too_big
            if (
                "FlateDecode" in doc.xref_get_key(xref, "Filter")[1]
                and _inflated_size(doc.xref_stream_raw(xref), max_bytes) > max_bytes
            ):
                raise too_big
        except (RuntimeError, ValueError, zlib.error):
            continue  # an unreadable object: extraction will cope with it or report the file as damaged


def _int_key(doc: pymupdf.Document, xref: int, key: str) -> int:
    kind, value = doc.xref_get_key(xref, key)
    return int(float(value)) if kind in ("int", "float") else 0


def _inflated_size(raw: bytes, limit: int) -> int:
    """Size of a zlib stream once inflated, counting only up to just past `limit`."""
    inflater = zlib.decompressobj()
    total, pending = 0, raw
    while pending and total <= limit:
        total += len(inflater.decompress(pending, 1 << 20))
        pending = inflater.unconsumed_tail
    return total
