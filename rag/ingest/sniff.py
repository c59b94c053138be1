"""What an upload really is, judged by its content rather than its name.

A PDF must start with the PDF signature; anything else must decode as text (UTF-8, UTF-16/32
with a byte-order mark, or the charset the file itself declares) and must not be binary data.
"""

from __future__ import annotations

import codecs
import re
from pathlib import PurePath

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from rag.ingest.job import IngestFailed, UnsupportedContent

# Well-known binary formats, so the refusal can say what the file is and what to do instead.
_SIGNATURES = [
    (b"PK\x03\x04", gettext_lazy("a ZIP archive or an Office document (.docx, .pptx, .xlsx, .odt)")),
    (b"\xd0\xcf\x11\xe0", gettext_lazy("an old Microsoft Office document (.doc, .ppt, .xls)")),
    (b"\x89PNG", gettext_lazy("a PNG image")),
    (b"\xff\xd8\xff", gettext_lazy("a JPEG image")),
    (b"RIFF", gettext_lazy("a WebP image or a sound file")),
    (b"GIF8", gettext_lazy("a GIF image")),
    (b"\x1f\x8b", gettext_lazy("a gzip archive")),
    (b"\x7fELF", gettext_lazy("a program")),
    (b"MZ", gettext_lazy("a Windows program")),
    (b"{\\rtf", gettext_lazy("an RTF document")),
]
_BOMS = [
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
]
_DECLARED = [
    re.compile(rb"<meta[^>]+charset=[\"']?([A-Za-z0-9_.:-]+)", re.IGNORECASE),
    re.compile(rb"<\?xml[^>]+encoding=[\"']([A-Za-z0-9_.:-]+)", re.IGNORECASE),
    re.compile(rb"-\*-\s*coding:\s*([A-Za-z0-9_.-]+)", re.IGNORECASE),
]
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd"}
CONVERT_HINT = gettext_lazy("Save it as PDF, Markdown or plain text (UTF-8) and upload that.")


def is_pdf(head: bytes) -> bool:
    # The PDF specification allows the header anywhere in the first 1024 bytes.
    return b"%PDF-" in head[:1024]


def detect_type(name: str, head: bytes) -> str:
    """The file type ("pdf", "html", "markdown", "text") from the first bytes and the name."""
    suffix = PurePath(name).suffix.lower()
    if is_pdf(head):
        return "pdf"
    if suffix == ".pdf":
        raise UnsupportedContent(_with_hint(_("“%(name)s” is named like a PDF but is not one.") % {"name": name}))
    for signature, what in _SIGNATURES:
        if head.startswith(signature):
            raise UnsupportedContent(_with_hint(_("“%(name)s” is %(what)s, not text.") % {"name": name, "what": what}))
    if suffix in HTML_SUFFIXES:
        return "html"
    if suffix in MARKDOWN_SUFFIXES:
        return "markdown"
    if re.match(rb"\s*(<!doctype html|<html)", head[:512], re.IGNORECASE):
        return "html"
    return "text"


def detect_upload_type(name: str, data: bytes) -> str:
    """The type of a file uploaded to a collection: besides what `detect_type` knows, PowerPoint
    ("pptx") and Word ("docx") documents, pictures ("image") and caption files ("transcript"),
    each recognised by its content. Refuses, with a sentence, what none of the readers can read."""
    # Here, not at the top: every web process imports this module (collections_app.files), and
    # these readers load python-docx, python-pptx, Pillow and webvtt (~0.2 s of CPU), which wait
    # for the first upload.
    from rag.ingest.image import is_image
    from rag.ingest.office import office_kind
    from rag.ingest.transcript import transcript_format

    head = data[:1024]
    if not is_pdf(head):
        if head.startswith(b"PK\x03\x04"):
            return office_kind(data, name)
        if is_image(head):
            return "image"
    file_type = detect_type(name, head)
    if file_type == "text" and transcript_format(decode_text(data, name)):
        return "transcript"
    return file_type


def _declared_charset(data: bytes) -> str | None:
    head = data[:4096]
    for pattern in _DECLARED:
        match = pattern.search(head)
        if match:
            try:
                return codecs.lookup(match.group(1).decode("ascii")).name
            except LookupError:
                return None
    return None


def decode_text(data: bytes, name: str) -> str:
    """The text of an upload; refuses binary data and text in an undeclared legacy encoding."""
    if not data.strip():
        raise IngestFailed(_("“%(name)s” is empty. Check that you picked the right file.") % {"name": name})
    text = None
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            text = _try_decode(data, encoding)
            break
    else:
        if b"\x00" in data[:65536]:  # binary, or UTF-16 written without a byte-order mark
            text = _utf16_without_bom(data)
            if text is None:
                raise UnsupportedContent(_binary(name))
        else:
            text = _try_decode(data, "utf-8")
        if text is None and (declared := _declared_charset(data)):
            text = _try_decode(data, declared)
    if text is None:
        raise UnsupportedContent(
            _(
                "“%(name)s” is not UTF-8 or UTF-16 text and does not declare its character set. "
                "Save it as UTF-8 (most editors offer this under “Save as” → “Encoding”) and upload it again."
            )
            % {"name": name}
        )
    if _looks_binary(text):
        raise UnsupportedContent(_binary(name))
    if not text.strip():
        raise IngestFailed(
            _("“%(name)s” contains only blank space. Check that you picked the right file.") % {"name": name}
        )
    return text


def _binary(name: str) -> str:
    return _with_hint(_("“%(name)s” contains binary data, not text.") % {"name": name})


def _with_hint(refusal: str) -> str:
    return f"{refusal} {CONVERT_HINT}"


def _utf16_without_bom(data: bytes) -> str | None:
    sample = data[:4096]
    even, odd = sample[0::2].count(0), sample[1::2].count(0)
    # ASCII-heavy UTF-16 has a zero in every other byte; binary data has zeros anywhere.
    if odd > len(sample) // 4 and even == 0:
        return _try_decode(data, "utf-16-le")
    if even > len(sample) // 4 and odd == 0:
        return _try_decode(data, "utf-16-be")
    return None


def _try_decode(data: bytes, encoding: str) -> str | None:
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return None


def _looks_binary(text: str) -> bool:
    sample = text[:65536]
    if "\x00" in sample:
        return True
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f\b")
    return controls > max(8, len(sample) // 100)
