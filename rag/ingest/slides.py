"""Slides as page images: LibreOffice converts a presentation to PDF once, at ingestion, and the
PDF is kept beside the stored original, so its pages render and mark a cited passage exactly as a
PDF's do (collections_app/originals.py). The ingestion worker is its one writer, the pages its one
reader; it goes with the file (lifecycle.delete_file) or its collection.

Slides' text still comes from python-pptx (rag/ingest/office.py): the PDF is only their picture,
so a missing LibreOffice or a failed conversion costs the images, never the file.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from django.conf import settings

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


class NotRendered(Exception):
    """Why the slides got no images (logged; ingestion goes on with their text)."""


def rendered_pdf(original: Path) -> Path:
    """Where the PDF of a stored presentation is kept: beside it, named after it (its sha256)."""
    return original.with_name(original.name + ".pdf")


def render(original: Path, slides: int) -> bool:
    """Make the PDF of the presentation at `original` unless it exists; False (and a log line)
    when it cannot be made. `slides` is how many pages the PDF must have."""
    target = rendered_pdf(original)
    if target.exists():
        return True
    try:
        with tempfile.TemporaryDirectory(prefix="currechat-slides-") as work:
            made = _convert(original, Path(work))
            _check(made, slides)
            # Named after the content, so a PDF of the same bytes written at the same moment is the same.
            temporary = target.with_name(target.name + ".tmp")
            shutil.copyfile(made, temporary)
            os.replace(temporary, target)
    except (NotRendered, OSError) as exc:
        log.warning("Slides of %s shown as text only: %s", original.name, exc)
        return False
    return True


def _convert(original: Path, work: Path) -> Path:
    binary = shutil.which(settings.LIBREOFFICE_BINARY)
    if binary is None:
        raise NotRendered(f"LibreOffice ({settings.LIBREOFFICE_BINARY}) is not installed")
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
    # Its own process group: soffice starts soffice.bin, and a timeout must stop both.
    process = subprocess.Popen(
        command,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=settings.LIBREOFFICE_TIMEOUT)
    except subprocess.TimeoutExpired as exc:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise NotRendered(f"LibreOffice took longer than {settings.LIBREOFFICE_TIMEOUT:g} s") from exc
    made = out / "slides.pdf"
    if process.returncode != 0 or not made.exists():
        said = output.decode("utf-8", "replace").strip()[-300:]
        raise NotRendered(f"LibreOffice exited with {process.returncode}: {said}")
    return made


def _check(made: Path, slides: int) -> None:
    try:
        doc = open_pdf(made, check_streams=False)
    except Exception as exc:  # noqa: BLE001 — whatever is wrong with it, the slides stay text
        raise NotRendered(f"the PDF cannot be read: {exc}") from exc
    try:
        if len(doc) != slides:  # pages would not line up with the slides' text
            raise NotRendered(f"the PDF has {len(doc)} pages for {slides} slides")
    finally:
        doc.close()
