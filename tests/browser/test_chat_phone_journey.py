"""The chat page as a student meets it (issue 46, items 7 and 12), at 390 and 1366 px, in English and
Finnish: the prompt's name is the page's heading; the example questions are in sight on landing,
without scrolling; on a phone "Your chats" opens over the page (a dialog that takes focus, keeps Tab
inside and closes with Escape, giving focus back), never pushing the chat down."""

from __future__ import annotations

import re
import threading

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

PASSWORD = "chat-phone-pass-123"
EXAMPLES = ["What is a confidence interval?", "How do I choose a sample size?", "Why does the mean move?"]
SETUP = """
from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, Prompt
teacher = User.objects.create_user("cpt{suffix}", password="{password}", role=Role.TEACHER)
student = User.objects.create_user("cps{suffix}", password="{password}", role=Role.STUDENT, language="{language}")
prompt = Prompt.objects.create(
    owner=teacher, name="Statistics helper {suffix}", chat_model="qwen3:8b", curation_enabled=False,
    description="Answers from the lecture notes and exercises of Statistics 101, autumn term.",
    student_instructions="Ask about the week's lecture. Say which exercise you mean, and show your working.",
    example_questions={examples!r},
)
Enrollment.objects.create(student=student, prompt=prompt)
print(prompt.pk)
"""


def below_the_fold(page, locator) -> bool:
    box = locator.bounding_box()
    return box is None or box["y"] + box["height"] > page.viewport_size["height"]


@pytest.mark.parametrize(
    ("width", "height", "language"),
    [
        pytest.param(390, 700, "en", id="phone-en"),
        pytest.param(390, 700, "fi", id="phone-fi"),
        pytest.param(1366, 800, "en", id="desktop-en"),
    ],
)
def test_a_student_lands_on_the_chat_with_examples_in_sight_and_opens_the_chat_list_over_it(
    live_app, new_page, journey, ollama, width, height, language
):
    suffix = f"{width}{language}"
    prompt_id = live_app.manage(
        "shell", "-c", SETUP.format(suffix=suffix, password=PASSWORD, language=language, examples=EXAMPLES)
    ).split()[-1]
    page = new_page(width, height)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    log_in(page, live_app, "cps" + suffix, PASSWORD)
    page.goto(f"{live_app.url}/prompts/{prompt_id}/chat/")
    no_overflow(page)
    expect(page.locator("html")).to_have_attribute("lang", language)

    # One <h1>: the prompt's name.
    expect(page.locator("h1")).to_have_count(1)
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Statistics helper {suffix}")

    journey.look(page, f"landing-{suffix}")
    assert not errors, f"the page's scripts failed: {errors}"
    # Every example question is in sight as the page opens, without scrolling.
    assert page.evaluate("window.scrollY") == 0
    for question in EXAMPLES:
        button = page.get_by_test_id("examples").get_by_role("button", name=question)
        expect(button).to_be_visible()
        assert not below_the_fold(page, button), f"{question!r} is below the screen at {width}×{height}"

    toggle = page.get_by_test_id("chats-drawer")
    if width > 800:
        expect(toggle).to_be_hidden()
        expect(page.locator("#chat-sessions")).to_be_visible()
    else:
        the_chat_list_opens_over_the_page(page, journey, toggle, width, height, suffix)
    a_typed_question_ends_the_starters_and_send_looks_disabled_meanwhile(page, ollama)


