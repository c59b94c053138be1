"""Slides shown as slides: LibreOffice (Debian's, run for real) makes a PDF of the deck once at
ingestion; the teacher's review page shows each slide beside its text, and a student's citation
opens the slide with the quoted words marked, only on slides their searches returned. Without
LibreOffice, or when it fails or takes too long, the deck is read as before, shown as text, and the
teacher is told why; LibreOffice reaches no network and none of the app's files."""

from __future__ import annotations

import io
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pptx
import pymupdf
import pytest
from django.conf import settings as django_settings
from pptx.opc.constants import RELATIONSHIP_TYPE
from pptx.util import Inches, Pt

from chat.models import Enrollment, Prompt
from collections_app import files
from collections_app.files import file_chunks
from collections_app.models import FileStatus, SourceFile
from rag.ingest.slides import rendered_pdf
from tests.fixtures_ingest import scanned
from tests.test_originals import PNG, ask, marks

SLIDE_TEXT = [
    "Osmosis moves water across a semipermeable membrane toward the higher solute concentration.",
    "Diffusion spreads molecules from crowded regions into emptier regions until the gradient vanishes.",
    "Active transport pumps ions against their gradient and spends cellular energy as adenosine triphosphate.",
]


def membrane_deck(hidden: tuple[int, ...] = (), linked: str = "") -> bytes:
    """Three slides of one sentence each, in a text box well inside the slide; the slides in
    `hidden` hidden from the slide show; with `linked`, slide 1 has a picture linked to that
    address (not embedded: LibreOffice would fetch it)."""
    deck = pptx.Presentation()
    for number, sentence in enumerate(SLIDE_TEXT, start=1):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = f"Membranes {number}"
        box = slide.shapes.add_textbox(Inches(1), Inches(2.5), Inches(8), Inches(3))
        box.text_frame.word_wrap = True
        box.text_frame.text = sentence
        box.text_frame.paragraphs[0].runs[0].font.size = Pt(24)
        if number in hidden:
            slide._element.set("show", "0")
        if linked and number == 1:
            picture = slide.shapes.add_picture(io.BytesIO(red_square()), Inches(6), Inches(5), Inches(2), Inches(2))
            link = slide.part.relate_to(linked, RELATIONSHIP_TYPE.IMAGE, is_external=True)
            [blip] = picture._element.xpath(".//a:blip")
            blip.attrib.clear()
            blip.set("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}link", link)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def red_square() -> bytes:
    picture = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), False)
    picture.set_rect(picture.irect, (255, 0, 0))
    return picture.tobytes("png")


def notes_on_page(client, source) -> list[str]:
    page = client.get(f"/collections/files/{source.pk}/").content.decode()
    found = re.search(r'<ul class="notes">(.*?)</ul>', page, re.S)
    return re.findall(r"<li>(.*?)</li>", found.group(1), re.S) if found else []


def fake_soffice(tmp_path: Path, body: str) -> str:
    """A stand-in for LibreOffice's command (a shell script), for the ways it fails."""
    script = tmp_path / "soffice"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


@pytest.fixture
def deck(fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, membrane_deck(), "membranes.pptx")
    assert source.status == FileStatus.READY, source.error
    return source


def test_the_review_page_shows_each_slide_beside_its_text(client_for, owner, deck):
    assert deck.pages == 3
    assert rendered_pdf(Path(deck.file.path)).exists(), "LibreOffice made the slides' PDF at ingestion"
    page = client_for(owner).get(f"/collections/files/{deck.pk}/").content.decode()
    for number in (1, 2, 3):
        assert f'src="/collections/files/{deck.pk}/pages/{number}.png"' in page, "each slide's image beside its text"
    assert "Diffusion spreads molecules" in page
    image = client_for(owner).get(f"/collections/files/{deck.pk}/pages/2.png")
    assert image.status_code == 200 and image.content.startswith(PNG)
    picture = pymupdf.Pixmap(image.content)
    assert picture.width > picture.height > 300, "a landscape slide, large enough to read"


@pytest.fixture
def course(owner, fast_collection, student, deck):
    scanned(fast_collection)
    prompt = Prompt.objects.create(owner=owner, name="Cell biology", curation_enabled=False)
    prompt.collections.add(fast_collection)
    Enrollment.objects.create(student=student, prompt=prompt)
    return prompt


