"""A guided prompt's protected material: its rules, and the files a teacher adds to it.

Files (.txt, .md, .pdf) are read the way uploads are (ingestion's sniffing and fast PDF path) and
their text is appended to `Prompt.protected_material`, under the file's name. They are never added
to a collection: nothing of them is indexed, so no search, citation or passage pane can show it.
The material goes into the model's system message at every turn of a guided prompt, so its size is
bounded by TUTOR_PROTECTED_MAX_TOKENS.
"""

from __future__ import annotations

from pathlib import PurePath

from django.conf import settings
from django.utils.translation import gettext as _

from chat.metering.tokens import estimate_tokens
from chat.models import TutorMode
from kernel.errors import InvalidInput
from kernel.formats import file_size, number
from rag.ingest import sniff
from rag.ingest.job import IngestFailed
from rag.ingest.pdf import fast_pages, open_pdf
from rag.text import normalize_text

SUFFIXES = (".txt", ".md", ".markdown", ".pdf")
MAX_FILE_BYTES = 10 * 1024 * 1024


def clean_tutor_mode(value) -> str:
    if value not in TutorMode.values:
        allowed = ", ".join(TutorMode.values)
        sentence = _("'%(value)s' is not a valid tutor mode; choose one of: %(allowed)s.")
        raise InvalidInput(sentence % {"value": value, "allowed": allowed}, field="tutor_mode")
    return value


def clean_material(text: str | None, files: list[tuple[str, bytes]] = ()) -> str:  # type: ignore[assignment]
    """The material with each file's text appended; refused when too long for the model to read."""
    parts = [(text or "").strip()]
    parts += [f"## {name}\n\n{read_file(name, data)}" for name, data in files]
    material = "\n\n".join(p for p in parts if p)
    tokens, most = estimate_tokens(material), settings.TUTOR_PROTECTED_MAX_TOKENS
    if tokens > most:
        sentence = _(
            "The protected material is about %(tokens)s tokens long; the assistant reads it at every answer, so "
            "keep it under %(most)s tokens (the exercises' solutions, not whole books)."
        )
        raise InvalidInput(sentence % {"tokens": number(tokens), "most": number(most)}, field="protected_material")
    return material


def read_file(name: str, data: bytes) -> str:
    """The text of one protected file (.txt, .md or .pdf). Raises InvalidInput with a sentence."""
    name = (name or "file").rsplit("/", 1)[-1][:200]
    if PurePath(name).suffix.lower() not in SUFFIXES:
        sentence = _("“%(name)s” cannot be added: protected material may be .txt, .md or .pdf files.")
        raise InvalidInput(sentence % {"name": name}, field="protected_files")
    if len(data) > MAX_FILE_BYTES:
        sentence = _("“%(name)s” is %(size)s; a protected file may be at most %(limit)s.")
        values = {"name": name, "size": file_size(len(data)), "limit": file_size(MAX_FILE_BYTES)}
        raise InvalidInput(sentence % values, field="protected_files")
    try:
        if sniff.detect_type(name, data[:1024]) == "pdf":
            doc = open_pdf(data)
            try:
                text = "\n\n".join(
                    p.markdown for p in fast_pages(doc, progress=lambda d: None, cancelled=lambda: False)
                )
            finally:
                doc.close()
        else:
            text = sniff.decode_text(data, name)
    except IngestFailed as exc:
        raise InvalidInput(str(exc), field="protected_files") from exc
    text = normalize_text(text).strip()
    if not text:
        sentence = _("No text could be found in “%(name)s”. If it is a scan, paste its text instead.")
        raise InvalidInput(sentence % {"name": name}, field="protected_files")
    return text
