"""Slides as page images: LibreOffice converts a presentation to PDF once, at ingestion, and the
PDF is kept beside the stored original, so its pages render and mark a cited passage exactly as a
PDF's do (collections_app/originals.py). The ingestion worker is its one writer, the pages its one
reader; it goes with the file (lifecycle.delete_file) or its collection.

Slides' text still comes from python-pptx (rag/ingest/office.py): the PDF is only their picture,
so a missing LibreOffice or a failed conversion costs the images, never the file; the teacher is
told in a note on the file.

Trust boundary: the deck is the uploader's and LibreOffice follows what it links to. Measured with
LibreOffice 7.4: a picture linked to an http:// address is fetched during the conversion, and a
picture linked to a file:// path (or an SVG's <image> pointing at one) is read and drawn into the
PDF the teacher then sees. So LibreOffice runs in namespaces of its own (`unshare`, as any user):
no network at all, and the app's checkout, its var/ and the media folder (every collection's
originals) hidden behind empty mounts; its address space is capped, so a picture built to expand
to gigabytes fails there instead of in the worker's machine. Pictures the worker's user may read
elsewhere on the machine stay within reach of a deck that links to them. Where namespaces are
refused, LibreOffice is not run at all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from django.utils import translation
from django.utils.translation import gettext_lazy

from rag import config
from rag.ingest.job import IngestCancelled
from rag.ingest.pdf import open_pdf

log = logging.getLogger(__name__)

# Hidden slides too: python-pptx reads them, so slide n is page n of the PDF.
EXPORT = 'pdf:impress_pdf_Export:{"ExportHiddenSlides":{"type":"boolean","value":"true"}}'

# The private profile's settings: no macro ever runs, VBA is neither loaded nor made executable
# (office_kind refuses macro-enabled packages already; this is the second lock).
_LOCKS = [
    ("org.openoffice.Office.Common/Security/Scripting", "DisableMacrosExecution", "true"),
    ("org.openoffice.Office.Common/Security/Scripting", "MacroSecurityLevel", "3"),
    ("org.openoffice.Office.Impress/Filter/Import/VBA", "Load", "false"),
    ("org.openoffice.Office.Impress/Filter/Import/VBA", "Executable", "false"),
]
PROFILE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry">\n'
    + "".join(
        f'<item oor:path="/{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop></item>\n'
        for path, name, value in _LOCKS
    )
    + "</oor:items>\n"
)

# LibreOffice's address space. A deck of 30 six-megapixel photos peaks at 0.75 GiB resident and
# converts within 1.5 GiB; a 400-megapixel picture takes 0.6 GiB; larger ones fail inside the cap.
ADDRESS_SPACE_KIB = 2 * 1024 * 1024

# Run inside the new namespaces before LibreOffice: `$1` directories to hide, then the command.
_SHIM = (
    'set -e; n=$1; shift; while [ "$n" -gt 0 ]; do mount -t tmpfs -o size=16k,mode=0500 hidden "$1"; shift; '
    'n=$((n - 1)); done; ulimit -v "$1"; shift; exec "$@"'
)

# What the teacher reads on the file's page when the slides got no pictures.
NOT_INSTALLED = gettext_lazy(
    "The slides are shown as text only: LibreOffice, which draws them as pictures, is not installed on the "
    "server. Your administrator can install it; re-indexing the file then draws them."
)
NO_SANDBOX = gettext_lazy(
    "The slides are shown as text only: the server cannot run LibreOffice, which draws them as pictures, "
    "shut off from the network. Tell your administrator (the server log has the details)."
)
TOO_SLOW = gettext_lazy(
    "The slides are shown as text only: drawing them as pictures took too long. A copy with smaller pictures, "
    "or the presentation split in parts, may be drawn in time."
)
CANNOT_DRAW = gettext_lazy(
    "The slides are shown as text only: LibreOffice could not draw this presentation as pictures. Saving it "
    "again in PowerPoint and uploading that copy may help."
)
NOTES = (NOT_INSTALLED, NO_SANDBOX, TOO_SLOW, CANNOT_DRAW)


class NotRendered(Exception):  # noqa: N818 — an outcome, reported as a note
    """Why the slides got no images: `note` for the teacher, the message for the log."""

    def __init__(self, note: str, detail: str):
        super().__init__(detail)
        self.note = note


def rendered_pdf(original: Path) -> Path:
    """Where the PDF of a stored presentation is kept: beside it, named after it (its sha256)."""
    return original.with_name(original.name + ".pdf")


def is_note(text: str) -> bool:
    """Whether `text` is one of this module's notes, in any of the site's languages: a note copied
    from an earlier run is replaced by what this run found."""
    for code in config.ingestion().languages:
        with translation.override(code):
            if text in {str(note) for note in NOTES}:
                return True
    return False


def render(original: Path, slides: int, cancelled: Callable[[], bool] = lambda: False) -> str:
    """Make the PDF of the presentation at `original` unless it exists. Returns "" when it is
    there, else the note for the teacher (the log has the detail). `slides` is how many pages the
    PDF must have; `cancelled()` stops LibreOffice (IngestCancelled)."""
    target = rendered_pdf(original)
    if target.exists():
        return ""
    # Named after the content, so a PDF of the same bytes written at the same moment is the same.
    temporary = target.with_name(target.name + ".tmp")
    try:
        with tempfile.TemporaryDirectory(prefix="currechat-slides-") as work:
            made = _convert(original, Path(work), cancelled)
            _check(made, slides)
            shutil.copyfile(made, temporary)
            os.replace(temporary, target)
    except NotRendered as exc:
        log.warning("Slides of %s shown as text only: %s", original.name, exc)
        return exc.note
    except IngestCancelled:
        raise
    except Exception:  # noqa: BLE001 — a full disk, say: the images are lost, never the file's text
        temporary.unlink(missing_ok=True)
        log.exception("Slides of %s shown as text only", original.name)
        return str(CANNOT_DRAW)
    return ""


def _convert(original: Path, work: Path, cancelled: Callable[[], bool]) -> Path:
    binary = shutil.which(config.ingestion().libreoffice_binary)
    if binary is None:
        raise NotRendered(str(NOT_INSTALLED), f"LibreOffice ({config.ingestion().libreoffice_binary}) is not installed")
    profile = work / "profile"
    (profile / "user").mkdir(parents=True)
    (profile / "user" / "registrymodifications.xcu").write_text(PROFILE, encoding="utf-8")
    deck = work / "slides.pptx"  # LibreOffice picks its import filter partly by the name
    shutil.copyfile(original, deck)
    out = work / "out"
    command = [
        binary,
        "--headless",
        "--norestore",
        "--nologo",
        "--nodefault",
        "--nolockcheck",
        # A profile of its own per run: two workers never share (or wait on) one LibreOffice.
        f"-env:UserInstallation={profile.as_uri()}",
        "--convert-to",
        EXPORT,
        "--outdir",
        str(out),
        str(deck),
    ]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "LANG": "C.UTF-8"}
    said = work / "soffice.log"  # a file, not a pipe: nothing blocks while the run is watched
    with said.open("wb") as output:
        # Its own process group: soffice starts soffice.bin, and a timeout must stop both.
        process = subprocess.Popen(
            _sandboxed(command, work),
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        _wait(process, cancelled)
    made = out / "slides.pdf"
    if process.returncode != 0 or not made.exists():
        text = said.read_text("utf-8", "replace").strip()[-300:]
        raise NotRendered(str(CANNOT_DRAW), f"LibreOffice exited with {process.returncode}: {text}")
    return made


def _sandboxed(command: list[str], work: Path) -> list[str]:
    """`command` in new user, network and mount namespaces, with the app's folders hidden and the
    address space capped; NotRendered (NO_SANDBOX) when this machine refuses any of it (tried
    first with `true`, so a refusal is never mistaken for a deck LibreOffice cannot draw)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        raise NotRendered(str(NO_SANDBOX), "LibreOffice cannot run without network: no unshare command (util-linux)")
    hidden = _hidden(work)
    sandbox = [unshare, "--map-root-user", "--net", "--mount", "--", "/bin/sh", "-c", _SHIM, "sh", str(len(hidden))]
    sandbox += [*map(str, hidden), str(ADDRESS_SPACE_KIB)]
    probe = subprocess.run([*sandbox, "true"], capture_output=True, timeout=30, check=False)
    if probe.returncode != 0:
        why = probe.stderr.decode("utf-8", "replace").strip()[-300:]
        raise NotRendered(str(NO_SANDBOX), f"LibreOffice cannot run without network: {why}")
    return [*sandbox, *command]


