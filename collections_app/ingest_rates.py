"""How fast this deployment reads files, by kind, measured on the files it finished lately.

The queue's estimates (`fair_queue.waiting_for`) add up the expected time of each file ahead from
these rates. A mean time per file, whatever its size and kind, told a batch of short notes queued
behind one long PDF that each would take as long as the PDF (4–5 times too long). A file's time
is claim to ready (`started` to `updated`, both written when it finishes); its kind is its type,
and for a PDF how it is read (the vision model is far slower than the text layer).
"""

from __future__ import annotations

from collections.abc import Iterable

from collections_app.models import FileStatus, FileType, SourceFile

RECENT = 20  # files per kind the rate is measured over
FILE_SECONDS = 2.0  # what any file takes besides its size: claiming, storing, indexing
# Bytes per second before this deployment has finished a file of the kind: a modest machine
# (embedding on CPU; a PDF page or an image read by a vision model in 10–20 s).
DEFAULT_RATE = 20_000.0
DEFAULT_RATES = {"pdf:vlm": 5_000.0, "pdf:auto": 5_000.0, "pdf:fast": 100_000.0, "pptx": 10_000.0, "docx": 10_000.0}


def kind(source: SourceFile) -> str:
    return f"{source.file_type}:{source.pdf_mode}" if source.file_type == FileType.PDF else source.file_type


class Rates:
    """Bytes per second per kind, measured once for one reading of the queue."""

    def __init__(self, measured: dict[str, float]):
        self.measured = measured

    @classmethod
    def measure(cls, kinds: Iterable[str]) -> Rates:
        measured = {}
        for wanted in set(kinds):
            file_type, _, mode = wanted.partition(":")
            done = SourceFile.objects.filter(status=FileStatus.READY, started__isnull=False, file_type=file_type)
            if mode:
                done = done.filter(pdf_mode=mode)
            rows = done.order_by("-updated").values_list("size", "started", "updated")[:RECENT]
            spans = [(size, (end - start).total_seconds()) for size, start, end in rows if start is not None]
            spans = [(size, seconds) for size, seconds in spans if seconds > 0]
            if spans:  # the time beyond each file's fixed part is what its size took
                seconds = max(0.5, sum(s for _, s in spans) - FILE_SECONDS * len(spans))
                measured[wanted] = sum(size for size, _ in spans) / seconds
        return cls(measured)

    def seconds(self, source: SourceFile) -> float:
        """About how long a worker takes to read `source`, start to ready."""
        which = kind(source)
        rate = self.measured.get(which) or DEFAULT_RATES.get(which, DEFAULT_RATE)
        return FILE_SECONDS + source.size / rate