def test_a_cited_slide_opens_rendered_with_the_quoted_words_marked(
    client_for, owner, co_owner, student, other_student, other_teacher, course, deck, ollama, settings
):
    settings.CHAT_SEARCH_LIMIT = settings.CHAT_SEARCH_CANDIDATES = 1
    [cited] = ask(client_for, student, course, ollama, "diffusion spreads molecules gradient")
    assert (cited["file_id"], cited["page"]) == (deck.pk, 2)
    position = cited["chunk_id"].rsplit(":", 1)[-1]
    pane = client_for(student).get(f"/collections/files/{deck.pk}/pages/2/?passage={position}&pane=1")
    body = pane.content.decode()
    assert pane.status_code == 200 and 'data-testid="source-page-image"' in body and 'data-testid="zoom"' in body
    boxes = marks(body)
    assert boxes, "the quoted words are marked on the slide"
    # The sentence's box is 1 inch from the left, 2.5 inches down (72 points an inch); the passage
    # starts with the slide's title, so the title may be marked too.
    assert any(x >= 60 and y >= 150 for x, y, _, _ in boxes), "the sentence is marked where it is on the slide"
    assert "diffusion" in re.search(r'data-words="([^"]*)"', body).group(1)
    assert 'rel="prev"' not in body and 'rel="next"' not in body, "slides 1 and 3 were never shown to them"
    image = client_for(student).get(f"/collections/files/{deck.pk}/pages/2.png")
    assert image.status_code == 200 and image.content.startswith(PNG)
    for teacher in (owner, co_owner):  # the collection's teachers page through every slide
        body = client_for(teacher).get(f"/collections/files/{deck.pk}/pages/2/?passage={position}").content.decode()
        assert 'rel="prev"' in body and 'rel="next"' in body and marks(body)
        image = client_for(teacher).get(f"/collections/files/{deck.pk}/pages/1.png")
        assert image.status_code == 200 and image.content.startswith(PNG)
    # Slides the student was not shown, and anyone outside the course: nothing.
    assert client_for(student).get(f"/collections/files/{deck.pk}/pages/1.png").status_code == 404
    assert client_for(student).get(f"/collections/files/{deck.pk}/pages/1/").status_code == 404
    for outsider in (other_student, other_teacher):
        assert client_for(outsider).get(f"/collections/files/{deck.pk}/pages/2.png").status_code == 404
        assert client_for(outsider).get(f"/collections/files/{deck.pk}/pages/2/").status_code == 404
    # Taken away: out of the course, the slide they were shown is refused at the next request.
    Enrollment.objects.filter(student=student, prompt=course).delete()
    assert client_for(student).get(f"/collections/files/{deck.pk}/pages/2.png").status_code == 404
    assert client_for(student).get(f"/collections/files/{deck.pk}/pages/2/?passage={position}").status_code == 404


def test_deleting_the_deck_deletes_its_slide_images(client_for, owner, deck):
    rendered = rendered_pdf(Path(deck.file.path))
    assert client_for(owner).delete(f"/api/v1/files/{deck.pk}").status_code in (200, 204)
    assert not rendered.exists()


def test_without_libreoffice_the_deck_is_read_and_shown_as_text(
    client_for, owner, fast_collection, ingest_upload, run_worker, settings, caplog, tmp_path
):
    settings.LIBREOFFICE_BINARY = str(tmp_path / "no-soffice")
    source = ingest_upload(fast_collection, membrane_deck(), "membranes.pptx")
    assert (source.status, source.pages) == (FileStatus.READY, 3)
    assert "shown as text only" in caplog.text and "not installed" in caplog.text
    assert any("Active transport pumps ions" in c.text for c in file_chunks(source))
    [note] = notes_on_page(client_for(owner), source)
    assert "shown as text only" in note and "LibreOffice" in note and "not installed" in note
    page = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert "/pages/1.png" not in page and "Osmosis moves water" in page
    slide = client_for(owner).get(f"/collections/files/{source.pk}/pages/3/").content.decode()
    assert 'data-testid="page-text"' in slide and "source-page-image" not in slide
    assert client_for(owner).get(f"/collections/files/{source.pk}/pages/3.png").status_code == 404

    # Installed since: a re-index (of the stored text) draws the slides, and the note goes.
    settings.LIBREOFFICE_BINARY = "soffice"
    files.reindex_collection(fast_collection)
    run_worker()
    source = SourceFile.objects.get(pk=source.pk)
    assert (source.status, source.notes) == (FileStatus.READY, "")
    assert client_for(owner).get(f"/collections/files/{source.pk}/pages/3.png").content.startswith(PNG)


def test_hidden_slides_keep_slide_n_on_page_n(client_for, owner, fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, membrane_deck(hidden=(2,)), "membranes.pptx")
    assert (source.status, source.pages, source.notes) == (FileStatus.READY, 3, "")
    rendered = pymupdf.open(rendered_pdf(Path(source.file.path)))
    assert [" ".join(page.get_text().split()) for page in rendered] == [
        f"Membranes {n} {sentence}" for n, sentence in enumerate(SLIDE_TEXT, start=1)
    ], "the hidden slide is drawn too, so slide 3's text is on page 3"
    page = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert f'src="/collections/files/{source.pk}/pages/3.png"' in page


