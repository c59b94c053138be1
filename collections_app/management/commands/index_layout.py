"""Put every collection's index where it belongs: move the untagged key layout of CurreChat before
hash tags (once, after upgrading), and re-create the index of any collection whose cluster slot
moved to another shard (search also does this by itself when it meets the missing index)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from collections_app.models import Collection
from kernel.redis_client import get_index_redis
from rag import index_layout


class Command(BaseCommand):
    help = "Move the search index to the hash-tagged layout; re-create indexes whose cluster slot moved."

    def handle(self, *args, **options):
        client = get_index_redis()
        moved = index_layout.migrate_legacy(client)
        for move in moved:
            self.stdout.write(f"Collection {move.collection_id}: {move.files} files, {move.chunks} passages moved.")
        restored = index_layout.restore_missing(client, Collection.objects.values_list("pk", flat=True))
        for cid in restored:
            self.stdout.write(f"Collection {cid}: index re-created where its slot is now.")
        self.stdout.write(
            self.style.SUCCESS(f"Index layout: {len(moved)} collections moved, {len(restored)} indexes re-created.")
        )
