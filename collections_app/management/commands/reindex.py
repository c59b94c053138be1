"""Rebuild the Redis index from the stored files (after losing Redis, or changing a collection's
embedding model, language or the chunk settings)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from collections_app import lifecycle
from collections_app.models import Collection, FileStatus
from rag.index import ChunkStore


def stale_collection_ids(collections) -> list[int]:
    """The collections whose index has an older storage format (rag.index.FORMAT_VERSION)."""
    return [pk for pk in collections.values_list("pk", flat=True) if ChunkStore(pk).is_stale()]


class Command(BaseCommand):
    help = "Rebuild collections' search indexes from their stored files."

    def add_arguments(self, parser):
        parser.add_argument("--collection", type=int, action="append", help="Only this collection (repeatable).")
        parser.add_argument(
            "--re-extract",
            action="store_true",
            help="Read every file again (PDFs through the vision model) instead of re-chunking the stored text.",
        )
        parser.add_argument(
            "--stale",
            action="store_true",
            help="Only collections whose index was built by an older CurreChat (see `check_services`).",
        )
        parser.add_argument(
            "--queue", action="store_true", help="Queue the files for the workers instead of indexing them here."
        )

    def handle(self, *args, collection=None, re_extract=False, queue=False, stale=False, **options):
        collections = Collection.objects.all()
        if stale:
            collections = collections.filter(pk__in=stale_collection_ids(collections))
        if collection:
            collections = collections.filter(pk__in=collection)
            missing = set(collection) - set(collections.values_list("pk", flat=True))
            if missing:
                raise CommandError(f"No collection with id {', '.join(map(str, sorted(missing)))}.")
        totals = {"ready": 0, "failed": 0, "queued": 0}
        for coll in collections:
            for source in lifecycle.reindex_collection(coll, re_extract=re_extract, enqueue=queue):
                if queue:
                    totals["queued"] += 1
                    continue
                status = lifecycle.run_ingest(source.pk, source.attempt, re_extract=re_extract).status
                source.refresh_from_db()
                totals["ready" if status == FileStatus.READY else "failed"] += 1
                line = f"{coll.name} / {source.original_name}: {source.status}, {source.chunk_count} passages"
                self.stdout.write(line + (f" ({source.error})" if source.error else ""))
        self.stdout.write(
            self.style.SUCCESS(
                f"Re-indexed: {totals['ready']} ready, {totals['failed']} failed, {totals['queued']} queued."
            )
        )
