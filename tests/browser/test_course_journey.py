"""Running a course in a real browser: the teacher schedules a prompt, previews it, adds a co-teacher
and later removes a student; the student waits for the opening, uses an example question, stops an
answer, attaches a PDF, downloads the chat, and is refused once removed. At a phone's and a laptop's
width, every page checked for overflow."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

PASSWORD = "course-teacher-pass-123"
EXAMPLE = "Mikä on keskihajonta?"


def model(body: dict) -> Reply:
    """Long, slow answers to the example question (to be stopped); short ones otherwise."""
    question = body["messages"][-1]["content"]
    if question.startswith(EXAMPLE):
        return Reply(chunks=[f"sana{i} " for i in range(400)], delay=0.05)
    if "<attachment>" in question:
        return Reply(content="Liitteesi mukaan keskiarvo on 4.")
    return Reply(content="Vastaus.")


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_teacher_runs_a_course_and_a_student_takes_part(live_app, new_page, journey, ollama, tmp_path, width):
    size = (width, 844 if width < 800 else 900)
    owner, co_teacher = f"tero{width}", f"kaisa{width}"
    live_app.manage("create_teacher", owner, "--password", PASSWORD)
    live_app.manage("create_teacher", co_teacher, "--password", PASSWORD)
    ollama.responder = model
    teacher = new_page(*size)
    teacher.on("dialog", lambda dialog: dialog.accept())
    log_in(teacher, live_app, owner, PASSWORD)

    # A prompt that opens in the future, with guidance, an example question and a co-teacher.
    teacher.get_by_role("link", name="New prompt").first.click()
    no_overflow(teacher)
    teacher.get_by_label("Name", exact=True).fill("Kurssiavustaja")
    teacher.get_by_label("Student instructions").fill("Kysy viikkojen 1–3 aiheista.")
    teacher.get_by_label("Example questions").fill(EXAMPLE)
    teacher.get_by_label("Opens at").fill("2031-03-03T10:00")
    teacher.get_by_label("Add by username or email address").fill(co_teacher)  # typed in full, saved as typed
    teacher.get_by_role("button", name="Create prompt").click()
    expect(teacher.get_by_test_id("prompt-state")).to_contain_text("Not open yet")
    expect(teacher.get_by_test_id("prompt-state")).to_contain_text("Mar 3, 2031")
    journey.look(teacher, "teacher-scheduled-prompt")
    join_url = teacher.get_by_label("Join link").input_value()

    # The teacher previews it before students can.
    teacher.get_by_role("link", name="Try this assistant").click()
    expect(teacher.get_by_test_id("preview-band")).to_contain_text("Preview — students can't use this now.")
    journey.look(teacher, "teacher-preview")
    prompt_url = teacher.url.split("/chat/")[0] + "/"

    # The student joins: the confirmation says who teaches it and what teachers see.
    student = new_page(*size)
    student.goto(join_url)
    expect(student.get_by_test_id("privacy-note")).to_contain_text("Student N")
    expect(student.get_by_test_id("join-confirm")).to_contain_text("opens on Mar 3, 2031")
    journey.look(student, "student-join-confirm")
    student.get_by_label("Username").fill(f"siiri{width}")
    student.get_by_label("Password", exact=True).fill("siirin-salasana-42")
    student.get_by_label("Password confirmation").fill("siirin-salasana-42")
    student.get_by_test_id("privacy-confirm").get_by_role("checkbox").check()  # the privacy notice, read
    student.get_by_role("button", name="Create account and join").click()
    expect(student.get_by_test_id("prompt-closed")).to_contain_text("This assistant opens on Mar 3, 2031")
    expect(student.locator("#composer")).to_have_count(0)
    journey.look(student, "student-waits-for-opening")

    # The teacher opens it now; the student reloads and starts from the example question.
    teacher.goto(prompt_url)
    no_overflow(teacher)
    teacher.get_by_label("Opens at").fill("")
    teacher.get_by_role("button", name="Save prompt").click()
    expect(teacher.get_by_test_id("prompt-state")).to_contain_text("Open")
    no_overflow(teacher)
    student.goto(live_app.url + "/")
    no_overflow(student)
    student.get_by_role("link", name="Kurssiavustaja").click()
    no_overflow(student)
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
    journey.look(student, "student-stopped-answer")

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
    journey.look(student, "student-attached-pdf", a11y=False)

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
    journey.look(teacher, "teacher-roster")
    roster.get_by_test_id("remove-student").click()
    expect(teacher.locator(".messages")).to_contain_text("Student 1 removed")
    student.get_by_label("Your question").fill("Vieläkö pääsen?")
    student.get_by_role("button", name="Send").click()
    expect(student.locator("#composer-note")).to_contain_text("You are no longer a student of this assistant")
    journey.look(student, "student-removed", a11y=False)

    # The co-teacher sees the prompt on their home page and can edit it, but not delete it.
    co = new_page(*size)
    log_in(co, live_app, co_teacher, PASSWORD)
    co.get_by_role("link", name="Kurssiavustaja").click()
    expect(co.get_by_role("heading", name="Kurssiavustaja")).to_be_visible()
    expect(co.get_by_role("button", name="Delete prompt")).to_have_count(0)
    journey.look(co, "co-teacher-prompt-page")
