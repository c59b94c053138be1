"""A migrated SQLite database for the processes tests start (live workers, the live app), without
migrating each time.

`manage.py migrate` from nothing takes 25 to 160 s on a loaded 2-core machine, and the tests that
start real processes each needed one. Its result depends only on the migrations (ours and the
installed packages'), so it is made once per set of migrations, kept in var/test-cache, and copied.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "var" / "test-cache"


def migrated_sqlite(dest: Path, env: Mapping[str, str]) -> None:
    """Put at `dest` a SQLite database as `manage.py migrate` leaves it (run with `env`)."""
    template = CACHE / f"migrated-{_fingerprint()}.sqlite3"
    if not template.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        scratch = CACHE / f"migrating-{uuid.uuid4().hex}.sqlite3"
        try:
            done = subprocess.run(
                [sys.executable, "manage.py", "migrate", "--noinput"],
                cwd=ROOT,
                env={**env, "DATABASE_URL": f"sqlite:///{scratch}"},
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr
            # Everything into the one file (the app opens it in WAL mode again), then into place.
            with contextlib.closing(sqlite3.connect(scratch)) as db:
                db.execute("PRAGMA journal_mode=DELETE")
            os.replace(scratch, template)  # whole or not at all; two sessions making it at once agree
        finally:
            for leftover in CACHE.glob(f"{scratch.name}*"):
                leftover.unlink(missing_ok=True)
        for stale in CACHE.glob("migrated-*.sqlite3"):
            if stale != template:
                stale.unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, dest)


def _fingerprint() -> str:
    """What the migrated schema depends on: our migrations and the installed packages."""
    digest = hashlib.sha256()
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    packages = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    digest.update("\n".join(packages).encode())
    return digest.hexdigest()[:16]
