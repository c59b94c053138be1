"""The steps of ingestion, in order. Each reads and writes the shared `IngestJob`.

A step raises `IngestFailed` with a sentence for the teacher when the file cannot be ingested,
`ProviderError`/Redis errors when a service failed (the loop in `pipeline.py` retries those), and
`IngestCancelled` when `ctx.cancelled()` says the teacher stopped the file.
"""

from __future__ import annotations

import re
from typing import Protocol

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from kernel.errors import ProviderError
from kernel.formats import number
from rag import config
from rag.index import CollectionIndex, IndexedChunk
from rag.ingest import chunking, office, pdf, review, slides
from rag.ingest.embedding import embed_texts
from rag.ingest.html import html_to_markdown
from rag.ingest.image import NEEDS_VISION, image_png
from rag.ingest.job import IngestFailed, IngestJob, PageText, TooLarge
from rag.ingest.pdf.formulas import is_math_heavy
from rag.ingest.sniff import decode_text
from rag.ingest.transcript import transcript_markdown
from rag.providers import is_available, limits
from rag.text import normalize_text

MATH_NEEDS_VISION = gettext_lazy(
    "This PDF is full of formulas, and fast extraction reads them as loose symbols without their layout. "
    "Read it again with the vision model for the formulas to come out right."
)


class Context(Protocol):
    """What the loop offers a step: progress within the step's share, and the cancel check."""

    def progress(self, fraction: float, detail: str, *, of: tuple[int, int] | None = None) -> None: ...

    def cancelled(self) -> bool: ...


class Step(Protocol):
    name: str
    share: tuple[int, int]  # the part of the 0-100 progress bar this step fills

    def run(self, job: IngestJob, ctx: Context) -> None: ...


def expected_extractor(job: IngestJob) -> str:
    """Which extractor this run will use: also the key under which extracted Markdown is reused."""
    if job.file_type == "image":
        return f"image-vlm:{config.ingestion().vlm_model}"
    if job.file_type == "pptx":
        model = config.ingestion().vlm_model
        return f"pptx+vlm:{model}" if is_available(model, fresh=True) else "pptx"
    if job.file_type != "pdf":
        return job.file_type
    if job.pdf_mode == "fast" or not is_available(config.ingestion().vlm_model, fresh=True):
        return "pdf-fast"
    return f"pdf-vlm:{config.ingestion().vlm_model}"


