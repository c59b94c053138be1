"""Running a course in a real browser: the teacher schedules a prompt, previews it, adds a co-teacher
and later removes a student; the student waits for the opening, uses an example question, stops an
answer, attaches a PDF, downloads the chat, and is refused once removed. Desktop and phone widths."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

PASSWORD = "course-teacher-pass-123"
EXAMPLE = "Mikä on keskihajonta?"


def log_in(page, app, username: str, password: str) -> None:
    page.goto(app.url + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def model(body: dict) -> Reply:
    """Long, slow answers to the example question (to be stopped); short ones otherwise."""
    question = body["messages"][-1]["content"]
    if question.startswith(EXAMPLE):
        return Reply(chunks=[f"sana{i} " for i in range(400)], delay=0.05)
    if "<attachment>" in question:
        return Reply(content="Liitteesi mukaan keskiarvo on 4.")
    return Reply(content="Vastaus.")


def test_teacher_runs_a_course_and_a_student_takes_part(live_app, new_page, journey, ollama, tmp_path):
    live_app.manage("create_teacher", "tero", "--password", PASSWORD)
    live_app.manage("create_teacher", "kaisa", "--password", PASSWORD)
    ollama.responder = model
    teacher = new_page()
    teacher.on("dialog", lambda dialog: dialog.accept())
    log_in(teacher, live_app, "tero", PASSWORD)

    # A prompt that opens in the future, with guidance, an example question and a co-teacher.
    teacher.get_by_role("link", name="New prompt").first.click()
    teacher.get_by_label("Name", exact=True).fill("Kurssiavustaja")
    teacher.get_by_label("Student instructions").fill("Kysy viikkojen 1–3 aiheista.")
    teacher.get_by_label("Example questions").fill(EXAMPLE)
    teacher.get_by_label("Opens at").fill("2031-03-03T10:00")
    teacher.get_by_label("kaisa").check()
    teacher.get_by_role("button", name="Create prompt").click()
    expect(teacher.get_by_test_id("prompt-state")).to_contain_text("Not open yet")
    expect(teacher.get_by_test_id("prompt-state")).to_contain_text("3 March 2031")
    journey.check_a11y(teacher)
    no_overflow(teacher)
    journey.shot(teacher, "teacher-scheduled-prompt")
    join_url = teacher.get_by_label("Join link").input_value()

    # The teacher previews it before students can.
    teacher.get_by_role("link", name="Try this assistant").click()
    expect(teacher.get_by_test_id("preview-band")).to_contain_text("Preview — students can't use this now.")
    journey.check_a11y(teacher)
    journey.shot(teacher, "teacher-preview")
    prompt_url = teacher.url.split("/chat/")[0] + "/"

    # The student joins on a phone: the confirmation says who teaches it and what teachers see.
    student = new_page(390, 844)
    student.goto(join_url)
    expect(student.get_by_test_id("privacy-note")).to_contain_text("Student N")
    expect(student.get_by_test_id("join-confirm")).to_contain_text("opens on 3 March 2031")
    journey.check_a11y(student)
    no_overflow(student)
    journey.shot(student, "student-join-confirm")
    student.get_by_label("Username").fill("siiri")
    student.get_by_label("Password", exact=True).fill("siirin-salasana-42")
    student.get_by_label("Password confirmation").fill("siirin-salasana-42")
    student.get_by_role("button", name="Create account and join").click()
    expect(student.get_by_test_id("prompt-closed")).to_contain_text("This assistant opens on 3 March 2031")
    expect(student.locator("#composer")).to_have_count(0)
    journey.check_a11y(student)
    no_overflow(student)
    journey.shot(student, "student-waits-for-opening")

    # The teacher opens it now; the student reloads and starts from the example question.
    teacher.goto(prompt_url)
    teacher.get_by_label("Opens at").fill("")
    teacher.get_by_role("button", name="Save prompt").click()
    expect(teacher.get_by_test_id("prompt-state")).to_contain_text("Open")
    student.goto(live_app.url + "/")
    student.get_by_role("link", name="Kurssiavustaja").click()
    expect(student.get_by_test_id("student-instructions")).to_contain_text("viikkojen 1–3")
    expect(student.get_by_test_id("visibility-note")).to_contain_text("labelled “Student N” — not with your name")
    student.get_by_role("button", name=EXAMPLE).click()

    # It streams; Stop (keyboard-reachable) ends it, keeping what was written.
    conversation = student.get_by_test_id("conversation")
    expect(conversation.locator(".msg.assistant")).to_contain_text("sana3")
    stop = student.get_by_test_id("stop")
    stop.focus()
    student.keyboard.press("Enter")
    expect(conversation).to_contain_text("You stopped this answer.", timeout=10_000)
    assert "sana399" not in conversation.inner_text()
    journey.check_a11y(student)
    no_overflow(student)
    journey.shot(student, "student-stopped-answer")

    # A PDF attached to the next question: shown as a chip, read by the model with the question.
    notes = tmp_path / "muistiinpanot.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Keskiarvo on 4.")
    doc.save(notes)
    student.get_by_test_id("attach").set_input_files(str(notes))
    expect(student.get_by_test_id("attachment-chip")).to_contain_text("muistiinpanot.pdf")
    student.get_by_label("Your question").fill("Tarkista muistiinpanoni")
    student.get_by_role("button", name="Send").click()
    expect(conversation.locator(".msg.user").last).to_contain_text("muistiinpanot.pdf")
    expect(conversation.locator(".msg.assistant").last).to_contain_text("Liitteesi mukaan keskiarvo on 4.")
    assert "Keskiarvo on 4." in ollama.chat_requests()[-1]["messages"][-1]["content"]
    journey.shot(student, "student-attached-pdf")

    # The chat downloads as Markdown.
    with student.expect_download() as download:
        student.get_by_test_id("export-chat").click()
    text = Path(download.value.path()).read_text(encoding="utf-8")
    assert EXAMPLE in text and "You stopped this answer." in text and "_Attached: muistiinpanot.pdf_" in text

    # The teacher removes the student; the student's open page cannot post any more.
    teacher.goto(prompt_url)
    roster = teacher.get_by_test_id("roster")
    expect(roster).to_contain_text("Student 1")
    expect(roster).not_to_contain_text("siiri")
    journey.check_a11y(teacher)
    journey.shot(teacher, "teacher-roster")
    roster.get_by_test_id("remove-student").click()
    expect(teacher.locator(".messages")).to_contain_text("Student 1 removed")
    student.get_by_label("Your question").fill("Vieläkö pääsen?")
    student.get_by_role("button", name="Send").click()
    expect(student.locator("#composer-note")).to_contain_text("You are no longer a student of this assistant")
    journey.shot(student, "student-removed")

    # The co-teacher sees the prompt on their home page and can edit it, but not delete it.
    co = new_page()
    log_in(co, live_app, "kaisa", PASSWORD)
    co.get_by_role("link", name="Kurssiavustaja").click()
    expect(co.get_by_role("heading", name="Kurssiavustaja")).to_be_visible()
    expect(co.get_by_role("button", name="Delete prompt")).to_have_count(0)
    journey.check_a11y(co)
    journey.shot(co, "co-teacher-prompt-page")
