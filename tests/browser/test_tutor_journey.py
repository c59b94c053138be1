"""Tutor mode in a real browser, on a phone (390 px) and a laptop (1366 px): a teacher switches a
prompt to guide mode and adds an answer key on the prompt page; a student asks for the solution and
gets a hint (the test model server leaks the key first, then gives a hint on the rewrite) and never
sees the key, not even for a moment; the teacher sees the answer marked as rewritten in the student's
chat and the count on the statistics page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow, record_texts, seen_texts
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

# @W@ is the width: the live app is shared by the test's runs.
SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
teacher = User.objects.create_user("veera-@W@", password="veera-pass-123", role=Role.TEACHER)
prompt = Prompt.objects.create(owner=teacher, name="Physics 101 @W@", chat_model="qwen3:8b",
                               system_prompt="You are a patient physics tutor.", curation_enabled=False,
                               chat_visibility="pseudonymous")
student = User.objects.create_user("oskari-@W@", password="oskari-pass-123", role=Role.STUDENT)
Enrollment.objects.create(student=student, prompt=prompt)
"""

KEY = (
    "Solution to exercise 3: the ball falls for t = sqrt(2 * 45 / 9.81) = 3.03 s and hits the ground "
    "with speed v = g t = 29.7 m/s. Marking: full points only with both results."
)
HINT = "Think about which formula links the height of a fall to its time. What do you know about h and g?"


def _leaks(text: str) -> list[str]:
    """The key's tell-tale parts found in `text`, whatever its spacing, punctuation or number format."""
    plain = re.sub(r"[^0-9a-z]", "", text.lower())
    found = [s for s in ("theballfallsfor", "fullpointsonly", "sqrt245981") if s in plain]
    return found + [n for n in ("3.03", "3,03", "29.7", "29,7") if n in text]


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_a_guided_prompt_gives_a_hint_not_the_key_and_the_teacher_sees_it(live_app, new_page, journey, ollama, width):
    live_app.manage("shell", "-c", SETUP.replace("@W@", str(width)))

    # The teacher: guide mode and the answer key, on the prompt page.
    teacher = new_page(width, 900)
    log_in(teacher, live_app, f"veera-{width}", "veera-pass-123")
    teacher.get_by_role("link", name=f"Physics 101 {width}").first.click()
    no_overflow(teacher)
    teacher.get_by_label("Guide: hints, questions and explanations, never a full solution").check()
    teacher.get_by_label("Protected material (never shown to students)").fill(KEY)
    journey.look(teacher, f"guided-prompt-{width}")
    teacher.get_by_role("button", name="Save prompt").click()
    no_overflow(teacher)
    expect(teacher.locator(".messages")).to_be_visible()
    expect(teacher.get_by_label("Protected material (never shown to students)")).to_have_value(KEY)

    # The student asks for the solution: the model leaks the key, then gives a hint on the rewrite.
    ollama.script(Reply(content="Sure! " + KEY), Reply(content=HINT))
    student = new_page(width, 900)
    log_in(student, live_app, f"oskari-{width}", "oskari-pass-123")
    student.get_by_role("link", name=f"Physics 101 {width}").first.click()
    no_overflow(student)
    record_texts(student, "conversation")
    student.get_by_label("Your question").fill("Give me the full solution to exercise 3")
    student.get_by_role("button", name="Send").click()
    answer = student.get_by_test_id("conversation").locator(".msg.assistant").last
    expect(answer).to_contain_text("Think about which formula links the height")
    expect(answer).to_have_class(re.compile(r"\bcomplete\b"))
    no_overflow(student)
    assert len(ollama.chat_requests()) >= 2, "the leaking answer was asked again"
    assert not [s for text in seen_texts(student) for s in _leaks(text)], "the key was never on screen"
    expect(answer.get_by_test_id("guard-note")).to_have_count(0)  # the teachers' note is theirs
    journey.look(student, f"student-hint-{width}")
    student.reload()  # the stored chat as the page serves it, its data included
    no_overflow(student)
    expect(student.get_by_test_id("conversation")).to_contain_text("Think about which formula")
    assert not _leaks(student.content()), "nothing of the key in the student's page"
    expect(student.get_by_test_id("guard-note")).to_have_count(0)

    # The teacher reads the chat (pseudonymous, as the student was told): the answer is marked.
    teacher.reload()
    no_overflow(teacher)
    teacher.get_by_role("link", name="Give me the full solution to exercise 3").click()
    no_overflow(teacher)
    note = teacher.get_by_test_id("guard-note")
    expect(note).to_have_count(1)
    expect(note).to_contain_text("Rewritten: the first answer gave the protected material away")
    journey.look(teacher, f"teacher-reads-chat-{width}")

    # And the count on the statistics page.
    teacher.go_back()
    no_overflow(teacher)
    teacher.get_by_test_id("insight-link").click()
    no_overflow(teacher)
    guards = teacher.get_by_test_id("guards")
    expect(guards).to_contain_text("Answers rewritten as a hint")
    expect(guards.get_by_test_id("leak-rewritten")).to_have_text("1")
    expect(guards.get_by_test_id("leak-withheld")).to_have_text("0")
    journey.look(teacher, f"insight-guards-{width}")
