"""Layout at a phone's and a laptop's width: no page is ever wider than the screen, whatever a file
or an answer holds (a long URL, a 1,600-letter word, code, a wide table, long math); passages render
as answers do; the chat list is a drawer on a phone; the file table becomes cards there."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow
from tests.browser.test_journeys import log_in
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

LONG_URL = "https://openstax.org/books/introductory-statistics-2e/pages/2-3-measures?" + "q=mean%20" * 30
LONG_WORD = "Keskiarvo" + "a" * 1600
CODE = "```python\nresult = compute_" + "very_long_name_" * 20 + "(values)\n```"
TABLE = (
    "| "
    + " | ".join(f"column heading {i}" for i in range(14))
    + " |\n|"
    + "---|" * 14
    + "\n| "
    + " | ".join(f"value{i}" for i in range(14))
    + " |"
)
MATH = "$$" + " + ".join(f"x_{{{i}}}^{{2}}" for i in range(60)) + "$$"
PASSAGE = f"The **average power** is $$W=\\int Pdt.$$\n\nSee {LONG_URL} and {LONG_WORD}.\n\n{TABLE}\n\n{CODE}\n\n{MATH}"
ANSWER = f"The **average power** is work per time [1]. See {LONG_URL}\n\n{LONG_WORD}\n\n{CODE}\n\n{TABLE}\n\n{MATH}"

SETUP = """
import json
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection, SourceFile
from rag.index import CollectionIndex, IndexedChunk
from rag.ingest.chunking import compose
from rag.ingest.job import PageText
from rag.providers import get_embedding_model
suffix, text, long_name = json.loads({args!r})
teacher = User.objects.create_user("lt" + suffix, password="layout-pass-123", role=Role.TEACHER)
student = User.objects.create_user("ls" + suffix, password="layout-pass-123", role=Role.STUDENT)
collection = Collection.objects.create(
    name="Physics " + suffix, owner=teacher, language="english", embedding_model="ollama:snowflake-arctic-embed2"
)
pages = [PageText(1, text), PageText(2, ""), PageText(3, "Short page.")]
source = SourceFile.objects.create(
    collection=collection, original_name=long_name, file="collections/x/" + suffix, file_type="pdf", size=1000,
    sha256=suffix * 64, status="ready", pages=3, chunk_count=1, markdown=compose(pages), empty_pages=[2],
    extractor="pdf-fast", uploaded_by=teacher,
)
vector = get_embedding_model(collection.embedding_model).embed_batch([text])[0]
CollectionIndex.for_collection(collection).replace_file(
    source.pk, [IndexedChunk(source.pk, 0, text, long_name, 1, 1, "Work > Power", vector)]
)
prompt = Prompt.objects.create(
    owner=teacher, name="Physics helper " + suffix, chat_model="qwen3:8b", curation_enabled=False
)
prompt.collections.add(collection)
Enrollment.objects.create(student=student, prompt=prompt)
"""


@pytest.mark.parametrize("width", [390, 1366])
def test_no_page_is_wider_than_the_screen(live_app, new_page, journey, ollama, width):
    suffix = str(width)
    long_name = "Lecture-notes-" + "on-energy-and-power-" * 8 + ".pdf"
    live_app.manage("shell", "-c", SETUP.format(args=json.dumps([suffix, PASSAGE, long_name])))
    phone = width < 800

    teacher = new_page(width, 844 if phone else 900)
    log_in(teacher, live_app, "lt" + suffix, "layout-pass-123")
    no_overflow(teacher)
    teacher.get_by_role("link", name="Physics " + suffix).first.click()
    expect(teacher.get_by_test_id("attention-warning")).to_contain_text("1 file needs attention")
    expect(teacher.get_by_test_id("quality-warning")).to_contain_text("1 of 3 pages had no readable text")
    row = teacher.locator("#file-table tbody tr").first
    assert row.evaluate("(r) => getComputedStyle(r).display") == ("block" if phone else "table-row")
    no_overflow(teacher)
    journey.check_a11y(teacher)
    journey.shot(teacher, "collection")

    teacher.get_by_test_id("settings-tab").click()
    expect(teacher.get_by_role("button", name="Save settings")).to_be_visible()
    no_overflow(teacher)
    journey.shot(teacher, "collection-settings")

    teacher.get_by_role("link", name="Files").click()
    teacher.get_by_role("link", name=long_name).click()
    expect(teacher.get_by_test_id("unreadable-pages")).to_contain_text("No text came from page: 2")
    passage = teacher.locator(".chunk-text").first
    expect(passage.locator("strong", has_text="average power")).to_be_visible()
    expect(passage.locator("table")).to_be_visible()
    assert passage.locator("math").count() >= 2
    expect(passage).not_to_contain_text("**average power**")
    no_overflow(teacher)
    journey.check_a11y(teacher)
    journey.shot(teacher, "file-page")

    # The student asks; the answer and its passage hold every long thing at once.
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "average power"}}]),
        Reply(content=ANSWER),
    )
    student = new_page(width, 844 if phone else 900)
    log_in(student, live_app, "ls" + suffix, "layout-pass-123")
    no_overflow(student)
    student.get_by_role("link", name="Physics helper " + suffix).first.click()
    drawer = student.get_by_test_id("chats-drawer")
    if phone:
        expect(drawer).to_be_visible()
        expect(student.locator("#chat-sessions")).to_be_hidden()
    else:
        expect(drawer).to_be_hidden()
    student.get_by_label("Your question").fill("What is average power?")
    student.get_by_role("button", name="Send").click()
    conversation = student.get_by_test_id("conversation")
    answer = conversation.locator(".msg.assistant").last
    expect(answer.locator(".answer table")).to_be_visible()
    expect(answer.locator(".answer pre")).to_be_visible()
    no_overflow(student)

    # The searches: collapsed, with a count; one numbering; the passage rendered, labelled.
    searches = answer.get_by_test_id("searches")
    expect(searches).not_to_have_attribute("open", "")
    expect(searches.locator("summary").first).to_have_text("Searched: average power — 1 passage")
    searches.locator("summary").first.click()
    found = searches.locator("details.passage").first
    expect(found.locator("summary")).to_contain_text(f"[1] {long_name}, p. 1, Work > Power “The average power is")
    assert searches.locator("ol").count() == 0, "[n] is the only numbering"
    found.locator("summary").click()
    expect(found.locator("strong", has_text="average power")).to_be_visible()
    no_overflow(student)

    answer.locator("a.cite", has_text="[1]").click()
    source = answer.locator(".citations details").first
    expect(source).to_have_attribute("open", "")
    expect(source.locator(".passage-text table")).to_be_visible()
    expect(source).not_to_contain_text("$$W=")
    no_overflow(student)
    journey.check_a11y(student)
    journey.shot(student, "chat")

    if phone:
        # The composer stays at the bottom of the screen while the student reads from the top.
        student.evaluate("window.scrollTo(0, 0)")
        box = student.locator("#composer").bounding_box()
        assert box is not None and box["y"] + box["height"] <= 844 + 1
        drawer.click()
        expect(student.locator("#chat-sessions")).to_be_visible()
        expect(drawer).to_have_attribute("aria-expanded", "true")
        expect(student.locator(".session-list li.current")).to_contain_text("What is average power?")
        no_overflow(student)
        journey.shot(student, "chat-drawer")
