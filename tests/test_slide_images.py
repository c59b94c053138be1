"""Slides shown as slides: LibreOffice (Debian's, run for real) makes a PDF of the deck once at
ingestion; the teacher's review page shows each slide beside its text, and a student's citation
opens the slide with the quoted words marked, only on slides their searches returned. Without
LibreOffice the deck is read as before and shown as text."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pptx
import pymupdf
import pytest
from pptx.util import Inches, Pt

from chat.models import Enrollment, Prompt
from collections_app.files import file_chunks
from collections_app.models import FileStatus
from rag.ingest.slides import rendered_pdf
from tests.fixtures_ingest import scanned
from tests.test_originals import PNG, ask, marks

SLIDE_TEXT = [
    "Osmosis moves water across a semipermeable membrane toward the higher solute concentration.",
    "Diffusion spreads molecules from crowded regions into emptier regions until the gradient vanishes.",
    "Active transport pumps ions against their gradient and spends cellular energy as adenosine triphosphate.",
]


def membrane_deck() -> bytes:
    """Three slides of one sentence each, in a text box well inside the slide."""
    deck = pptx.Presentation()
    for number, sentence in enumerate(SLIDE_TEXT, start=1):
        slide = deck.slides.add_slide(deck.slide_layouts[5])
        slide.shapes.title.text = f"Membranes {number}"
        box = slide.shapes.add_textbox(Inches(1), Inches(2.5), Inches(8), Inches(3))
        box.text_frame.word_wrap = True
        box.text_frame.text = sentence
        box.text_frame.paragraphs[0].runs[0].font.size = Pt(24)
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


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
    client_for, owner, student, other_student, other_teacher, course, deck, ollama, settings
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
    teacher = client_for(owner).get(f"/collections/files/{deck.pk}/pages/2/?passage={position}").content.decode()
    assert 'rel="prev"' in teacher and 'rel="next"' in teacher, "the teacher pages through every slide"
    # Slides the student was not shown, and anyone outside the course: nothing.
    assert client_for(student).get(f"/collections/files/{deck.pk}/pages/1.png").status_code == 404
    for outsider in (other_student, other_teacher):
        assert client_for(outsider).get(f"/collections/files/{deck.pk}/pages/2.png").status_code == 404


def test_deleting_the_deck_deletes_its_slide_images(client_for, owner, deck):
    rendered = rendered_pdf(Path(deck.file.path))
    assert client_for(owner).delete(f"/api/v1/files/{deck.pk}").status_code in (200, 204)
    assert not rendered.exists()


def test_without_libreoffice_the_deck_is_read_and_shown_as_text(
    client_for, owner, fast_collection, ingest_upload, settings, caplog, tmp_path
):
    settings.LIBREOFFICE_BINARY = str(tmp_path / "no-soffice")
    source = ingest_upload(fast_collection, membrane_deck(), "membranes.pptx")
    assert (source.status, source.pages) == (FileStatus.READY, 3)
    assert "shown as text only" in caplog.text and "not installed" in caplog.text
    assert any("Active transport pumps ions" in c.text for c in file_chunks(source))
    page = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert "/pages/1.png" not in page and "Osmosis moves water" in page
    slide = client_for(owner).get(f"/collections/files/{source.pk}/pages/3/").content.decode()
    assert 'data-testid="page-text"' in slide and "source-page-image" not in slide
    assert client_for(owner).get(f"/collections/files/{source.pk}/pages/3.png").status_code == 404
