"""The documents a question names: "what do lecture-3.pdf and the course book say about entropy?"

A search ranks passages by what they say, not by the file they come from, so a question that names
two documents could get passages from one of them only, and the answer could not say what the other
says. The search gives each document named in the question seats of its own (rag/search.py).

A document is named when the text holds its file name, whole (`lecture-3.pdf`) or without its
extension (`lecture-3`), with case, accents and the separators `-`, `_`, `.` and spaces read
alike (`Lecture 3`). A name must span whole words: `notes.md` is not named by "footnotes".
Names shorter than `MIN_CHARS` letters and digits ("a.pdf", "1.md") are never matched: they
would be found in ordinary sentences. Where one named document's name lies inside another's
("week2" in "week2 notes"), only the longer counts.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

MIN_CHARS = 3
_SEPARATORS = re.compile(r"[\W_]+")


@dataclass(frozen=True)
class Document:
    collection_id: int
    file_id: int
    name: str  # the file name as the teacher uploaded it


def _words(text: str) -> str:
    """Case folded, accents removed, every run of separators one space, padded with spaces so a
    name is found on word boundaries by a plain substring test."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return f" {' '.join(_SEPARATORS.sub(' ', plain).split())} "


def _forms(name: str) -> set[str]:
    stem = name.rsplit(".", 1)[0] if "." in name.strip(".") else name
    if len(_words(stem).replace(" ", "")) < MIN_CHARS:
        return set()
    return {_words(name), _words(stem)}


def named_in(text: str, documents: Sequence[Document], most: int = 4) -> list[Document]:
    """The documents `text` names, in the order it first names them (at most `most`)."""
    haystack = _words(text)
    mentions = [(start, start + len(form), doc) for doc in documents for form in _forms(doc.name)
                for start in _occurrences(haystack, form)]  # fmt: skip
    first: dict[int, tuple[int, Document]] = {}
    for start, end, doc in sorted(mentions, key=lambda mention: mention[0]):
        # A name inside a longer one's mention ("week2" within "week2 notes") is not a mention of its own.
        inside = any(s <= start and end <= e and (e - s) > (end - start) for s, e, _ in mentions)
        if not inside and doc.file_id not in first:
            first[doc.file_id] = (start, doc)
    return [doc for _, doc in sorted(first.values(), key=lambda item: item[0])][:most]


def _occurrences(haystack: str, form: str) -> list[int]:
    starts, at = [], haystack.find(form)
    while at >= 0:
        starts.append(at)
        at = haystack.find(form, at + 1)
    return starts
