"""Sources as a reader meets them, at 390 and 1366 px, in English and Finnish (issue 46 items 4, 8,
10 and 13): a teacher uploads two Markdown files and the upload log follows them to ready; a
student's answer cites both, and its sources are grouped by document; the cited passage opens
beside the chat with every part of it marked, its block quote and list too; a material gap becomes
a test question with "no file yet" chosen, the form in view and focused.

The Finnish runs assert structure (test ids, attributes), not text: new sentences are translated
after the fact."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

SIZES = [pytest.param((390, 844), id="phone"), pytest.param((1366, 900), id="desktop")]
LANGUAGES = [pytest.param("en", id="en"), pytest.param("fi", id="fi")]
PASSWORD = "sources-pass-4567"

SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection
teacher = User.objects.create_user("{t}", password="{pw}", role=Role.TEACHER, language="{lang}")
student = User.objects.create_user("{s}", password="{pw}", role=Role.STUDENT, language="{lang}")
embedder = "ollama:snowflake-arctic-embed2"
collection = Collection.objects.create(name="Plants {t}", owner=teacher, embedding_model=embedder)
prompt = Prompt.objects.create(owner=teacher, name="Plant {t}", chat_model="qwen3:8b", curation_enabled=False)
prompt.collections.add(collection)
Enrollment.objects.create(student=student, prompt=prompt)
print(collection.pk, prompt.pk)
"""

LEAVES = """# Leaves

## Water and light

Leaves take light and water to make sugar for the plant.

> **A quoted exercise about leaves and water**
>
> Write down what leaves do with light and water:
>
> 1. Gas in.
> 2. Sugar out.
"""
ROOTS = "# Roots\n\n## Water\n\nRoots take water and minerals from the soil, and leaves use the water in the light.\n"
QUOTED = "Write down what leaves do with light and water"


