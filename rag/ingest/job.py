"""The typed records ingestion steps share, the errors they raise, and what the loop needs from
the owner of the file's record (`IngestTracker`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol

from kernel.errors import CurreChatError


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
    # Pages that gave no text, or the same text as many other pages (a scan's placeholder, a
    # watermark): counted so the teacher is told, rather than shown a "Ready" that hides them.
    empty_pages: list[int] = field(default_factory=list)
    repeated_pages: list[int] = field(default_factory=list)
    # Pages the vision model probably got wrong (rag.ingest.review.Flag), and the teacher's
    # corrections by page (0: a file without pages), which replace what extraction gives.
    flagged_pages: list[Any] = field(default_factory=list)
    corrections: dict[int, str] = field(default_factory=dict)
    markdown: str = ""
    chunks: list[Chunk] = field(default_factory=list)
    vectors: list[list[float]] = field(default_factory=list)
    cached_vectors: int = 0


class Outcome(StrEnum):
    """How a run ended (the first three are also the file's final status)."""

    READY = "ready"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"  # nothing to do: the file was cancelled, deleted or re-queued before the run


class IngestTracker(Protocol):
    """The owner of the file's record, as the ingestion loop sees it (collections_app implements it).

    A run is live until the file is cancelled, deleted or re-queued as a newer attempt; from then
    on the tracker's writes change nothing, so whoever stopped the run always wins over it.
    """

    def progress(self, percent: int, detail: str, pages: int | None, of: tuple[int, int] | None = None) -> bool:
        """Record and publish how far the run is (0-100 overall; `of`: done and total of the step's
        count that `detail` states, when it counts). False when the run is no longer live."""
        ...

    def is_cancelled(self) -> bool:
        """Whether the run is no longer live (asks the record: may cost a query)."""
        ...

    def finish(self, job: IngestJob) -> bool:
        """Mark the file ready with the job's results. False when the run was no longer live."""
        ...

    def fail(self, message: str) -> None:
        """Mark the file failed with a sentence for the teacher; the index stays as it was."""
        ...

    def cancelled(self, job: IngestJob) -> None:
        """The run stopped because it is no longer live: none of its chunks may stay searchable."""
        ...
