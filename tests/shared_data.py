"""Where the project's shared data sets are (`../shared/data`, read in place, never copied in)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def shared_data(root: Path) -> Path:
    """`shared/data` beside the checkout `root`, beside a folder that holds it (a git worktree), or
    beside the local repository it was cloned from (a scratch clone, e.g. in `mktemp -d`)."""
    places = list(root.parents)
    origin = subprocess.run(
        ["git", "-C", str(root), "config", "--get", "remote.origin.url"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if origin and Path(origin).is_dir():
        places += [Path(origin).resolve(), *Path(origin).resolve().parents]
    return next(
        (p / "shared" / "data" for p in places if (p / "shared" / "data").is_dir()), root.parent / "shared" / "data"
    )
