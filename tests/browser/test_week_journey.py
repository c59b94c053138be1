"""The week at a glance in a real browser, on a phone (390 px) and a laptop (1366 px): a teacher
opens the week's topics, turns one into an answer of their own (accepting the assistant's draft),
and a student asking the same question gets it, marked as the teacher's, with no model request;
"Ask the assistant instead" runs the normal turn."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

# Three students asked when the exam is this week, in chats the teacher may read ("Student N"). @W@ is
# the width: the live app is shared by the test's runs.
SETUP = """
from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, Message, MessageRole, Prompt
from collections_app.models import Collection
teacher = User.objects.create_user("ilona-@W@", password="ilona-pass-123", role=Role.TEACHER)
collection = Collection.objects.create(name="Course notes", owner=teacher, language="english",
                                       embedding_model="ollama:snowflake-arctic-embed2")
prompt = Prompt.objects.create(owner=teacher, name="Week course @W@", chat_model="qwen3:8b",
                               curation_enabled=False, chat_visibility="pseudonymous")
prompt.collections.add(collection)
for n in range(3):
    student = User.objects.create_user(f"student{n}-@W@", password="student-pass-123", role=Role.STUDENT)
    Enrollment.objects.create(student=student, prompt=prompt)
    chat = ChatSession.objects.create(prompt=prompt, user=student, visibility="pseudonymous")
    Message.objects.create(session=chat, role=MessageRole.USER, content="When is the exam?")
    Message.objects.create(session=chat, role=MessageRole.ASSISTANT, content="The exam is on Friday 12 March.")
"""


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_a_topic_becomes_the_teachers_answer_and_a_student_gets_it(live_app, new_page, journey, ollama, width):
    live_app.manage("shell", "-c", SETUP.replace("@W@", str(width)))
    ollama.script(Reply(content='{"names": ["Exam date"]}'))

    teacher = new_page(width, 900)
    log_in(teacher, live_app, f"ilona-{width}", "ilona-pass-123")
    teacher.get_by_role("link", name=f"Week course {width}").first.click()
    no_overflow(teacher)
    teacher.get_by_test_id("insight-link").click()
    no_overflow(teacher)
    topic = teacher.get_by_test_id("topic-row")
    expect(topic).to_have_count(1)
    expect(topic).to_contain_text("Exam date")
    expect(teacher.get_by_test_id("week-trend")).to_contain_text("3 questions this week")
    journey.look(teacher, f"topics-{width}")
    topic.get_by_test_id("topic-to-answer").click()
    no_overflow(teacher)
    form = teacher.get_by_test_id("answer-form")
    expect(form.get_by_label("Question")).to_have_value("When is the exam?")
    expect(form.get_by_label("Answer")).to_have_value("The exam is on Friday 12 March.")
    form.get_by_label("Answer").fill("The exam is on Friday 12 March in hall B.")
    form.get_by_role("button", name="Save the answer").click()
    no_overflow(teacher)
    expect(teacher.get_by_test_id("teacher-answer")).to_contain_text("When is the exam?")

    student = new_page(width, 900)
    log_in(student, live_app, f"student0-{width}", "student-pass-123")
    student.get_by_role("link", name=f"Week course {width}").first.click()
    no_overflow(student)
    requests_before = len(ollama.requests)
    student.get_by_label("Your question").fill("when is the EXAM")
    student.get_by_role("button", name="Send").click()
    answer = student.get_by_test_id("conversation").locator(".msg.assistant").last
    expect(answer).to_contain_text("hall B")
    expect(answer.get_by_test_id("teacher-answer-label")).to_be_visible()
    assert ollama.requests[requests_before:] == [], "the teacher's answer made no model request"
    journey.look(student, f"teacher-answer-{width}")

    ollama.script(Reply(content="The assistant says: check the course calendar."))
    answer.get_by_test_id("ask-assistant").click()
    expect(student.get_by_test_id("conversation").locator(".msg.assistant").last).to_contain_text("course calendar")
    no_overflow(student)