def test_a_deck_libreoffice_cannot_draw_is_read_as_text_and_the_teacher_told(
    client_for, owner, fast_collection, ingest_upload, settings, caplog, tmp_path
):
    settings.LIBREOFFICE_BINARY = fake_soffice(tmp_path, "echo 'Error: source file could not be loaded'\nexit 1\n")
    source = ingest_upload(fast_collection, membrane_deck(), "membranes.pptx")
    assert (source.status, source.pages) == (FileStatus.READY, 3)
    assert any("Diffusion spreads molecules" in c.text for c in file_chunks(source))
    assert "could not be loaded" in caplog.text, "the log keeps what LibreOffice said"
    [note] = notes_on_page(client_for(owner), source)
    assert "shown as text only" in note and "could not draw" in note
    assert not rendered_pdf(Path(source.file.path)).exists()


def test_libreoffice_taking_too_long_is_stopped_with_all_it_started(
    client_for, owner, fast_collection, ingest_upload, settings, tmp_path
):
    # LibreOffice's launcher starts soffice.bin; here the script starts a `sleep` and waits for it.
    settings.LIBREOFFICE_BINARY = fake_soffice(tmp_path, f"sleep 60 &\necho $! > {tmp_path}/child\nwait\n")
    settings.LIBREOFFICE_TIMEOUT = 1
    started = time.monotonic()
    source = ingest_upload(fast_collection, membrane_deck(), "membranes.pptx")
    assert time.monotonic() - started < 30
    assert (source.status, source.pages) == (FileStatus.READY, 3)
    [note] = notes_on_page(client_for(owner), source)
    assert "shown as text only" in note and "took too long" in note
    child = Path(f"/proc/{(tmp_path / 'child').read_text().strip()}/stat")
    assert not child.exists() or child.read_text().split(")")[-1].split()[0] in ("Z", "X"), "the child was killed"


class _Recorder(BaseHTTPRequestHandler):
    requests: list[str] = []

    def do_GET(self):  # noqa: N802 — http.server's name
        self.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()
        self.wfile.write(red_square())

    do_OPTIONS = do_HEAD = do_GET  # noqa: N815

    def log_message(self, *args):
        pass


def test_libreoffice_fetches_no_linked_picture_from_the_network(fast_collection, ingest_upload):
    # Outside its sandbox, LibreOffice 7.4 fetches such a picture (an OPTIONS, then a GET).
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Recorder.requests = []
    try:
        address = f"http://127.0.0.1:{server.server_address[1]}/internal/secret.png"
        source = ingest_upload(fast_collection, membrane_deck(linked=address), "linked.pptx")
    finally:
        server.shutdown()
        server.server_close()
    assert (source.status, source.notes) == (FileStatus.READY, ""), "the slides are drawn all the same"
    assert _Recorder.requests == [], "nothing was fetched"
    assert not pymupdf.open(rendered_pdf(Path(source.file.path)))[0].get_images()


def test_libreoffice_cannot_draw_a_picture_it_is_linked_to_in_the_apps_files(
    fast_collection, ingest_upload, owner, collection
):
    # Another teacher's collection holds a picture; a deck links to where it is stored.
    picture = Path(django_settings.MEDIA_ROOT) / "collections" / str(collection.pk) / "photo-of-the-exam.png"
    picture.parent.mkdir(parents=True, exist_ok=True)
    picture.write_bytes(red_square())
    source = ingest_upload(fast_collection, membrane_deck(linked=picture.as_uri()), "linked.pptx")
    assert (source.status, source.notes) == (FileStatus.READY, "")
    assert not pymupdf.open(rendered_pdf(Path(source.file.path)))[0].get_images(), "the stored picture is not drawn"


def test_where_libreoffice_cannot_be_shut_off_from_the_network_it_is_not_run(
    client_for, owner, fast_collection, ingest_upload, settings, monkeypatch, tmp_path, caplog
):
    # No `unshare` on the PATH (as where a container refuses namespaces): never run unconfined.
    settings.LIBREOFFICE_BINARY = fake_soffice(tmp_path, f"touch {tmp_path}/ran\n")
    monkeypatch.setenv("PATH", str(tmp_path))
    source = ingest_upload(fast_collection, membrane_deck(), "membranes.pptx")
    assert (source.status, source.pages) == (FileStatus.READY, 3)
    assert not (tmp_path / "ran").exists()
    [note] = notes_on_page(client_for(owner), source)
    assert "shown as text only" in note and "network" in note and "administrator" in note
    assert "no unshare command" in caplog.text
