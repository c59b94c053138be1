"""The cited original beside the chat, and the teacher's pages in plain words (issue 46, item 12),
at 390 and 1366 px, in English and Finnish.

A student reading a long answer opens its source in the side pane: the chat stays where they were,
the pane's Close stays in sight however far they scroll the original, and closing gives them the
chat back at the same place. The original opened in a tab of its own leads back to the chat. The
teacher's collection page has the site's bar of every other page, and "Try a search" says where a
passage ranked and how long each step took in words, not "combined score 2.1667" and "embed 742 ms".

The Finnish runs assert structure (test ids, attributes), not text: new sentences are translated
after the fact."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

SIZES = [pytest.param((390, 844), id="phone"), pytest.param((1366, 900), id="desktop")]
LANGUAGES = [pytest.param("en", id="en"), pytest.param("fi", id="fi")]
PASSWORD = "source-pane-pass-4567"

SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection
teacher = User.objects.create_user("{t}", password="{pw}", role=Role.TEACHER, language="{lang}")
student = User.objects.create_user("{s}", password="{pw}", role=Role.STUDENT, language="{lang}")
embedder = "ollama:snowflake-arctic-embed2"
collection = Collection.objects.create(name="Garden {t}", owner=teacher, embedding_model=embedder)
prompt = Prompt.objects.create(owner=teacher, name="Garden {t}", chat_model="qwen3:8b", curation_enabled=False)
prompt.collections.add(collection)
Enrollment.objects.create(student=student, prompt=prompt)
print(collection.pk, prompt.pk)
"""

# One long section: the pane shows all of it and scrolls to the cited passage at its end.
FILLER = "\n\n".join(
    f"Paragraph {i} tells of the garden soil, its stones and the weather of week {i}." for i in range(60)
)
NOTES = f"# Garden\n\n## Soil\n\n{FILLER}\n\nChlorophyll turns sunlight into sugar in every green leaf.\n"
CITED = "Chlorophyll turns sunlight into sugar"
LONG_ANSWER = "\n\n".join(["The garden's notes say a lot about the soil and the weather."] * 25)


def _people(live_app, width: int, language: str) -> tuple[str, str, str, str]:
    teacher, student = f"pia{width}{language}", f"pekka{width}{language}"
    ids = live_app.manage("shell", "-c", SETUP.format(t=teacher, s=student, pw=PASSWORD, lang=language))
    collection, prompt = ids.split()[-2:]
    return teacher, student, collection, prompt


def _top(locator) -> float:
    return locator.evaluate("e => e.getBoundingClientRect().top")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("size", SIZES)
def test_the_source_pane_keeps_the_chat_in_place_and_its_close_in_sight(
    live_app, new_page, journey, ollama, tmp_path, size, language
):
    width, height = size
    teacher_name, student_name, collection, prompt = _people(live_app, width, language)
    (tmp_path / "garden.md").write_text(NOTES)

    # The teacher uploads the notes and tries a search: where a passage ranked and how long each
    # step took, in words.
    teacher = new_page(width, height)
    log_in(teacher, live_app, teacher_name, PASSWORD)
    bar = teacher.locator(".topbar")
    home_bar = bar.bounding_box()
    teacher.goto(f"{live_app.url}/collections/{collection}/")
    no_overflow(teacher)
    # The collection page's site bar is the one of every other page (its styles shrank it once).
    assert bar.bounding_box() == home_bar
    teacher.locator("#upload-input").set_input_files(str(tmp_path / "garden.md"))
    teacher.locator("#upload-form button[type=submit]").click()
    expect(teacher.locator("#upload-log li").first).to_have_attribute("data-status", "ready", timeout=60_000)
    teacher.goto(f"{live_app.url}/collections/{collection}/search/?q=chlorophyll+sunlight")
    no_overflow(teacher)
    hit = teacher.locator(".search-results li.passage").first
    hit.locator("details.passage-meta summary").click()
    rank = hit.get_by_test_id("rank")
    expect(rank).to_be_visible()
    timings = teacher.get_by_test_id("timings")
    timings.locator("summary").click()
    expect(timings.locator("li")).to_have_count(5)  # embed, retrieve, fuse, fetch and the whole
    if language == "en":
        expect(rank).to_have_text(re.compile(r"^Place 1 of \d+ after combining the searches\.$"))
        expect(hit.locator("details.passage-meta")).not_to_contain_text("score")
        expect(hit.locator("details.passage-meta")).to_contain_text("Found by searching for meaning (place ")
        expect(timings.locator("li").first).to_have_text(
            re.compile(r"^Turning the question into a search by meaning took [\d,]+ ms\.$")
        )
    journey.look(teacher, f"search-plain-{language}-{width}")

    # The student's answer is long: they read it from its end, where its source is.
    student = new_page(width, height)
    log_in(student, live_app, student_name, PASSWORD)
    student.goto(f"{live_app.url}/prompts/{prompt}/chat/")
    no_overflow(student)
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "chlorophyll sunlight sugar"}}]),
        Reply(content=LONG_ANSWER + "\n\nChlorophyll makes the sugar [1]."),
    )
    student.locator("#composer-input").fill("What makes the sugar in a leaf?")
    student.locator("#composer-send").click()
    answer = student.get_by_test_id("conversation").locator(".msg.assistant").last
    expect(answer.locator(".citations summary").first).to_be_visible(timeout=30_000)  # one file: no groups
    expect(student).to_have_url(re.compile(rf"/prompts/{prompt}/chat/\d+/$"))
    chat_url = student.url
    answer.locator(".citations summary").first.click()
    opener = answer.locator(".citations").get_by_test_id("open-original").first
    opener.evaluate("e => e.scrollIntoView({block: 'center'})")
    before = _top(opener)

    # Opening the pane leaves the chat where it was.
    opener.click()
    pane = student.get_by_test_id("source-pane")
    expect(pane.locator("mark.cited").first).to_be_in_viewport()  # the pane scrolled to the passage
    assert abs(_top(opener) - before) <= 2, "opening the pane scrolled the chat"
    close = pane.get_by_test_id("close-pane")
    expect(close).to_be_focused()

    # However far the original is scrolled, Close stays in sight.
    pane.locator(".source-pane-body").evaluate("b => { b.scrollTop = 0; }")
    expect(close).to_be_in_viewport()
    assert pane.locator(".source-pane-body").evaluate("b => b.scrollHeight > b.clientHeight + 200"), "a long page"
    pane.locator(".source-pane-body").evaluate("b => { b.scrollTop = b.scrollHeight; }")
    expect(close).to_be_in_viewport(ratio=1)
    no_overflow(student)
    journey.look(student, f"source-pane-{language}-{width}")
    close.click()
    expect(pane).to_be_hidden()
    expect(opener).to_be_focused()
    assert abs(_top(opener) - before) <= 2, "closing the pane moved the chat"

    # In a tab of its own, the original leads back to the chat it was opened from.
    opener.click()
    with student.context.expect_page() as opened:
        pane.locator(".source-pane-open").click()
    tab = opened.value
    tab.wait_for_load_state()
    no_overflow(tab)
    expect(tab.locator("mark.cited", has_text=CITED)).to_have_count(1)
    journey.look(tab, f"original-tab-{language}-{width}")
    tab.get_by_test_id("back-to-chat").click()
    expect(tab).to_have_url(chat_url)
    no_overflow(tab)
