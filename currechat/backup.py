"""Back up and restore an instance: the database (SQLite or PostgreSQL, as Django's portable JSON)
and MEDIA_ROOT (every uploaded original); Redis is not backed up but rebuilt from them (`reindex`).

    DIR/manifest.json      what the backup holds: when, from which database, schema (migrations), counts
    DIR/database.json.gz   `dumpdata` of every model (sessions and content types left out: logins are
                           not kept; content types are made again by `migrate` and referred to by name)
    DIR/media/             a copy of MEDIA_ROOT

Only its owner may read it: directories 0700, files 0600, whatever the umask.

`backup` and `restore` are exact inverses (tests/test_backup.py): restored into an empty database
of the same schema, every chat reads as before and every search returns the same passages.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import DEFAULT_DB_ALIAS, connection, connections, transaction
from django.db.migrations.recorder import MigrationRecorder

from kernel.errors import CurreChatError

FORMAT = 1
DATABASE_FILE = "database.json.gz"
MEDIA_DIR = "media"
# Made again by `migrate` (content types, permissions), not worth keeping (sessions, the admin's log), or
# not tables at all (django_rq's dashboard model).
EXCLUDED = ["contenttypes", "auth.permission", "sessions", "admin.logentry", "django_rq"]


class BackupError(CurreChatError):
    """A backup or restore that cannot go on; the sentence says what to do."""


def _applied_migrations() -> list[list[str]]:
    recorder = MigrationRecorder(connections[DEFAULT_DB_ALIAS])
    return sorted([app, name] for app, name in recorder.applied_migrations())


def _counts() -> dict[str, int]:
    labels = ("accounts.User", "collections_app.Collection", "collections_app.SourceFile", "chat.Message")
    return {label: apps.get_model(label).objects.count() for label in labels}


def backup(target: Path) -> dict:
    """Write a backup into `target` (a new or empty directory); returns the manifest."""
    if target.exists() and any(target.iterdir()):
        raise BackupError(f"{target} is not empty. Back up into a new directory, so no earlier backup is overwritten.")
    # Private from the first byte, whatever the umask: it holds every chat and every password hash.
    # Nothing under a 0700 directory can be opened by others, so the files are narrowed at the end.
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    target.chmod(0o700)
    # One consistent view of the data while it is read (PostgreSQL: a repeatable-read snapshot).
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        call_command(
            "dumpdata",
            natural_foreign=True,
            format="exact_json",  # read back by loaddata as plain "json" (its file name says so)
            exclude=EXCLUDED,
            output=str(target / DATABASE_FILE),
            verbosity=0,
        )
        counts = _counts()
    media = Path(settings.MEDIA_ROOT)
    if media.exists():
        shutil.copytree(media, target / MEDIA_DIR)
    else:
        (target / MEDIA_DIR).mkdir()
    manifest = {
        "format": FORMAT,
        "created": datetime.now(UTC).isoformat(),
        "database": connection.vendor,
        "migrations": _applied_migrations(),
        "counts": counts,
    }
    (target / "manifest.json").write_text(json.dumps(manifest, indent=1))
    _owner_only(target)
    return manifest


def _owner_only(root: Path) -> None:
    """Directories 0700 and files 0600 under `root`: copies keep MEDIA_ROOT's modes, and files are
    made under the umask (copytree copied links' targets, so every path here is the backup's own)."""
    for path in root.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def _is_empty() -> bool:
    return not any(_counts().values())


def restore(source: Path, *, reindex: bool = True, stdout=None) -> dict:
    """Restore the backup in `source` into this instance's (migrated, empty) database and MEDIA_ROOT,
    then rebuild the search index. Returns the manifest."""
    manifest_file = source / "manifest.json"
    if not manifest_file.exists():
        raise BackupError(f"{source} holds no CurreChat backup (no manifest.json). Name the directory `backup` wrote.")
    manifest = json.loads(manifest_file.read_text())
    if manifest.get("format") != FORMAT:
        raise BackupError(f"This backup has format {manifest.get('format')}; this CurreChat reads format {FORMAT}.")
    call_command("migrate", verbosity=0, interactive=False)
    unknown = {tuple(m) for m in manifest["migrations"]} - {tuple(m) for m in _applied_migrations()}
    if unknown:
        raise BackupError(
            "The backup was made by a newer CurreChat (its database has migrations this one lacks: "
            f"{', '.join('.'.join(m) for m in sorted(unknown)[:3])}). Install that version, restore, then upgrade."
        )
    if not _is_empty():
        raise BackupError(
            "The database already holds users, collections or chats. Restore into an empty database "
            "(create a new one and point DATABASE_URL at it), so nothing there is overwritten."
        )
    media = Path(settings.MEDIA_ROOT)
    if media.exists() and any(media.iterdir()):
        raise BackupError(f"MEDIA_ROOT ({media}) is not empty. Restore into an empty directory.")
    with transaction.atomic():
        call_command("loaddata", str(source / DATABASE_FILE), verbosity=0)
        # Rows came with their ids: PostgreSQL's sequences must continue after them.
        models = [m for m in apps.get_models(include_auto_created=True) if m._meta.managed]
        statements = connection.ops.sequence_reset_sql(no_style(), models)
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
    shutil.copytree(source / MEDIA_DIR, media, dirs_exist_ok=True)
    if reindex:
        call_command("reindex", stdout=stdout)
    return manifest