def the_chat_list_opens_over_the_page(page, journey, toggle, width, height, suffix) -> None:
    # On a phone the chat list opens over the page: the chat does not move.
    first_example = page.get_by_test_id("examples").get_by_role("button", name=EXAMPLES[0])
    before = first_example.bounding_box()
    toggle.click()
    drawer = page.get_by_role("dialog")
    expect(drawer).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "true")
    assert first_example.bounding_box() == before, "opening the chat list pushed the chat down"
    focused = "() => document.getElementById('chat-sessions').contains(document.activeElement)"
    assert page.evaluate(focused), "focus moved into the chat list"
    for _ in range(6):  # Tab stays inside while it is open (the page behind is inert)
        page.keyboard.press("Tab")
        assert page.evaluate(focused), "Tab left the open chat list"
    journey.look(page, f"chats-open-{suffix}")

    page.keyboard.press("Escape")
    expect(drawer).to_be_hidden()
    expect(toggle).to_be_focused()
    expect(toggle).to_have_attribute("aria-expanded", "false")

    # Its Close button and a tap beside it close it too.
    toggle.click()
    expect(page.get_by_role("dialog")).to_be_visible()
    page.get_by_test_id("close-chats").click()
    expect(page.get_by_role("dialog")).to_be_hidden()
    toggle.click()
    page.mouse.click(width - 10, height // 2)
    expect(page.get_by_role("dialog")).to_be_hidden()
    expect(page.get_by_test_id("examples").get_by_role("button", name=re.compile(".+")).first).to_be_visible()


def a_typed_question_ends_the_starters_and_send_looks_disabled_meanwhile(page, ollama) -> None:
    send = page.locator("#composer-send")
    enabled_look = send.evaluate("(b) => getComputedStyle(b).backgroundColor")
    gate = threading.Event()
    ollama.script(Reply(content="The interval holds the mean with 95% confidence.", gate=gate, gate_after=1))
    page.get_by_label(re.compile("Your question|Kysymyksesi")).fill("What does 95% mean here?")
    send.click()
    expect(page.get_by_test_id("examples")).to_be_hidden()  # typed, not clicked: the starters go too
    expect(send).to_be_disabled()
    assert send.evaluate("(b) => getComputedStyle(b).backgroundColor") != enabled_look, "disabled Send looks enabled"
    gate.set()
    expect(page.locator(".msg.assistant").last).to_contain_text("95% confidence")
    expect(page.get_by_test_id("examples")).to_be_hidden()
    no_overflow(page)


RATED = """
from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, Feedback, Message, MessageRole, Prompt
teacher = User.objects.create_user("crt{suffix}", password="{password}", role=Role.TEACHER, language="{language}")
student = User.objects.create_user("crs{suffix}", password="{password}", role=Role.STUDENT)
prompt = Prompt.objects.create(owner=teacher, name="Rated helper {suffix}", chat_model="qwen3:8b")
Enrollment.objects.create(student=student, prompt=prompt)
chat = ChatSession.objects.create(prompt=prompt, user=student, title="Means", visibility="pseudonymous")
Message.objects.create(session=chat, role=MessageRole.USER, content="What is the mean?")
answer = Message.objects.create(session=chat, role=MessageRole.ASSISTANT, content="The average of the values.")
Feedback.objects.create(message=answer, prompt=prompt, rating="down", comment="Needed a worked example")
print(prompt.pk, chat.pk)
"""


@pytest.mark.parametrize(
    ("width", "language"),
    [pytest.param(390, "fi", id="phone-fi"), pytest.param(1366, "en", id="desktop-en")],
)
def test_a_teacher_reading_a_students_chat_sees_the_students_rating(live_app, new_page, journey, width, language):
    suffix = f"{width}{language}"
    prompt_id, chat_id = live_app.manage(
        "shell", "-c", RATED.format(suffix=suffix, password=PASSWORD, language=language)
    ).split()[-2:]
    page = new_page(width, 844 if width < 800 else 900)
    log_in(page, live_app, "crt" + suffix, PASSWORD)
    page.goto(f"{live_app.url}/prompts/{prompt_id}/chat/{chat_id}/")
    no_overflow(page)
    rating = page.get_by_test_id("student-rating")
    expect(rating).to_be_visible()
    expect(rating.locator("q")).to_have_text("Needed a worked example")
    expect(page.get_by_role("button", name=re.compile("Helpful|Hyödyllinen"))).to_have_count(0)  # read only
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Rated helper {suffix}")
    journey.look(page, f"teacher-reads-rating-{suffix}")
