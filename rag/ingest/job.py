"""The typed records ingestion steps share, and the errors they raise."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from currechat.errors import CurreChatError


class IngestFailed(CurreChatError):
    """The file cannot be ingested as it is. The message tells the teacher what to do."""


class TooLarge(IngestFailed):
    status_code = 413


class UnsupportedContent(IngestFailed):
    status_code = 415


class IngestCancelled(Exception):  # noqa: N818 — a control-flow signal, not an error
    """The teacher cancelled the file (or deleted it, or a newer attempt superseded this one)."""


@dataclass(frozen=True)
class PageText:
    """Extracted Markdown of one page (`number` is 1-based; None for files without pages)."""

    number: int | None
    markdown: str


@dataclass(frozen=True)
class Chunk:
    """A passage ready to embed: its text and where it came from."""

    position: int
    text: str
    page_start: int | None
    page_end: int | None
    heading_path: str


@dataclass
class IngestJob:
    """Everything the steps of one ingestion run read and write."""

    file_id: int
    attempt: int
    collection_id: int
    language: str
    embedding_model: str
    file_name: str
    file_type: str
    path: Path
    pdf_mode: str
    sha256: str
    extractor: str = ""
    pages: list[PageText] = field(default_factory=list)
    page_count: int | None = None
    notes: list[str] = field(default_factory=list)
    markdown: str = ""
    chunks: list[Chunk] = field(default_factory=list)
    vectors: list[list[float]] = field(default_factory=list)
    cached_vectors: int = 0
