"""Slides, a lecture transcript and a picture in a real browser: the teacher uploads them and
corrects the page the vision model read badly; a student opens a citation and sees the quoted
passage marked beside the chat (full screen on a phone)."""

from __future__ import annotations

import io
import re

import pptx
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply
from tests.test_ingest_formats import PICTURE

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection
teacher = User.objects.create_user("vilja{w}", password="vilja-pass-4567", role=Role.TEACHER)
student = User.objects.create_user("eero{w}", password="eeron-salasana-42", role=Role.STUDENT)
embedder = "ollama:snowflake-arctic-embed2"
collection = Collection.objects.create(name="Biology {w}", owner=teacher, embedding_model=embedder)
prompt = Prompt.objects.create(owner=teacher, name="Biology helper {w}", chat_model="qwen3:8b", curation_enabled=False)
prompt.collections.add(collection)
Enrollment.objects.create(student=student, prompt=prompt)
"""


def slides() -> bytes:
    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[1])
    first.shapes.title.text = "Photosynthesis"
    first.placeholders[1].text_frame.text = "Light reactions happen in the thylakoid membranes of the chloroplast."
    first.notes_slide.notes_text_frame.text = "Show the leaf cross-section."
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Respiration"
    second.placeholders[1].text_frame.text = "Mitochondria release the energy stored in glucose."
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


CAPTIONS = (
    "WEBVTT\n\n00:12:34.000 --> 00:12:40.000\nThe Calvin cycle fixes carbon dioxide into sugar.\n\n"
    "00:12:40.000 --> 00:12:46.000\nIt runs in the stroma, not in the membranes.\n"
)


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_teacher_uploads_and_corrects_then_a_student_sees_the_cited_passage_marked(
    live_app, new_page, journey, ollama, width, tmp_path
):
    live_app.manage("shell", "-c", SETUP.format(w=width))
    deck, lecture, board = tmp_path / "week2.pptx", tmp_path / "lecture-7.vtt", tmp_path / "board.png"
    deck.write_bytes(slides())
    lecture.write_text(CAPTIONS)
    board.write_bytes(PICTURE)
    height = 844 if width < 800 else 900

    # The teacher uploads slides, a transcript and a photo of the board (read by the vision model,
    # which here answers two letters: a page to check).
    page = new_page(width, height)
    log_in(page, live_app, f"vilja{width}", "vilja-pass-4567")
    page.get_by_role("link", name=f"Biology {width}").click()
    page.get_by_label("Drop files here, or choose them").set_input_files([str(deck), str(lecture), str(board)])
    page.get_by_role("button", name="Upload").click()
    rows = page.locator("#file-table tbody tr")
    expect(rows).to_have_count(3)
    for name in ("week2.pptx", "lecture-7.vtt", "board.png"):
        expect(rows.filter(has_text=name).locator(".file-status")).to_have_text("Ready", timeout=60_000)
    # The file list itself says which file has pages to check, live and after a reload.
    board = rows.filter(has_text="board.png")
    expect(board.get_by_test_id("pages-to-check")).to_have_text("· 1 page needs checking")
    page.reload()
    expect(page.get_by_test_id("flagged-count")).to_contain_text("1 page that the vision model may have read wrongly")
    expect(board.get_by_test_id("pages-to-check")).to_have_attribute("href", re.compile(r"/files/\d+/#page-1$"))
    expect(rows.filter(has_text="week2.pptx").get_by_test_id("pages-to-check")).to_have_count(0)
    no_overflow(page)
    journey.shot(page, f"formats-collection-{width}")

    # The slides as LibreOffice drew them, each beside its text; one opens whole, to zoom.
    page.locator("#file-table").get_by_role("link", name="week2.pptx").click()
    pictures = page.get_by_test_id("review-page").locator(".review-image img")
    expect(pictures).to_have_count(2)
    for picture in (pictures.first, pictures.last):
        picture.scroll_into_view_if_needed()
        expect(picture).to_be_visible()
        page.wait_for_function("img => img.complete && img.naturalWidth > 300", arg=picture.element_handle())
    journey.look(page, f"formats-slides-{width}")
    # A click zooms the picture in place (the editor stays); its own page opens from its link.
    pictures.last.click()
    expect(page.get_by_test_id("review-zoom").last).to_have_attribute("aria-pressed", "true")
    no_overflow(page)
    with page.context.expect_page() as opened:
        page.get_by_role("link", name="Open page 2 on its own").click()
    slide = opened.value
    expect(slide.get_by_test_id("source-page-image")).to_be_visible()
    expect(slide.get_by_test_id("page-text")).to_contain_text("Mitochondria release the energy")
    journey.look(slide, f"formats-slide-2-{width}")
    slide.get_by_test_id("zoom").click()  # twice as wide, scrolled inside its frame
    expect(slide.get_by_test_id("zoom")).to_have_attribute("aria-pressed", "true")
    no_overflow(slide)
    slide.close()
    page.go_back()
    no_overflow(page)

    page.get_by_test_id("flagged-count").get_by_role("link", name="board.png").click()
    flagged = page.locator('[data-testid="review-page"]', has=page.get_by_test_id("page-flag"))
    expect(flagged).to_have_count(1)
    expect(flagged.locator("img")).to_be_visible()
    flagged.get_by_label("The page's text, in Markdown").fill(
        "| Factor | Effect on the rate |\n|---|---|\n| Light | raises it |\n| Cold | slows the enzymes |"
    )
    # Beside the editor the page is large enough to read, and zooms in place, by click or keyboard.
    picture = flagged.locator(".review-frame img")
    # (a phone: the whole width of the page's text; wider: half the page, beside the editor)
    room = flagged.locator(".review-columns").bounding_box()["width"]
    assert picture.bounding_box()["width"] >= (0.95 * room if width < 800 else 450), "the page image is readable"
    zoom = flagged.get_by_test_id("review-zoom")
    picture.click()
    expect(zoom).to_have_attribute("aria-pressed", "true")
    assert picture.bounding_box()["width"] >= (1.9 * room if width < 800 else 900)
    expect(flagged.get_by_label("The page's text, in Markdown")).to_be_visible()
    no_overflow(page)
    zoom.focus()
    page.keyboard.press("Enter")
    expect(zoom).to_have_attribute("aria-pressed", "false")
    no_overflow(page)
    journey.look(page, f"formats-correct-{width}")
    flagged.get_by_role("button", name="Save and re-index").click()
    expect(page.locator(".messages")).to_contain_text("Page 1 corrected")
    page.get_by_role("link", name=f"← Biology {width}").click()
    expect(page.locator("#file-table tbody tr", has_text="board.png").locator(".file-status")).to_have_text(
        "Ready", timeout=60_000
    )
    page.locator("#file-table").get_by_role("link", name="board.png").click()
    expect(page.get_by_test_id("page-flag")).to_have_count(0)
    expect(page.get_by_test_id("page-markdown").locator("table")).to_contain_text("slows the enzymes")
    expect(page.get_by_test_id("correction-history")).to_contain_text(f"Corrected by vilja{width}")

    # A student asks; the answer cites the slide; the slide opens beside the chat, passage marked.
    student = new_page(width, height)
    log_in(student, live_app, f"eero{width}", "eeron-salasana-42")
    student.get_by_role("link", name=f"Biology helper {width}").click()
    no_overflow(student)
    if width < 800:
        student.get_by_test_id("chats-drawer").click()
    student.get_by_role("link", name="New chat").click()
    no_overflow(student)
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "thylakoid membranes"}}]),
        Reply(content="They happen in the thylakoid membranes [1]."),
    )
    student.get_by_label("Your question").fill("Where do the light reactions happen?")
    student.get_by_role("button", name="Send").click()
    last = student.get_by_test_id("conversation").locator(".msg.assistant").last
    expect(last).to_contain_text("thylakoid membranes")
    last.locator("a.cite", has_text="[1]").click()
    citation = last.locator(".citations details").first
    expect(citation).to_contain_text("week2.pptx, p. 1, Photosynthesis")
    citation.get_by_test_id("open-original").click()
    pane = student.get_by_test_id("source-pane")
    expect(pane).to_be_visible()
    expect(pane.locator("mark.cited").first).to_be_visible()
    expect(pane.locator("mark.cited", has_text="thylakoid membranes")).to_be_visible()
    # The slide itself, rendered by LibreOffice, with the quoted words marked on it.
    expect(pane.get_by_test_id("source-page-image")).to_be_visible()
    expect(pane.get_by_test_id("page-marks").locator("rect").first).to_be_attached()
    box, viewport = pane.bounding_box(), student.viewport_size
    if width < 800:  # a phone: the whole screen
        assert box["x"] <= 1 and box["width"] >= viewport["width"] - 2
    else:  # beside the chat, which stays in view
        chat = student.locator(".chat-main").bounding_box()
        assert box["x"] >= chat["x"] + chat["width"] - 1
        expect(student.get_by_label("Your question")).to_be_visible()
    no_overflow(student)
    journey.look(student, f"formats-cited-slide-{width}")
    pane.get_by_test_id("close-pane").click()
    expect(pane).to_be_hidden()
