"""`manage.py backup DIR`: the database and every uploaded file into a new directory (currechat/backup.py)."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from currechat.backup import BackupError, backup


class Command(BaseCommand):
    help = "Back up the database and uploaded files into DIR (new or empty). Redis is rebuilt on restore."

    def add_arguments(self, parser):
        parser.add_argument("directory", type=Path)

    def handle(self, *args, directory: Path, **options):
        try:
            manifest = backup(directory)
        except BackupError as exc:
            raise CommandError(str(exc)) from exc
        counts = ", ".join(f"{n} {label.split('.')[-1].lower()}s" for label, n in manifest["counts"].items())
        self.stdout.write(self.style.SUCCESS(f"Backed up into {directory}: {counts}."))
