"""Teacher pages on a phone (issue 29, item 7): the roster, the files and the statistics fit the
screen with each row's actions (Remove, Block, Retry, Cancel, Delete, Mark handled) in sight, never
behind a sideways scroll; in a new chat the message area takes at most a fifth of the screen, also
after a long question, and the example questions show without scrolling. At 390 and 1366 px."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow

pytestmark = pytest.mark.browser

PASSWORD = "phone-layout-pass-123"
LONG_FIRST = "Maria-Kristiina Aleksandra"
LONG_LAST = "Johansson-Virtanen-Korhonen-Lindqvist"
EXAMPLES = ["What is average power?", "How do I compute the work done by a varying force?"]

# A teacher with a prompt (students named in full, long names), a collection of files in every
# state that has an action, and a month of statistics with a gap and feedback.
SETUP = """
import json
from datetime import timedelta
from django.utils import timezone
from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, Feedback, MaterialGap, Message, MessageRole, Prompt, PromptDay
from collections_app.models import Collection, SourceFile
suffix, first, last, examples = json.loads({args!r})
teacher = User.objects.create_user("pt" + suffix, password="phone-layout-pass-123", role=Role.TEACHER)
collection = Collection.objects.create(
    name="Mechanics " + suffix, owner=teacher, language="english", embedding_model="ollama:snowflake-arctic-embed2"
)
for n, status in enumerate(["ready", "failed", "cancelled", "ready", "ready"]):
    SourceFile.objects.create(
        collection=collection, file="collections/x/p" + suffix + str(n), file_type="pdf", size=1000 + n,
        original_name=f"Lecture-{{n}}-notes-on-kinematics-dynamics-and-energy-conservation-week-{{n}}.pdf",
        sha256=(suffix + str(n)) * 8, status=status, chunk_count=12 if status == "ready" else 0,
        error="The file could not be read." if status == "failed" else "", uploaded_by=teacher,
    )
prompt = Prompt.objects.create(
    owner=teacher, name="Mechanics helper " + suffix, chat_model="qwen3:8b", curation_enabled=False,
    chat_visibility="named", weekly_token_budget=5000, example_questions=examples,
)
prompt.collections.add(collection)
now = timezone.now()
for i in range(4):
    student = User.objects.create_user(
        f"student{{i}}-" + suffix, password="phone-layout-pass-123", role=Role.STUDENT,
        first_name=first + str(i), last_name=last,
    )
    Enrollment.objects.create(student=student, prompt=prompt)
    chat = ChatSession.objects.create(prompt=prompt, user=student, title="Energy", visibility="named")
    question = Message.objects.create(session=chat, role=MessageRole.USER, content="Why is energy conserved?")
    answer = Message.objects.create(session=chat, role=MessageRole.ASSISTANT, content="Because of symmetry.")
    Feedback.objects.create(message=answer, prompt=prompt, rating="down" if i % 2 else "up",
                            comment="I needed a worked example with numbers for the exam " * 2)
for d in range(10):
    PromptDay.objects.create(prompt=prompt, day=(now - timedelta(days=d)).date(), chats=1, questions=3 + d,
                             answers=3 + d, tokens=12000 + 135 * d, searches=4 + d)
MaterialGap.objects.create(prompt=prompt, key="photosynthes leaf", query="photosynthesis in leaves of tropical plants",
                           count=3, first_asked=now, last_asked=now, example=question)
print(prompt.pk, collection.pk)
"""


def in_sight(page, locator) -> dict:
    """The element is shown and lies wholly inside the screen's width (no sideways scroll needed)."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    width = page.viewport_size["width"]
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{locator} spans {box['x']}–{box['x'] + box['width']}"
    return box


def all_in_sight(page, selector: str, count: int) -> None:
    """Every element `selector` finds (say, each row's Delete button) is shown and lies wholly inside
    the screen's width. Measured in one look: the files page redraws its rows when it goes live."""
    expect(page.locator(selector)).to_have_count(count)
    boxes = page.evaluate(
        """(selector) => [...document.querySelectorAll(selector)].map((e) => {
            const r = e.getBoundingClientRect();
            return {text: e.textContent.trim(), left: r.left, right: r.right, width: r.width, height: r.height,
                    shown: e.checkVisibility({visibilityProperty: true})};
        })""",
        selector,
    )
    width = page.viewport_size["width"]
    assert len(boxes) == count, boxes
    out = [b for b in boxes if not (b["shown"] and b["width"] > 0 and b["left"] >= 0 and b["right"] <= width)]
    assert not out, f"out of sight at {width}px: {out}"


