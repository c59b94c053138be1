"""A text split into pieces of about a size, at the first of a list of separators that occurs,
recursively: paragraph breaks before line breaks before sentence ends, neighbours overlapping.

The algorithm of langchain-text-splitters' `RecursiveCharacterTextSplitter` (MIT licence) with the
settings chunking uses (separators kept at the end of their piece, pieces stripped, start offsets),
written out so that ingestion does not pull langchain-core and langsmith, whose pytest plugin loaded
in every test run. Same passages on the shared test data as langchain 1.1.3 gave
(docs/ARCHITECTURE.md, "Library decisions"; tests/test_ingest_text.py pins the chunking).
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def split(text: str, size: int, overlap: int, separators: Sequence[str]) -> list[tuple[int, str]]:
    """(offset in `text`, piece) in order; a piece is longer than `size` only when the last
    separator ("" splits anywhere) is missing from `separators`. `overlap` <= `size`."""
    pieces: list[tuple[int, str]] = []
    index = previous = 0
    for piece in _split(text, list(separators), size, overlap):
        # As langchain finds it: the piece's first occurrence from where the overlap may start.
        index = text.find(piece, max(0, index + previous - overlap))
        previous = len(piece)
        pieces.append((index, piece))
    return pieces


def _split(text: str, separators: list[str], size: int, overlap: int) -> list[str]:
    separator, rest = separators[-1], []
    for i, candidate in enumerate(separators):
        if not candidate:
            separator = candidate
            break
        if candidate in text:
            separator, rest = candidate, separators[i + 1 :]
            break
    pieces: list[str] = []
    short: list[str] = []
    for part in _parts(text, separator):
        if len(part) < size:
            short.append(part)
            continue
        if short:
            pieces += _merge(short, size, overlap)
            short = []
        pieces += _split(part, rest, size, overlap) if rest else [part]
    if short:
        pieces += _merge(short, size, overlap)
    return pieces


def _parts(text: str, separator: str) -> list[str]:
    """`text` cut after each `separator` (kept at the end of its part); "" cuts every character."""
    if not separator:
        return list(text)
    cut = re.split(f"({re.escape(separator)})", text)
    parts = [cut[i] + cut[i + 1] for i in range(0, len(cut) - 1, 2)] + [cut[-1]]
    return [part for part in parts if part]


def _merge(parts: list[str], size: int, overlap: int) -> list[str]:
    """Neighbouring parts joined into pieces up to `size`, each piece beginning with as much of the
    previous one's end as fits in `overlap`."""
    pieces: list[str] = []
    current: list[str] = []
    total = 0
    for part in parts:
        if total + len(part) > size and current:
            piece = "".join(current).strip()
            if piece:
                pieces.append(piece)
            while total > overlap or (total + len(part) > size and total > 0):
                total -= len(current.pop(0))
        current.append(part)
        total += len(part)
    piece = "".join(current).strip()
    if piece:
        pieces.append(piece)
    return pieces
