"""Reading a PDF again with the other method, on the file itself (no delete and re-upload).

A PDF is read either from its text layer ("fast": quick, but scans give nothing and formulas lose
their layout) or page by page by the vision model (slow, reads scans and formulas). A re-read goes
through the file's usual lifecycle (`lifecycle.requeue`, a new attempt): the teacher's page
corrections are applied again (`lifecycle.build_job`), and the passages already indexed stay
searchable until the new ones replace them (`Index` replaces the file's chunks in one go; a re-read
that fails keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.conf import settings
from django.utils.translation import gettext as _

from collections_app.lifecycle import ACTIVE, requeue
from collections_app.models import FileType, PdfMode, SourceFile
from kernel.errors import Conflict, ServiceUnavailable
from rag.providers import is_available

Method = Literal["fast", "vision"]
PDF_MODE: dict[str, str] = {"fast": PdfMode.FAST, "vision": PdfMode.VLM}


def method_used(source: SourceFile) -> Method | None:
    """How the PDF was last read (None before its first reading, or for other files)."""
    if source.file_type != FileType.PDF:
        return None
    if source.extractor:
        return "fast" if source.extractor.startswith("pdf-fast") else "vision"
    # Never read to the end (failed the first time): the method it was asked for, if one was.
    if source.pdf_mode == PdfMode.FAST:
        return "fast"
    return "vision" if source.pdf_mode == PdfMode.VLM else None


def vision_available() -> bool:
    return is_available(settings.VLM_MODEL)


@dataclass(frozen=True)
class RereadOffer:
    """What the file's page offers: the methods that can be chosen now, the one to suggest (the
    method not used, when pages came out unreadable or formulas need it) and why vision is not
    offered, as a sentence."""

    methods: tuple[Method, ...]
    suggested: Method | None
    vision_missing: str


def reread_offer(source: SourceFile) -> RereadOffer | None:
    """None for a file that cannot be read another way (not a PDF, or queued or running now)."""
    if source.file_type != FileType.PDF or source.status in ACTIVE:
        return None
    vision = vision_available()
    methods: tuple[Method, ...] = ("fast", "vision") if vision else ("fast",)
    used = method_used(source)
    needs_other = bool(source.unreadable_pages) or source.status == "failed" or "formulas" in source.notes
    suggested: Method | None = None
    if used == "fast" and needs_other:
        suggested = "vision"
    elif used == "vision" and (source.unreadable_pages or source.flagged_pages):
        suggested = "fast"
    missing = (
        ""
        if vision
        else _(
            "Reading with the vision model is not possible right now: the server has no vision model "
            "available. Ask your administrator to connect one."
        )
    )
    return RereadOffer(methods, suggested, missing)


def reread_file(source: SourceFile, method: Method) -> SourceFile:
    """Read a PDF again from scratch with `method` ("fast" or "vision"), kept as the file's method
    for later retries and re-indexes. Refused with a sentence for a file that is not a PDF, one
    being read now, or "vision" when no vision model is available."""
    if source.file_type != FileType.PDF:
        raise Conflict(
            _("“%(name)s” is not a PDF; only PDFs can be read with another method.") % {"name": source.original_name}
        )
    if source.status in ACTIVE:
        raise Conflict(
            _("“%(name)s” is being read now; cancel it first, or wait until it is done.")
            % {"name": source.original_name}
        )
    if method == "vision" and not vision_available():
        raise ServiceUnavailable(
            _(
                "“%(name)s” cannot be read with the vision model now: the server has no vision model available. "
                "Read it with fast extraction, or ask your administrator to connect one."
            )
            % {"name": source.original_name}
        )
    SourceFile.objects.filter(pk=source.pk).update(pdf_mode=PDF_MODE[method])
    return requeue(source, re_extract=True)