def _hidden(work: Path) -> list[Path]:
    """The app's own folders, outermost only, never one that holds the conversion's folder."""
    folders = {Path(p).resolve() for p in config.ingestion().own_folders}
    work = work.resolve()
    return sorted(
        f
        for f in folders
        if f.is_dir() and not work.is_relative_to(f) and not any(f != g and f.is_relative_to(g) for g in folders)
    )


def _wait(process: subprocess.Popen, cancelled: Callable[[], bool]) -> None:
    """Wait for LibreOffice; whatever ends the wait (its exit, the timeout, a cancel), nothing it
    started outlives it."""
    timeout = config.ingestion().libreoffice_timeout
    deadline = time.monotonic() + timeout
    try:
        while process.poll() is None:
            if cancelled():
                raise IngestCancelled
            if time.monotonic() >= deadline:
                raise NotRendered(str(TOO_SLOW), f"LibreOffice took longer than {timeout:g} s")
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=0.5)
    finally:
        _kill(process)


def _kill(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):  # the whole group has ended by itself
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _check(made: Path, slides: int) -> None:
    try:
        doc = open_pdf(made)  # streams checked too: the PDF holds the uploader's pictures
    except Exception as exc:  # noqa: BLE001 — whatever is wrong with it, the slides stay text
        raise NotRendered(str(CANNOT_DRAW), f"the PDF cannot be read: {exc}") from exc
    try:
        if len(doc) != slides:  # pages would not line up with the slides' text
            raise NotRendered(str(CANNOT_DRAW), f"the PDF has {len(doc)} pages for {slides} slides")
    finally:
        doc.close()