class Extract:
    name, share = "extract", (0, 60)

    def run(self, job: IngestJob, ctx: Context) -> None:
        if job.pages:  # re-chunking stored Markdown, or Markdown reused from an identical file
            if job.file_type == "pptx":  # reused text still needs this file's slide images
                self._slide_images(job, ctx)
            return
        data = job.path.read_bytes()
        if job.file_type == "pdf":
            self._pdf(job, data, ctx)
        elif job.file_type == "pptx":
            self._pptx(job, data, ctx)
        elif job.file_type == "image":
            self._image(job, data, ctx)
        elif job.file_type == "docx":
            job.pages = [PageText(None, office.docx_markdown(data))]
            job.extractor = job.file_type
        else:
            text = decode_text(data, job.file_name)
            if job.file_type == "html":
                text = html_to_markdown(text)
            elif job.file_type == "transcript":
                text = transcript_markdown(text, job.file_name)
            elif job.file_type == "text":
                text = re.sub(r"^(\s*)#", r"\1\\#", text, flags=re.MULTILINE)  # plain text has no headings
            job.pages = [PageText(None, text)]
            job.extractor = job.file_type
        ctx.progress(1.0, _("Text extracted"))

    def _image(self, job: IngestJob, data: bytes, ctx: Context) -> None:
        png = image_png(data, job.file_name)
        if not is_available(config.ingestion().vlm_model, fresh=True):
            raise IngestFailed(str(NEEDS_VISION % {"name": job.file_name, "model": config.ingestion().vlm_model}))
        job.extractor, job.page_count = expected_extractor(job), 1
        job.pages = [PageText(1, pdf.read_image(config.ingestion().vlm_model, png, ctx.cancelled))]
        job.flagged_pages = list(review.flag_pages(job.pages, {1: None}))

    def _pptx(self, job: IngestJob, data: bytes, ctx: Context) -> None:
        job.extractor = expected_extractor(job)
        missed: list[int] = []

        def describe(blob: bytes, slide: int) -> str:
            try:
                png = image_png(blob, job.file_name)
            except IngestFailed:  # a drawing format the model cannot take (EMF, WMF): its alt text stays
                return ""
            try:
                request = pdf.PICTURE_REQUEST.format(slide=slide)
                return pdf.read_image(config.ingestion().vlm_model, png, ctx.cancelled, request)
            except ProviderError:
                missed.append(slide)
                return ""

        vision = job.extractor != "pptx"
        job.pages = office.pptx_pages(data, describe if vision else None, ctx.cancelled)
        job.page_count = len(job.pages)
        self._slide_images(job, ctx)
        if missed:
            job.extractor += " (partial)"  # never reused: a retry should try the model again
            job.notes.append(
                _(
                    "The vision model could not describe the pictures on slides %(pages)s; their alt text was used "
                    "instead. Retry the file to try them again."
                )
                % {"pages": _ranges(sorted(set(missed)))}
            )

    def _slide_images(self, job: IngestJob, ctx: Context) -> None:
        """The slides' pictures (LibreOffice's PDF of the deck); without them their text is shown,
        and the note says why. A note copied with reused text is replaced by this run's finding."""
        ctx.progress(0.9, _("Drawing the slides"))
        job.notes = [note for note in job.notes if not slides.is_note(note)]
        if note := slides.render(job.path, job.page_count or len(job.pages), ctx.cancelled):
            job.notes.append(note)

    def _pdf(self, job: IngestJob, data: bytes, ctx: Context) -> None:
        doc = pdf.open_pdf(data)
        try:
            job.page_count = total = doc.page_count
            if doc.is_repaired:
                job.notes.append(
                    _(
                        "This PDF was damaged and had to be repaired, so some of its text may be missing. Check the "
                        "extracted text below; if parts are missing, save or print the PDF anew and upload that."
                    )
                )

            def pages_done(done: int) -> None:
                ctx.progress(
                    done / total,
                    _("Page %(done)s of %(total)s read") % {"done": number(done), "total": number(total)},
                    of=(done, total),
                )

            job.extractor = expected_extractor(job)
            if job.extractor == "pdf-fast":
                if job.pdf_mode == "vlm":
                    job.notes.append(
                        _(
                            "The vision model was not reachable, so the PDF's own text was used; "
                            "tables and math may have lost their layout. Retry when the model is back."
                        )
                    )
                job.pages = pdf.fast_pages(doc, pages_done, ctx.cancelled)
                if is_math_heavy(p.markdown for p in job.pages):
                    job.notes.append(str(MATH_NEEDS_VISION))
                return
            job.pages, fallbacks = pdf.vlm_pages(doc, config.ingestion().vlm_model, pages_done, ctx.cancelled)
            layers: dict[int, str | None] = {i + 1: doc[i].get_text() for i in range(total)}
            job.flagged_pages = list(review.flag_pages(job.pages, layers, frozenset(fallbacks)))
            if fallbacks:
                job.extractor += " (partial)"  # never reused: a retry should try the model again
                job.notes.append(
                    ngettext(
                        "The vision model could not read page %(pages)s; the PDF's own text was used there instead "
                        "(tables and math may have lost their layout). Retry the file to try those pages again.",
                        "The vision model could not read pages %(pages)s; the PDF's own text was used there instead "
                        "(tables and math may have lost their layout). Retry the file to try those pages again.",
                        len(fallbacks),
                    )
                    % {"pages": _ranges(fallbacks)}
                )
        finally:
            doc.close()


def _ranges(numbers: list[int]) -> str:
    parts, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            parts.append(str(start) if start == n else f"{start}–{n}")
            start = None
    return ", ".join(parts)


