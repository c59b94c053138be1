"""The teacher's and the student's first ten minutes, in a real browser against a live server.

Everything is real but the model server, which is the Ollama-protocol test server: uvicorn, the RQ
worker process, Redis Stack, the offline MiniLM embedder, and Debian's Chromium.
"""

from __future__ import annotations

import json
import re

import pymupdf as fitz
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow, record_texts, seen_texts
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

TEACHER_PASSWORD = "journey-teacher-pass-123"
MARKDOWN = """# Hajontaluvut

## Keskihajonta

Keskihajonta kuvaa, kuinka paljon havainnot poikkeavat keskiarvosta.
"""
TEXT = "Mediaani on järjestetyn aineiston keskimmäinen arvo. Se ei reagoi poikkeaviin havaintoihin.\n"
PDF_PAGE_2 = "Keskiarvo lasketaan jakamalla havaintojen summa niiden lukumäärällä."


__all__ = ["log_in"]  # the other journeys import it from here


def course_files(folder):
    """A Markdown file, a text file, a two-page PDF, and a scanned PDF with no text layer."""
    (folder / "hajonta.md").write_text(MARKDOWN)
    (folder / "mediaani.txt").write_text(TEXT)
    doc = fitz.open()
    doc.new_page().insert_text((72, 72), "Tilastotieteen perusteet")
    doc.new_page().insert_text((72, 72), PDF_PAGE_2)
    doc.save(folder / "keskiarvo.pdf")
    scan = fitz.open()
    scan.new_page().draw_rect(fitz.Rect(72, 72, 300, 300), fill=(0.2, 0.2, 0.2))
    scan.save(folder / "skannaus.pdf")
    return [folder / name for name in ("hajonta.md", "mediaani.txt", "keskiarvo.pdf", "skannaus.pdf")]


