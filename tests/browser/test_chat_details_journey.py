"""The chat's details, as a student meets them: a message over the limit is refused with its length
(never cut), the counter starts again after sending, a regenerated answer says it is another answer
to the same question, a stopped answer with no text offers neither Copy nor a rating, and a sent
feedback comment is confirmed. At a phone's and a laptop's width."""

from __future__ import annotations

import itertools

import pytest
from playwright.sync_api import expect

from tests.browser.test_budget_journey import WORDS as LOGIN_WORDS
from tests.browser.test_budget_journey import log_in
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

PASSWORD = "budget-journey-pass-123"  # log_in's
SLOW = "Kerro hitaasti"

SETUP = """
from accounts.models import Role, User
from chat.course.enrollment import enroll
from chat.models import Prompt
teacher = User.objects.create_user({teacher!r}, password={password!r}, role=Role.TEACHER)
student = User.objects.create_user({student!r}, password={password!r}, role=Role.STUDENT)
prompt = Prompt.objects.create(owner=teacher, name={name!r}, chat_model="qwen3:8b")
enroll(prompt, student)
print(prompt.pk)
"""


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_chat_details_are_honest(live_app, new_page, journey, ollama, width):
    numbers = itertools.count(1)

    def model(body: dict) -> Reply:
        if body["messages"][-1]["content"].startswith(SLOW):
            return Reply(chunks=[" "] * 300, delay=0.1)  # stopped before it says anything
        return Reply(content=f"Vastaus numero {next(numbers)}.")

    ollama.responder = model
    names = {role: f"details-{role}{width}" for role in ("teacher", "student")}
    setup = SETUP.format(password=PASSWORD, name=f"Chat {width}", **names)
    prompt_id = live_app.manage("shell", "-c", setup).split()[-1]
    student = new_page(width, 844 if width < 800 else 900, locale="en-GB")
    log_in(student, live_app, LOGIN_WORDS["en"], names["student"])
    student.goto(f"{live_app.url}/prompts/{prompt_id}/chat/")
    box = student.get_by_label("Your question")
    send = student.get_by_role("button", name="Send", exact=True)
    counter = student.locator("#char-count")
    note = student.locator("#composer-note")

    # Too long: refused with its length, nothing cut, Send off.
    box.fill("a" * 8001)
    expect(counter).to_have_text("8,001 / 8,000")
    expect(note).to_have_text(
        "Your message is 8,001 characters long; the most is 8,000. Shorten it or split it into several questions."
    )
    expect(send).to_be_disabled()
    assert len(box.input_value()) == 8001, "never silently cut"
    journey.look(student, "too-long")

    # Short enough: sent, and the counter starts again.
    box.fill("What is a mean?")
    expect(note).to_have_text("")
    send.click()
    conversation = student.get_by_test_id("conversation")
    expect(conversation).to_contain_text("Vastaus numero 1.")
    expect(counter).to_have_text("0 / 8,000")

    # Regenerate: the first answer stays, the new one says what it is.
    student.get_by_test_id("regenerate").click()
    expect(conversation).to_contain_text("Vastaus numero 2.")
    expect(conversation).to_contain_text("Vastaus numero 1.")
    expect(student.get_by_test_id("regenerated")).to_have_text("Another answer to the same question:")
    journey.look(student, "regenerated")

    # A comment on an answer is confirmed.
    first = conversation.locator(".msg.assistant").first
    first.get_by_role("button", name="Helpful", exact=True).click()
    expect(first.locator(".feedback-status")).to_contain_text("Thanks!")
    first.get_by_label("Comment on this answer (optional)").fill("Clear, thanks.")
    first.get_by_role("button", name="Send comment").click()
    expect(first.locator(".feedback-status")).to_contain_text("Your comment was sent.")

    # Stopped before any text: nothing to copy or rate.
    box.fill(f"{SLOW}, please.")
    send.click()
    stop = student.get_by_test_id("stop")
    expect(stop).to_be_visible()
    stop.click()
    stopped = conversation.locator(".msg.assistant").last
    expect(stopped).to_contain_text("You stopped this answer.", timeout=15_000)
    expect(stopped.get_by_role("button", name="Copy answer")).to_have_count(0)
    expect(stopped.get_by_test_id("feedback")).to_have_count(0)
    expect(stopped.get_by_test_id("regenerate")).to_be_visible()
    journey.look(student, "stopped-empty")
