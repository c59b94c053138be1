"""`manage.py restore DIR`: a backup into an empty database and MEDIA_ROOT, then `reindex` (currechat/backup.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from currechat.backup import BackupError, restore


class Command(BaseCommand):
    help = "Restore a backup made by `backup` into an empty database and MEDIA_ROOT, then rebuild the search index."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)
        parser.add_argument(
            "--no-reindex", action="store_true", help="Leave the search index to a later `manage.py reindex`."
        )

    def handle(self, *args, directory: Path, no_reindex=False, **options):
        try:
            manifest = restore(directory, reindex=not no_reindex, stdout=self.stdout)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(self.style.SUCCESS(f"Restored the backup of {manifest['created']} from {directory}."))
