"""The model choice in a real browser, at a phone's and a laptop's width: the select above the
question, the chosen model reaching the model server, and each answer saying which model wrote it."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow
from tests.browser.test_journeys import log_in
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

# A long name, as OpenAI-compatible servers name their models: the select must still fit a phone.
SECOND = "llama3.2:3b-instruct-q4_K_M-with-a-rather-long-tag"

SETUP = """
import json
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
suffix, second = json.loads({args!r})
teacher = User.objects.create_user("mt" + suffix, password="model-pass-123", role=Role.TEACHER)
student = User.objects.create_user("ms" + suffix, password="model-pass-123", role=Role.STUDENT)
prompt = Prompt.objects.create(
    owner=teacher, name="Model choice " + suffix, chat_model="qwen3:8b", student_models=["qwen3:8b", second]
)
Enrollment.objects.create(student=student, prompt=prompt)
"""


@pytest.mark.parametrize("width", [390, 1366])
def test_a_student_picks_a_model_for_the_chat(live_app, new_page, journey, ollama, width):
    suffix = str(width)
    ollama.models.append(SECOND)
    live_app.manage("shell", "-c", SETUP.format(args=json.dumps([suffix, SECOND])))
    page = new_page(width, 844 if width < 800 else 900)
    log_in(page, live_app, "ms" + suffix, "model-pass-123")
    page.get_by_role("link", name="Model choice " + suffix).first.click()

    select = page.get_by_label("Model", exact=True)
    expect(select).to_be_visible()
    expect(select).to_have_value("qwen3:8b")
    expect(select.locator("option")).to_have_text(["qwen3:8b", SECOND])
    no_overflow(page)
    journey.check_a11y(page)
    journey.shot(page, f"model-select-{width}")

    select.select_option(SECOND)
    ollama.script(Reply(content="The chosen model answers."))
    page.get_by_label("Your question").fill("Who answers?")
    page.get_by_role("button", name="Send").click()
    conversation = page.get_by_test_id("conversation")
    expect(conversation.locator(".msg.assistant").last).to_contain_text("The chosen model answers.")
    expect(conversation.get_by_test_id("answered-by").last).to_have_text(f"Answered by {SECOND}")
    assert ollama.chat_requests()[-1]["model"] == SECOND
    no_overflow(page)
    journey.shot(page, f"model-answered-{width}")

    # The chat keeps its model: after a reload the select shows it, and the next answer is its.
    page.reload()
    expect(page.get_by_label("Model", exact=True)).to_have_value(SECOND)
    ollama.script(Reply(content="Again the chosen one."))
    page.get_by_label("Your question").fill("And now?")
    page.get_by_role("button", name="Send").click()
    expect(conversation.locator(".msg.assistant").last).to_contain_text("Again the chosen one.")
    assert ollama.chat_requests()[-1]["model"] == SECOND
    no_overflow(page)
