"""The ingestion queue shared fairly between collections (issue 29 item 6), and what a queued file
shows while it waits: its place and an estimate.

The workers take queued files in turn per collection: next is the queued file of the collection
served longest ago (`SourceFile.started`, set when a worker claims a file; a collection never
served goes first), oldest first within it. So one teacher's 100-file batch takes turns with every
other collection's files instead of holding them until it is done. The places shown replay the
same turns (`_turns`), so the order a teacher is told is the order the workers follow.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F, Max, OuterRef, QuerySet, Subquery
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from collections_app import ingest_rates
from collections_app.models import FileStatus, SourceFile
from kernel.formats import number


def fair_queue() -> QuerySet[SourceFile]:
    """Queued files, the one the next free worker takes first."""
    last_served = (
        SourceFile.objects.filter(collection=OuterRef("collection"), started__isnull=False)
        .order_by("-started")
        .values("started")[:1]
    )
    return (
        SourceFile.objects.filter(status=FileStatus.QUEUED)
        .annotate(last_served=Subquery(last_served))
        .order_by(F("last_served").asc(nulls_first=True), "created", "pk")
    )


def _turns() -> list[int]:
    """Every queued file's id in the order the workers will take them if nothing else is queued:
    round after round, one file of each collection, collections in `fair_queue`'s order."""
    queued = SourceFile.objects.filter(status=FileStatus.QUEUED).order_by("created", "pk")
    per_collection: dict[int, list[int]] = defaultdict(list)
    for pk, collection_id in queued.values_list("pk", "collection_id"):
        per_collection[collection_id].append(pk)
    served = dict(
        SourceFile.objects.filter(collection_id__in=per_collection, started__isnull=False)
        .values("collection_id")
        .annotate(last=Max("started"))
        .values_list("collection_id", "last")
    )
    oldest = datetime.min.replace(tzinfo=timezone.get_current_timezone())
    # Never served first; then served longest ago; ties by the oldest queued file (dicts keep order).
    order = sorted(per_collection, key=lambda c: (c in served, served.get(c) or oldest))
    rounds = max((len(files) for files in per_collection.values()), default=0)
    return [per_collection[c][n] for n in range(rounds) for c in order if n < len(per_collection[c])]


@dataclass(frozen=True)
class Waiting:
    """A queued file's place (1: the next one a free worker takes) and the expected wait."""

    place: int
    wait: timedelta | None  # None while no file has been done to measure by

    @property
    def sentence(self) -> str:
        """The place and estimate as a teacher reads them."""
        if self.place == 1:
            where = _("Next in the queue.")
        else:
            ahead = self.place - 1
            where = ngettext(
                "Waiting in the queue: %(n)s file before this one.",
                "Waiting in the queue: %(n)s files before this one.",
                ahead,
            ) % {"n": number(ahead)}
        if self.wait is None:
            return where
        minutes = math.ceil(self.wait.total_seconds() / 60)
        if minutes <= 1:
            return f"{where} " + _("It should start within a minute.")
        return f"{where} " + ngettext(
            "It should start in about %(n)s minute.", "It should start in about %(n)s minutes.", minutes
        ) % {"n": number(minutes)}


def waiting_for(files: Iterable[SourceFile]) -> dict[int, Waiting]:
    """The place and estimate of each queued file among `files` (one reading of the queue for all).

    The estimate: what is left of the files being read now, plus the expected time of each queued
    file ahead (its size at this deployment's measured rate for its kind, `ingest_rates`), shared
    between the workers now busy (at least one); a teacher reads "about", not a promise."""
    wanted = {f.pk for f in files if f.status == FileStatus.QUEUED}
    if not wanted:
        return {}
    turns = _turns()
    fields = ("pk", "size", "file_type", "pdf_mode", "started")
    queued = SourceFile.objects.filter(pk__in=turns).only(*fields).in_bulk()
    busy = list(SourceFile.objects.filter(status=FileStatus.PROCESSING).only(*fields))
    rates = ingest_rates.Rates.measure(ingest_rates.kind(f) for f in [*queued.values(), *busy])
    now = timezone.now()
    ahead = sum(max(0.0, rates.seconds(f) - (now - (f.started or now)).total_seconds()) for f in busy)
    workers = max(1, len(busy))
    places: dict[int, Waiting] = {}
    for place, pk in enumerate(turns, start=1):
        if pk in wanted:
            places[pk] = Waiting(place, timedelta(seconds=ahead / workers))
        if pk in queued:
            ahead += rates.seconds(queued[pk])
    return places


def mark_waiting(files: list[SourceFile]) -> list[SourceFile]:
    """Give each file of a list its `waiting` from one reading of the queue (a page of the files table)."""
    places = waiting_for(files)
    for f in files:
        f.waiting = places.get(f.pk)
    return files


def waiting_of(source: SourceFile) -> Waiting | None:
    """One file's place and estimate: as its list filled it in (`mark_waiting`), else read now, once."""
    if "waiting" not in vars(source):  # the instance's own, not the model's default
        mark_waiting([source])
    return source.waiting
