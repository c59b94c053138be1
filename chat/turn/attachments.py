"""A file a student attaches to one message: checked and read the way uploads are (ingestion's
own sniffing and fast PDF path), kept as text with that message, never added to any collection."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from chat.metering.tokens import estimate_tokens
from chat.turn.budget import MessageTooLong
from kernel.formats import file_size, number
from rag.ingest import sniff
from rag.ingest.html import html_to_markdown
from rag.ingest.job import IngestFailed, TooLarge
from rag.ingest.pdf import fast_pages, open_pdf
from rag.text import normalize_text


@dataclass(frozen=True)
class Attachment:
    name: str
    text: str
    pages: int | None
    size: int


def check_size(name: str, size: int) -> None:
    """Refuses an attachment over CHAT_ATTACHMENT_MAX_BYTES (callers may check before reading it)."""
    limit = settings.CHAT_ATTACHMENT_MAX_BYTES
    if size > limit:
        raise TooLarge(
            _("“%(name)s” is %(size)s; attachments may be at most %(limit)s. Attach the part you are asking about.")
            % {"name": name, "size": file_size(size), "limit": file_size(limit)}
        )


def read_attachment(name: str, data: bytes) -> Attachment:
    """The attachment's text. Raises IngestFailed/TooLarge/UnsupportedContent with the sentences
    uploads get, and MessageTooLong when its text cannot fit in a model's context."""
    name = (name or "attachment").rsplit("/", 1)[-1][:200]
    check_size(name, len(data))
    if not data:
        raise IngestFailed(_("“%(name)s” is empty. Check that you picked the right file.") % {"name": name})
    kind = sniff.detect_type(name, data[:1024])
    pages = None
    if kind == "pdf":
        text, pages = _pdf_text(name, data)
    else:
        text = sniff.decode_text(data, name)
        if kind == "html":
            text = html_to_markdown(text)
    text = normalize_text(text).strip()
    if not text:
        sentence = _("No text could be found in “%(name)s”. If it is a scan, copy the text you mean instead.")
        raise IngestFailed(sentence % {"name": name})
    if estimate_tokens(text) > settings.CHAT_ATTACHMENT_MAX_TOKENS:
        raise MessageTooLong(
            _(
                "“%(name)s” is too long for the assistant to read with your question (about %(tokens)s tokens; "
                "it has room for %(room)s). Attach a shorter excerpt."
            )
            % {
                "name": name,
                "tokens": number(estimate_tokens(text)),
                "room": number(settings.CHAT_ATTACHMENT_MAX_TOKENS),
            }
        )
    return Attachment(name=name, text=text, pages=pages, size=len(data))


def _pdf_text(name: str, data: bytes) -> tuple[str, int]:
    doc = open_pdf(data)
    try:
        limit = settings.CHAT_ATTACHMENT_MAX_PAGES
        if doc.page_count > limit:
            raise TooLarge(
                _(
                    "“%(name)s” has %(pages)s pages; attachments may have at most %(limit)s. "
                    "Attach the pages you are asking about."
                )
                % {"name": name, "pages": doc.page_count, "limit": limit}
            )
        pages = fast_pages(doc, progress=lambda done: None, cancelled=lambda: False)
        return "\n\n".join(p.markdown for p in pages), doc.page_count
    finally:
        doc.close()


def model_text(question: str, name: str, text: str) -> str:
    """The student's message as the model reads it, with the attachment's text fenced as data."""
    return f"{question}\n\nThe student attached the file “{name}”. Its text:\n<attachment>\n{text}\n</attachment>"