def page_quality(pages: list[PageText]) -> tuple[list[int], list[int]]:
    """The numbers of the pages with no text, and of those whose text (digits, punctuation and case
    aside) is the same on at least 3 pages and a tenth of the file: a scan's placeholder, a page
    number alone. Files without pages have none of either."""
    keys = {p.number: re.sub(r"[\d\W_]+", " ", p.markdown).casefold().strip() for p in pages if p.number is not None}
    empty = [n for n, key in keys.items() if not key]
    counts: dict[str, int] = {}
    for key in keys.values():
        if key:
            counts[key] = counts.get(key, 0) + 1
    limit = max(3, len(keys) // 10)
    repeated = [n for n, key in keys.items() if key and counts[key] >= limit]
    return empty, repeated


class Correct:
    """The teacher's corrections replace what extraction gave for their pages (also when the pages
    were reused rather than extracted), so a correction survives Retry and re-index; a corrected
    page is no longer flagged: the teacher has checked it."""

    name, share = "correct", (60, 60)

    def run(self, job: IngestJob, ctx: Context) -> None:
        if not job.corrections:
            return
        job.pages = review.apply_corrections(job.pages, job.corrections)
        job.flagged_pages = [f for f in job.flagged_pages if f["page"] not in job.corrections]


class Normalize:
    name, share = "normalize", (60, 62)

    def run(self, job: IngestJob, ctx: Context) -> None:
        job.pages = [PageText(p.number, normalize_text(p.markdown)) for p in job.pages]
        job.empty_pages, job.repeated_pages = page_quality(job.pages)
        chars = sum(len(p.markdown) for p in job.pages)
        if chars > config.ingestion().max_text_chars:
            raise TooLarge(
                _(
                    "This file holds %(chars)s characters of text; the limit is %(limit)s. "
                    "Split it into smaller files and upload those."
                )
                % {"chars": number(chars), "limit": number(config.ingestion().max_text_chars)}
            )
        if chars == 0 and job.file_type == "pdf" and job.pdf_mode == "fast":
            raise IngestFailed(
                _(
                    "No text could be found in this PDF (it is probably scanned pages), and fast extraction reads "
                    "only selectable text. Read it again with the vision model (on the file's page), or upload a "
                    "version of the file with selectable text."
                )
            )
        if chars == 0 and job.file_type == "pdf":
            raise IngestFailed(
                _(
                    "No text could be found in this PDF (it is probably scanned pages) and the vision model "
                    "that could read the images is not available. Ask your administrator to "
                    "connect it and press Retry, or upload a version of the file with selectable text."
                )
            )
        if chars == 0:
            sentence = _("“%(name)s” contains no text to index. Check that you picked the right file.")
            raise IngestFailed(sentence % {"name": job.file_name})


class Chunk:
    name, share = "chunk", (62, 65)

    def run(self, job: IngestJob, ctx: Context) -> None:
        # Cut to what the collection's embedding model reads (its token limit), not only to characters.
        job.chunks = chunking.chunk_pages(job.pages, fits=limits.limit_for(job.embedding_model).fits)
        job.markdown = chunking.compose(job.pages)
        if not job.chunks:
            sentence = _("“%(name)s” has headings but no text under them. Add the text and upload again.")
            raise IngestFailed(sentence % {"name": job.file_name})
        ctx.progress(1.0, ngettext("%(n)s passage", "%(n)s passages", len(job.chunks)) % {"n": number(len(job.chunks))})


def embedding_input(chunk) -> str:
    return chunking.embedding_text(chunk.heading_path, chunk.text)


class Embed:
    name, share = "embed", (65, 97)

    def run(self, job: IngestJob, ctx: Context) -> None:
        total = len(job.chunks)

        def done(count: int) -> None:
            ctx.progress(
                count / max(total, 1),
                _("%(count)s of %(total)s passages made searchable") % {"count": number(count), "total": number(total)},
                of=(count, total),
            )

        job.vectors, job.cached_vectors = embed_texts(
            [embedding_input(c) for c in job.chunks], job.embedding_model, progress=done, cancelled=ctx.cancelled
        )


class Index:
    name, share = "index", (97, 100)

    def run(self, job: IngestJob, ctx: Context) -> None:
        index = CollectionIndex(job.collection_id, job.language, len(job.vectors[0]))
        index.replace_file(
            job.file_id,
            [
                IndexedChunk(
                    file_id=job.file_id,
                    position=c.position,
                    text=c.text,
                    file_name=job.file_name,
                    page_start=c.page_start,
                    page_end=c.page_end,
                    heading_path=c.heading_path,
                    embedding=v,
                )
                for c, v in zip(job.chunks, job.vectors, strict=True)
            ],
        )


STEPS: list[Step] = [Extract(), Correct(), Normalize(), Chunk(), Embed(), Index()]