def _people(live_app, who: str, width: int, language: str) -> tuple[str, str, str, str]:
    teacher, student = f"tove{who}{width}{language}", f"sami{who}{width}{language}"
    ids = live_app.manage("shell", "-c", SETUP.format(t=teacher, s=student, pw=PASSWORD, lang=language))
    collection, prompt = ids.split()[-2:]
    return teacher, student, collection, prompt


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("size", SIZES)
def test_an_answer_from_two_files_lists_its_sources_by_document_with_the_quote_marked(
    live_app, new_page, journey, ollama, tmp_path, size, language
):
    width, height = size
    teacher_name, student_name, collection, prompt = _people(live_app, "src", width, language)
    (tmp_path / "leaves.md").write_text(LEAVES)
    (tmp_path / "roots.md").write_text(ROOTS)

    # The teacher uploads both; each line of the upload log ends at "ready", no estimate left behind.
    teacher = new_page(width, height)
    log_in(teacher, live_app, teacher_name, PASSWORD)
    teacher.goto(f"{live_app.url}/collections/{collection}/")
    expect(teacher.locator("html")).to_have_attribute("lang", language)
    teacher.locator("#upload-input").set_input_files([str(tmp_path / "leaves.md"), str(tmp_path / "roots.md")])
    teacher.locator("#upload-form button[type=submit]").click()
    lines = teacher.locator("#upload-log li")
    expect(lines).to_have_count(2)
    for line in (lines.first, lines.last):
        expect(line).to_have_attribute("data-status", "ready", timeout=60_000)
    if language == "en":
        expect(lines.filter(has_text="“leaves.md” uploaded. Ready to search.")).to_have_count(1)
        expect(teacher.locator("#upload-log")).not_to_contain_text("It should start")
    journey.look(teacher, f"sources-uploaded-{language}-{width}")

    # The student names both files (the model's search names neither: each named file still gets
    # passages of its own, tests/test_named_documents.py); the answer cites a passage of each.
    student = new_page(width, height)
    log_in(student, live_app, student_name, PASSWORD)
    student.goto(f"{live_app.url}/prompts/{prompt}/chat/")
    no_overflow(student)
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "water light"}}]),
        Reply(content="The roots take up the water [1], and the leaves use it with light [2]."),
    )
    student.locator("#composer-input").fill("What do leaves.md and roots.md each say about water?")
    student.locator("#composer-send").click()
    answer = student.get_by_test_id("conversation").locator(".msg.assistant").last
    groups = answer.locator(".citations").get_by_test_id("source-doc")
    expect(groups).to_have_count(2, timeout=30_000)
    names = {groups.nth(i).locator(".source-doc-name").inner_text() for i in range(2)}
    assert names == {"leaves.md", "roots.md"}
    for i in range(2):  # each group is named once; its passages say where, not the file again
        expect(groups.nth(i).locator(".passage-where").first).not_to_contain_text(".md")
        expect(groups.nth(i)).to_have_attribute("role", "group")
    no_overflow(student)
    journey.look(student, f"sources-grouped-{language}-{width}")

    # The leaves passage opens beside the chat: the quote and its list are marked, word for word (the
    # list's numbers, words of the Markdown but not of the page, once stopped the mark before them).
    leaves = answer.locator('.citations [data-testid="source-doc"]', has_text="leaves.md")
    leaves.locator("summary").first.click()
    leaves.get_by_test_id("open-original").first.click()
    pane = student.get_by_test_id("source-pane")
    expect(pane).to_be_visible()
    quote = pane.locator("blockquote")
    expect(quote.locator("mark.cited").first).to_be_visible()
    unmarked = quote.evaluate(
        """q => [...q.querySelectorAll('p, li')].flatMap(b => {
            const marked = [...b.querySelectorAll('mark.cited')].map(m => m.textContent).join(' ');
            const words = t => (t.match(/[\\p{L}\\p{N}]+/gu) || []);
            const have = new Set(words(marked));
            return words(b.textContent).filter(w => !have.has(w));
        })"""
    )
    assert unmarked == [], f"words of the quoted passage left unmarked: {unmarked}"
    expect(quote.locator("li mark.cited")).to_have_count(2)
    expect(pane.locator("mark.cited", has_text=QUOTED)).to_have_count(1)
    no_overflow(student)
    journey.look(student, f"sources-quote-marked-{language}-{width}")


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("size", SIZES)
def test_a_material_gap_becomes_a_test_question_with_no_file_yet(live_app, new_page, journey, ollama, size, language):
    width, height = size
    teacher_name, student_name, collection, prompt = _people(live_app, "gap", width, language)

    # A question the material (no files yet) cannot answer: a gap.
    student = new_page(width, height)
    log_in(student, live_app, student_name, PASSWORD)
    student.goto(f"{live_app.url}/prompts/{prompt}/chat/")
    no_overflow(student)
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "resit exam dates"}}]),
        Reply(content="The course material does not cover this."),
    )
    student.locator("#composer-input").fill("When is the resit exam?")
    student.locator("#composer-send").click()
    expect(student.get_by_test_id("conversation").locator(".msg.assistant").last).to_contain_text(
        "does not cover", timeout=30_000
    )
    no_overflow(student)

    # The teacher turns it into a test question: the form opens in view, "no file yet" chosen and focused.
    teacher = new_page(width, height)
    log_in(teacher, live_app, teacher_name, PASSWORD)
    teacher.goto(f"{live_app.url}/prompts/{prompt}/insight/")
    gap = teacher.get_by_test_id("gap-row")
    expect(gap).to_have_count(1)
    journey.look(teacher, f"gap-{language}-{width}")
    gap.get_by_test_id("gap-to-check").click()
    expect(teacher.locator("html")).to_have_attribute("lang", language)
    choice = teacher.locator("#check-file")
    expect(choice).to_have_value("none")
    expect(choice).to_be_focused()
    expect(choice).to_be_in_viewport()
    expect(teacher.locator("#check-question")).to_have_value("When is the resit exam?")
    journey.look(teacher, f"gap-to-check-{language}-{width}")
    teacher.get_by_test_id("add-check").click()
    row = teacher.get_by_test_id("check-row")
    expect(row).to_have_count(1)
    expect(row.get_by_test_id("check-no-file")).to_be_visible()
    journey.look(teacher, f"gap-check-added-{language}-{width}")
