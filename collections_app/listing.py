"""Filtering and sorting a collection's files: one reading of the query parameters for the
collection page and `GET /api/v1/collections/{id}/files`, so both list the same files."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q, QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from collections_app.models import FileStatus, SourceFile
from kernel.errors import InvalidInput

SORTS = {
    "newest": ("-created", "-id"),
    "oldest": ("created", "id"),
    "name": ("original_name", "id"),
    "-name": ("-original_name", "-id"),
    "size": ("-size", "-id"),
}
SORT_LABELS = {
    "newest": gettext_lazy("Newest first"),
    "oldest": gettext_lazy("Oldest first"),
    "name": gettext_lazy("Name A–Z"),
    "-name": gettext_lazy("Name Z–A"),
    "size": gettext_lazy("Largest first"),
}
# "attention": what a teacher should look at: failed files and ready ones with unreadable pages.
STATUS_CHOICES = [("", gettext_lazy("All files")), *FileStatus.choices, ("attention", gettext_lazy("Needs attention"))]
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
            known = ", ".join(value for value, _label in STATUS_CHOICES if value)
            sentence = _("Unknown status %(status)r; use one of: %(known)s.")
            raise InvalidInput(sentence % {"status": status, "known": known})
        if sort not in SORTS:
            known = ", ".join(SORTS)
            raise InvalidInput(_("Unknown order %(sort)r; use one of: %(known)s.") % {"sort": sort, "known": known})
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