@pytest.mark.parametrize("width, height", [pytest.param(390, 844, id="phone"), pytest.param(1366, 900, id="desktop")])
def test_teacher_pages_keep_their_actions_in_sight(live_app, new_page, journey, width, height):
    suffix = f"pl{width}"
    out = live_app.manage("shell", "-c", SETUP.format(args=json.dumps([suffix, LONG_FIRST, LONG_LAST, EXAMPLES])))
    prompt_id, collection_id = out.split()[-2:]
    page = new_page(width, height)
    log_in(page, live_app, "pt" + suffix, PASSWORD)

    # The roster: four students with long names; Remove and Remove-and-block on every row in sight.
    page.goto(f"{live_app.url}/prompts/{prompt_id}/")
    rows = page.get_by_test_id("student-row")
    expect(rows).to_have_count(4)
    expect(rows.first).to_contain_text(LONG_LAST)
    all_in_sight(page, "[data-testid=student-row] [data-testid=remove-student]", 4)
    all_in_sight(page, "[data-testid=student-row] button.danger", 4)
    all_in_sight(page, "[data-testid=student-row] [data-testid=week-use] summary", 4)
    journey.look(page, "roster")

    # The files: long names; Retry (failed, cancelled) and Delete on every row in sight.
    page.goto(f"{live_app.url}/collections/{collection_id}/")
    files = page.locator("#file-table tbody tr")
    expect(files).to_have_count(5)
    expect(files.get_by_role("button", name="Retry")).to_have_count(2)  # the failed and the cancelled file
    all_in_sight(page, "#file-table td.file-actions button", 5 + 2)  # Delete on each, Retry on two
    all_in_sight(page, "#file-table tbody tr td:first-child a", 5)
    journey.look(page, "files")

    # The statistics: figures, the day table, the gap's actions and the feedback in sight.
    page.goto(f"{live_app.url}/prompts/{prompt_id}/insight/")
    expect(page.get_by_test_id("day-table").locator("tbody tr")).to_have_count(10)
    in_sight(page, page.get_by_test_id("day-table"))
    gap = page.get_by_test_id("gap-row")
    in_sight(page, gap.get_by_role("button", name="Mark handled"))
    in_sight(page, gap.get_by_role("link", name="Try a search"))
    feedback = page.get_by_test_id("feedback-row")
    expect(feedback).to_have_count(4)
    all_in_sight(page, "[data-testid=feedback-row] summary", 4)
    journey.look(page, "insight")

    # A new chat: the examples show at once; the message area is at most a fifth of the screen,
    # also when the question runs to many lines.
    page.goto(f"{live_app.url}/prompts/{prompt_id}/chat/new/")
    no_overflow(page)
    examples = page.get_by_test_id("examples")
    for question in EXAMPLES:
        button = examples.get_by_role("button", name=question)
        box = in_sight(page, button)
        assert box["y"] >= 0 and box["y"] + box["height"] <= height, f"{question!r} is below the screen: {box}"
    composer = page.locator("#composer")
    send = page.get_by_role("button", name="Send")
    box = composer.bounding_box()
    fits = "(form) => form.scrollHeight <= form.clientHeight + 1"  # nothing spills out of the area
    assert composer.evaluate(fits), "the message area's content spills out of it"
    assert box["height"] <= height / 5, f"the message area is {box['height']}px of {height}"
    in_sight(page, send)
    in_sight(page, page.get_by_label("Your question"))
    journey.look(page, "new-chat")
    page.get_by_label("Your question").fill("\n".join(f"Line {n} of a long question" for n in range(30)))
    page.wait_for_function("() => document.getElementById('composer-input').value.includes('Line 29')")
    grown = composer.bounding_box()
    assert composer.evaluate(fits), "the message area's content spills out of it"
    assert box["height"] <= grown["height"] <= height / 5, f"the message area grew to {grown['height']}px of {height}"
    in_sight(page, send)
    send_box = send.bounding_box()
    assert send_box["y"] + send_box["height"] <= height, f"Send is below the screen: {send_box}"
    print(f"{width}x{height}: message area {box['height']:.0f}px, after a long question {grown['height']:.0f}px")
    journey.look(page, "new-chat-long-question")
