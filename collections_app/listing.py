"""Filtering and sorting a collection's files: one reading of the query parameters for the
collection page and `GET /api/v1/collections/{id}/files`, so both list the same files."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet

from collections_app.models import FileStatus, SourceFile
from currechat.errors import InvalidInput

SORTS = {
    "newest": ("-created", "-id"),
    "oldest": ("created", "id"),
    "name": ("original_name", "id"),
    "-name": ("-original_name", "-id"),
    "size": ("-size", "-id"),
}
SORT_LABELS = {
    "newest": "Newest first",
    "oldest": "Oldest first",
    "name": "Name A–Z",
    "-name": "Name Z–A",
    "size": "Largest first",
}
# "attention": what a teacher should look at: failed files and ready ones with unreadable pages.
STATUS_CHOICES = [("", "All files"), *FileStatus.choices, ("attention", "Needs attention")]
PAGE_SIZE = 50
MAX_QUERY_CHARS = 200


@dataclass(frozen=True)
class FileFilter:
    """What to list: words in the file name, one status (or "attention"), and an order."""

    q: str = ""
    status: str = ""
    sort: str = "newest"

    @classmethod
    def parse(cls, q: str | None, status: str | None, sort: str | None) -> FileFilter:
        """The filter from query parameters; an unknown status or order is `InvalidInput` naming
        the values that exist (a typo must not silently list every file)."""
        status, sort = (status or "").strip(), (sort or "newest").strip()
        if status not in dict(STATUS_CHOICES):
            raise InvalidInput(
                f"Unknown status {status!r}; use one of: {', '.join(k for k, _ in STATUS_CHOICES if k)}."
            )
        if sort not in SORTS:
            raise InvalidInput(f"Unknown order {sort!r}; use one of: {', '.join(SORTS)}.")
        return cls(q=" ".join((q or "").split())[:MAX_QUERY_CHARS], status=status, sort=sort)

    @property
    def active(self) -> bool:
        return bool(self.q or self.status)

    def apply(self, files: QuerySet[SourceFile]) -> QuerySet[SourceFile]:
        for word in self.q.split():
            files = files.filter(original_name__icontains=word)
        if self.status == "attention":
            unreadable = Q(status=FileStatus.READY) & (~Q(empty_pages=[]) | ~Q(repeated_pages=[]))
            files = files.filter(Q(status=FileStatus.FAILED) | unreadable)
        elif self.status:
            files = files.filter(status=self.status)
        return files.order_by(*SORTS[self.sort])
