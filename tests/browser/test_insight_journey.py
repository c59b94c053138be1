"""A teacher's insight journey in a real browser: a student's question the material cannot answer
becomes a gap, the student rates the answer, and the teacher reads the statistics (chart and
table, axe-clean), the gap, the feedback and the chat — as "Student 1", never by name."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

# The prompt searches a collection with no files yet: every search finds nothing relevant.
SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection
teacher = User.objects.create_user("ilona", password="ilona-pass-123", role=Role.TEACHER)
student = User.objects.create_user(
    "ines", password="ines-salasana-42", role=Role.STUDENT, first_name="Ines", last_name="Virtanen"
)
collection = Collection.objects.create(name="Biology notes", owner=teacher, language="english",
                                       embedding_model="ollama:snowflake-arctic-embed2")
prompt = Prompt.objects.create(owner=teacher, name="Insight course", chat_model="qwen3:8b",
                               curation_enabled=False, chat_visibility="pseudonymous")
prompt.collections.add(collection)
Enrollment.objects.create(student=student, prompt=prompt)
"""


def test_teacher_sees_statistics_a_gap_feedback_and_a_pseudonymous_chat(live_app, new_page, journey, ollama):
    live_app.manage("shell", "-c", SETUP)

    # The student asks something the material does not cover, and rates the answer.
    page = new_page()
    log_in(page, live_app, "ines", "ines-salasana-42")
    page.get_by_role("link", name="Insight course").click()
    expect(page.get_by_test_id("visibility-note")).to_contain_text("Student N")
    no_overflow(page)
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "photosynthesis in leaves"}}]),
        Reply(content="The course material does not cover photosynthesis."),
    )
    page.get_by_label("Your question").fill("How does photosynthesis work?")
    page.get_by_role("button", name="Send").click()
    conversation = page.get_by_test_id("conversation")
    answer = conversation.locator(".msg.assistant").last
    expect(answer).to_contain_text("does not cover photosynthesis")
    answer.get_by_role("button", name="Not helpful").click()
    expect(answer.get_by_role("status")).to_contain_text("Student N")
    answer.get_by_label("Comment on this answer (optional)").fill("I needed this for the exam")
    answer.get_by_role("button", name="Send comment").click()
    expect(answer.get_by_role("status")).to_contain_text("Your comment was sent.")
    expect(answer.get_by_role("button", name="Not helpful")).to_have_attribute("aria-pressed", "true")
    journey.look(page, "student-feedback")
    page.reload()  # the rating is stored, not just shown
    expect(conversation.locator(".msg.assistant").last.get_by_role("button", name="Not helpful")).to_have_attribute(
        "aria-pressed", "true"
    )

    # The teacher opens the statistics from the prompt page.
    teacher = new_page()
    log_in(teacher, live_app, "ilona", "ilona-pass-123")
    teacher.get_by_role("link", name="Insight course").first.click()
    no_overflow(teacher)
    teacher.get_by_test_id("insight-link").click()
    expect(teacher.get_by_role("heading", name="Statistics, material gaps and feedback")).to_be_visible()
    chart = teacher.get_by_test_id("chart")
    expect(chart).to_be_visible()
    expect(chart.locator("rect.bar")).to_have_count(30)
    assert chart.bounding_box()["height"] > 100, "the chart is drawn at a readable size"
    expect(teacher.get_by_test_id("messages")).to_have_text("2")
    expect(teacher.get_by_test_id("day-table")).to_contain_text("2")
    expect(teacher.get_by_test_id("feedback-counts")).to_contain_text("👎 1")
    gap = teacher.get_by_test_id("gap-row")
    expect(gap).to_have_count(1)
    expect(gap).to_contain_text("photosynthesis in leaves")
    expect(gap).to_contain_text("How does photosynthesis work?")
    expect(gap.get_by_role("link", name="Try a search")).to_have_attribute("href", re.compile(r"q=photosynthesis"))
    feedback = teacher.get_by_test_id("feedback-row")
    expect(feedback).to_contain_text("Student 1")
    expect(feedback).to_contain_text("I needed this for the exam")
    journey.look(teacher, "insight")
    html = teacher.content()
    assert "Ines" not in html and "Virtanen" not in html and not re.search(r"\bines\b", html)

    # The gap is handled after new material: marked, it moves out of the open list.
    gap.get_by_role("button", name="Mark handled").click()
    expect(teacher.get_by_test_id("gap-row")).to_contain_text("handled")
    no_overflow(teacher)

    # The teacher reads the chat, labelled "Student 1".
    feedback = teacher.get_by_test_id("feedback-row")
    feedback.locator("summary").click()
    feedback.get_by_role("link", name="Open the chat").click()
    expect(teacher.get_by_test_id("visibility-note")).to_contain_text("Student 1")
    expect(teacher.get_by_test_id("conversation")).to_contain_text("How does photosynthesis work?")
    expect(teacher.get_by_test_id("feedback")).to_have_count(0)  # teachers read; only the student rates
    journey.look(teacher, "teacher-reads-chat")
    html = teacher.content()
    assert "Ines" not in html and "Virtanen" not in html