def model(body: dict) -> Reply:
    """The chat model: curation says yes, the first round searches, the next one answers citing [1]."""
    if body.get("format"):
        return Reply(content=json.dumps({"score": 9, "include": True, "reason": "Defines the mean."}))
    if body.get("tools") and not any(m["role"] == "tool" for m in body["messages"]):
        return Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "keskiarvo"}}], delay=0.5)
    return Reply(content="Keskiarvo on havaintojen summa jaettuna niiden lukumäärällä [1].", delay=0.05)


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_teacher_then_student_journey(live_app, new_page, journey, ollama, tmp_path, width):
    teacher_name, student_name = f"tiina{width}", f"sanna{width}"
    live_app.manage("create_teacher", teacher_name, "--password", TEACHER_PASSWORD)
    ollama.responder = model
    page = new_page(width, 844 if width < 800 else 900)

    # Log in.
    page.goto(live_app.url + "/")
    expect(page).to_have_title(re.compile("Log in"))
    journey.look(page, "login")
    # By keyboard only: the username field has focus, Tab moves to the password, Enter submits.
    expect(page.get_by_label("Username")).to_be_focused()
    page.keyboard.type(teacher_name)
    page.keyboard.press("Tab")
    page.keyboard.type(TEACHER_PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Your teaching material")).to_be_visible()
    expect(page.get_by_test_id("status-badge")).to_contain_text("Search index: connected")
    expect(page.get_by_test_id("status-badge")).to_contain_text("qwen3:8b")
    journey.look(page, "teacher-home-empty")

    # Create a collection in Finnish; a missing name is explained and the input kept.
    page.get_by_role("link", name="New collection").first.click()
    no_overflow(page)
    page.get_by_label("Description").fill("Kurssin materiaali")
    page.locator("#id_language").select_option("finnish")
    page.get_by_role("button", name="Create collection").click()
    # Said twice, as every refused form says it: in the summary at the top and beside the field.
    expect(page.get_by_test_id("error-summary").locator('a[href="#id_name"]')).to_contain_text(
        "This field is required."
    )
    expect(page.locator("#id_name_error")).to_have_text("This field is required.")
    expect(page.get_by_label("Description")).to_have_value("Kurssin materiaali")
    page.get_by_label("Name", exact=True).fill("Tilastotiede")
    page.get_by_role("button", name="Create collection").click()
    expect(page.get_by_role("heading", name="Tilastotiede")).to_be_visible()
    journey.look(page, "collection-created")

    # Upload a Markdown file, a text file and two PDFs in one go; watch them become ready.
    page.get_by_label("How to read PDFs").select_option("fast")
    page.get_by_label("Drop files here, or choose them").set_input_files([str(p) for p in course_files(tmp_path)])
    page.get_by_role("button", name="Upload").click()
    rows = page.locator("#file-table tbody tr")
    expect(rows).to_have_count(4)
    journey.shot(page, "uploading")
    for name in ("hajonta.md", "mediaani.txt", "keskiarvo.pdf"):
        expect(rows.filter(has_text=name).locator(".file-status")).to_have_text("Ready", timeout=90_000)
    scan = rows.filter(has_text="skannaus.pdf")
    expect(scan.locator(".file-status")).to_have_text("Failed", timeout=30_000)
    expect(scan.locator(".file-detail")).to_contain_text("No text could be found in this PDF")
    expect(scan.get_by_role("button", name="Retry")).to_be_visible()
    journey.look(page, "files-ready-one-failed")

    # Try a search: Finnish stemming finds "keskiarvosta"/"Keskiarvo"; the PDF passage says its page.
    page.get_by_role("link", name="Try a search").click()
    no_overflow(page)
    page.get_by_label("Search for").fill("keskiarvo")
    page.get_by_role("button", name="Search").click()
    results = page.locator(".search-results").first
    pdf_hit = results.locator("li.passage", has_text="keskiarvo.pdf")
    expect(pdf_hit).to_contain_text(re.compile(r"page (1–)?2"))  # short pages share one passage
    expect(pdf_hit).to_contain_text(PDF_PAGE_2)
    expect(results).to_contain_text("hajonta.md")
    journey.look(page, "search-results")

    # Create a prompt, connect the collection, write its system prompt.
    page.get_by_role("link", name="New prompt").first.click()
    no_overflow(page)
    page.get_by_label("Name", exact=True).fill("Tilastoavustaja")
    page.get_by_label("System prompt").fill("Vastaa suomeksi ja kurssimateriaalin pohjalta.")
    page.get_by_label("Tilastotiede").check()
    page.get_by_role("button", name="Create prompt").click()
    expect(page.get_by_role("heading", name="Tilastoavustaja")).to_be_visible()
    journey.look(page, "prompt-created")

    # Copy the join link.
    page.get_by_role("button", name="Copy link").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    join_url = page.get_by_label("Join link").input_value()
    assert page.evaluate("navigator.clipboard.readText()") == join_url
    assert re.search(r"/join/[A-Z0-9]{8}/$", join_url)

    # The student opens the join link, signs up and lands in the prompt's chat.
    student = new_page(width, 844 if width < 800 else 900)
    student.goto(join_url)
    expect(student.get_by_role("heading", name="Join “Tilastoavustaja”")).to_be_visible()
    journey.look(student, "student-join")
    student.get_by_label("Username").fill(student_name)
    student.get_by_label("Password", exact=True).fill("sannan-salasana-42")
    student.get_by_label("Password confirmation").fill("sannan-salasana-42")
    student.get_by_test_id("privacy-confirm").get_by_role("checkbox").check()  # the privacy notice, read
    student.get_by_role("button", name="Create account and join").click()
    expect(student.get_by_text("You joined “Tilastoavustaja”")).to_be_visible()
    expect(student.get_by_test_id("model-status")).to_contain_text("connected")
    journey.look(student, "student-chat-empty")

    # Ask; the search shows while it runs, then its results, then the streamed answer with [1].
    student.get_by_label("Your question").fill("Miten keskiarvo lasketaan?")
    student.keyboard.press("Tab")  # by keyboard: the next stop after the question is Send
    expect(student.get_by_role("button", name="Send")).to_be_focused()
    record_texts(student, "conversation")
    student.keyboard.press("Enter")
    conversation = student.get_by_test_id("conversation")
    expect(conversation.get_by_text("Searched: keskiarvo")).to_be_visible()
    assert any("Searching: keskiarvo" in text for text in seen_texts(student))
    answer = conversation.locator(".msg.assistant").last
    expect(answer).to_contain_text("jaettuna niiden lukumäärällä")
    journey.look(student, "student-answer", a11y=False)  # axe runs once the citation is open

    # The citation opens the passage with its file and page.
    answer.locator("a.cite", has_text="[1]").click()
    source = answer.locator(".citations details").first
    expect(source).to_have_attribute("open", "")
    expect(source).to_contain_text(re.compile(r"keskiarvo\.pdf, pp?\. (1–)?2|hajonta\.md"))
    journey.look(student, "student-citation")

    # Reload: the session is listed and the conversation is back, from the database.
    student.reload()
    expect(student.locator(".session-list li.current")).to_contain_text("Miten keskiarvo lasketaan?")
    expect(student.get_by_test_id("conversation").locator(".msg.user")).to_have_text("Miten keskiarvo lasketaan?")
    expect(student.get_by_test_id("conversation")).to_contain_text("jaettuna niiden lukumäärällä")
    journey.look(student, "student-reloaded", a11y=False)

    # The teacher sees the new student (as "Student 1": students were told chats are pseudonymous)
    # and what they asked on the prompt page, and can read the chat.
    page.reload()
    expect(page.get_by_test_id("roster")).to_contain_text("Student 1")
    expect(page.get_by_test_id("roster")).not_to_contain_text("sanna")
    page.get_by_role("link", name="Miten keskiarvo lasketaan?").click()
    expect(page.get_by_test_id("read-only")).to_contain_text("Student 1")
    expect(page.get_by_test_id("conversation")).to_contain_text("jaettuna niiden lukumäärällä")
    journey.look(page, "teacher-reads-chat")
