"""Pages people enjoy, at a phone's and a laptop's width: one teacher's and one student's journey
through every page of issue 19, each page visited once per width, screenshotted, axe-core clean and
never wider than the screen, whatever a file or an answer holds (a long URL, a 1,600-letter word,
code, a wide table, long math).

1 no overflow · 2 passages rendered in citations, search steps and the file page · 3 the original one
click away · 4 plain language (students see no model names and no scores; details on demand for
teachers) · 5 chat housekeeping (title, rename, delete, search, copy, regenerate, counter, recent
chats) · 6 phone layout (chat drawer, fixed composer, file cards, settings tab) · 7 honest file
quality · 8 the account pages · 9 the API docs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pymupdf
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

WIDTHS = [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")]
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
PASSWORD = "layout-pass-123"
CHAT_MODEL = "qwen3:8b"
EMBEDDER = "ollama:snowflake-arctic-embed2"

# A teacher, a student in their prompt, and a collection of 61 files: sixty chapters, then one
# three-page PDF (page 2 empty) stored as a real file, whose first page is indexed with every long
# thing at once.
SETUP = """
import json
from django.core.files.base import ContentFile
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection, SourceFile
from rag.index import CollectionIndex, IndexedChunk
from rag.ingest.chunking import compose
from rag.ingest.job import PageText
from rag.providers import get_embedding_model
suffix, text, long_name, pdf_path = json.loads({args!r})
teacher = User.objects.create_user("lt" + suffix, password="layout-pass-123", role=Role.TEACHER)
student = User.objects.create_user("ls" + suffix, password="layout-pass-123", role=Role.STUDENT)
collection = Collection.objects.create(
    name="Physics " + suffix, owner=teacher, language="english", embedding_model="ollama:snowflake-arctic-embed2"
)
SourceFile.objects.bulk_create(  # a course's worth of files before it: the listing has pages
    SourceFile(
        collection=collection, original_name=f"chapter-{{n:03d}}.md", file="collections/x/c" + suffix + str(n),
        file_type="markdown", size=100 + n, sha256=f"{{n:064d}}", status="ready", chunk_count=1,
        uploaded_by=teacher,
    )
    for n in range(1, 61)
)
pages = [PageText(1, text), PageText(2, ""), PageText(3, "Short page.")]
data = open(pdf_path, "rb").read()
source = SourceFile(
    collection=collection, original_name=long_name, file_type="pdf", size=len(data),
    sha256=(suffix * 64)[:64], status="ready", pages=3, chunk_count=1, markdown=compose(pages), empty_pages=[2],
    extractor="pdf-fast", uploaded_by=teacher,
)
source.file.save("upload.pdf", ContentFile(data), save=True)
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


def make_course(live_app, tmp_path, suffix: str) -> str:
    """The course of SETUP for users `lt<suffix>` and `ls<suffix>`; returns the PDF's name."""
    long_name = "Lecture-notes-" + "on-energy-and-power-" * 8 + ".pdf"
    pdf = tmp_path / "notes.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Average power is work per time.")
    doc.new_page()
    doc.new_page().insert_text((72, 72), "Short page.")
    doc.save(pdf)
    live_app.manage("shell", "-c", SETUP.format(args=json.dumps([suffix, PASSAGE, long_name, str(pdf)])))
    return long_name


def image_shown(page) -> None:
    """The page image arrived and decoded (it is rendered on demand, so it may take a moment)."""
    page.wait_for_function(
        "() => { const img = document.querySelector('[data-testid=source-page-image]');"
        " return img && img.complete && img.naturalWidth > 0; }"
    )


def screen(width: int) -> tuple[int, int]:
    return width, 844 if width < 800 else 900


@pytest.mark.parametrize("width", WIDTHS)
def test_teacher_pages_at_each_width(live_app, new_page, journey, ollama, tmp_path, width):
    suffix = f"t{width}"
    long_name = make_course(live_app, tmp_path, suffix)
    phone = width < 800
    teacher = new_page(*screen(width))
    log_in(teacher, live_app, "lt" + suffix, PASSWORD)
    # Teachers see the service's state and models; the home page names the server's defaults.
    expect(teacher.get_by_test_id("status-badge")).to_contain_text("Search index: connected")
    journey.look(teacher, "home")

    # 4. A new collection: the embedding model is picked from those that exist, each described, behind
    # "Details" (the language decides it: tests/browser/test_plain_words_journey.py).
    teacher.get_by_role("link", name="New collection").first.click()
    embedder = teacher.get_by_label("Model for search by meaning")
    assert embedder.evaluate("(e) => e.tagName") == "SELECT"
    expect(embedder.locator("option", has_text="knows every language").first).to_be_attached()
    expect(teacher.get_by_text("manage.py")).to_have_count(0)
    journey.look(teacher, "new-collection")

    # 6, 7. The collection: the file table (cards on a phone), the quality warning; the band names
    # this collection's embedder.
    teacher.goto(live_app.url + "/")
    no_overflow(teacher)
    teacher.get_by_role("link", name="Physics " + suffix).first.click()
    expect(teacher.get_by_test_id("attention-warning")).to_contain_text("1 file needs attention")
    expect(teacher.get_by_test_id("quality-warning")).to_contain_text("1 of 3 pages had no readable text")
    expect(teacher.get_by_test_id("model-details")).to_contain_text(f"model for search by meaning {EMBEDDER}")
    row = teacher.locator("#file-table tbody tr").first
    assert row.evaluate("(r) => getComputedStyle(r).display") == ("block" if phone else "table-row")
    if not phone:  # a long file name does not break the column headings mid-word ("Ty pe")
        lines = teacher.locator("#file-table th:not(:has(.visually-hidden))").evaluate_all(
            "(ths) => ths.map((th) => { const r = document.createRange(); r.selectNodeContents(th);"
            " return [th.innerText, new Set([...r.getClientRects()].map((b) => Math.round(b.top))).size]; })"
        )
        assert all(n <= 1 for _, n in lines), lines
    journey.look(teacher, "collection")

    # 6. Hundreds of files: pages of them, a filter and an order.
    expect(teacher.get_by_test_id("file-count")).to_have_text("61 files.")
    pages = teacher.get_by_test_id("pagination")
    expect(pages).to_contain_text("Page 1 of 2")
    pages.get_by_role("link", name="Next →").click()
    expect(pages).to_contain_text("Page 2 of 2")
    expect(teacher.locator("#file-table tbody tr")).to_have_count(11)
    journey.look(teacher, "collection-page-2")
    teacher.get_by_label("Show").select_option("attention")
    teacher.get_by_role("button", name="Apply").click()
    expect(teacher.get_by_test_id("file-count")).to_have_text("1 of 61 files match.")
    expect(teacher.locator("#file-table tbody tr")).to_have_count(1)
    no_overflow(teacher)
    teacher.get_by_label("Show").select_option("")
    teacher.get_by_label("Name", exact=True).fill("chapter")
    teacher.get_by_label("Order").select_option("-name")
    teacher.get_by_role("button", name="Apply").click()
    expect(teacher.locator("#file-table tbody tr").first).to_contain_text("chapter-060.md")
    journey.look(teacher, "collection-filtered")

    teacher.get_by_test_id("settings-tab").click()
    expect(teacher.get_by_role("button", name="Save settings")).to_be_visible()
    journey.look(teacher, "collection-settings")

    # 2, 3, 7. The file page: passages rendered; the unreadable page named; the original downloads,
    # and page 1 opens as an image.
    teacher.get_by_role("link", name="Files").click()
    no_overflow(teacher)
    teacher.get_by_role("link", name=long_name).click()
    expect(teacher.get_by_test_id("unreadable-pages")).to_contain_text("No text came from page: 2")
    passage = teacher.locator(".chunk-text").first
    expect(passage.locator("strong", has_text="average power")).to_be_visible()
    expect(passage.locator("table")).to_be_visible()
    assert passage.locator("math").count() >= 2
    expect(passage).not_to_contain_text("**average power**")
    journey.look(teacher, "file-page")
    with teacher.expect_download() as download:
        teacher.get_by_test_id("download-original").click()
    assert Path(download.value.path()).read_bytes().startswith(b"%PDF")
    teacher.get_by_role("link", name="See page 1 as an image").click()
    image = teacher.get_by_test_id("source-page-image")
    expect(image).to_be_visible()
    image_shown(teacher)
    journey.look(teacher, "original-page")

    # 2, 4. Try a search: the passage rendered; how it ranked is behind "Details".
    teacher.go_back()
    no_overflow(teacher)
    teacher.get_by_role("link", name="← Physics " + suffix).click()
    no_overflow(teacher)
    teacher.get_by_role("link", name="Try a search").click()
    no_overflow(teacher)
    teacher.get_by_label("Search for").fill("average power")
    teacher.get_by_label("Let the curation model check each result").uncheck()  # no curation model here
    teacher.get_by_role("button", name="Search").click()
    hit = teacher.locator(".search-results li.passage").first
    expect(hit.locator("strong", has_text="average power")).to_be_visible()
    details = hit.locator("details.passage-meta")
    expect(details).not_to_have_attribute("open", "")
    expect(hit.locator("summary")).to_have_text("Details")
    details.locator("summary").click()
    expect(details).to_have_attribute("open", "")
    # In a teacher's words: where it ranked and which searches found it, no raw scores.
    expect(details.get_by_test_id("rank")).to_have_text(re.compile(r"^Place 1 of \d+ after combining the searches\.$"))
    expect(details).to_contain_text("Found by searching for")
    expect(details).not_to_contain_text("score")
    timings = teacher.get_by_test_id("timings")
    timings.locator("summary").click()
    expect(timings).to_contain_text(re.compile(r"The whole search took [\d,\s]+ ms\."))
    expect(timings).not_to_contain_text("embed ")
    journey.look(teacher, "search-details")

    # 4. The prompt page and its preview chat name the prompt's own chat model.
    teacher.goto(live_app.url + "/")
    no_overflow(teacher)
    teacher.get_by_role("link", name="Physics helper " + suffix).first.click()
    journey.look(teacher, "prompt")
    teacher.get_by_role("link", name="Try this assistant").click()
    expect(teacher.get_by_test_id("model-details")).to_contain_text(f"chat model {CHAT_MODEL}")
    expect(teacher.get_by_test_id("model-status")).to_contain_text("The language model is connected.")
    expect(teacher.get_by_test_id("status-model")).to_have_text(CHAT_MODEL)  # behind the line's "Details"
    journey.look(teacher, "prompt-preview")

    # 8. The account pages: tokens, name and password, and resetting a student's password: without a
    # mail server CurreChat cannot mail the link, and a teacher is never shown one.
    teacher.goto(live_app.url + "/account/")
    journey.look(teacher, "account")
    teacher.get_by_test_id("profile-link").click()
    expect(teacher.get_by_role("heading", name="Change your password")).to_be_visible()
    journey.look(teacher, "profile")
    teacher.go_back()
    no_overflow(teacher)
    teacher.get_by_role("link", name="Reset a student's password").click()
    expect(teacher.get_by_test_id("reset-unavailable")).to_contain_text("no mail server configured")
    expect(teacher.get_by_label("Username")).to_have_count(0)
    journey.look(teacher, "reset-unavailable")

    # 9. The API docs, from the app's own files.
    teacher.goto(live_app.url + "/api/v1/docs")
    expect(teacher.locator(".opblock-summary-path", has_text="/api/v1/collections").first).to_be_visible()
    journey.look(teacher, "api-docs", a11y=False)  # Swagger UI's own markup, not ours


@pytest.mark.parametrize("width", WIDTHS)
def test_student_pages_at_each_width(live_app, new_page, journey, ollama, tmp_path, width):
    suffix = f"s{width}"
    long_name = make_course(live_app, tmp_path, suffix)
    phone = width < 800
    student = new_page(*screen(width))
    log_in(student, live_app, "ls" + suffix, PASSWORD)
    # 4. No model names or service internals anywhere (a band shows only "degraded", and only when
    # the service is: on a busy test machine a health check may say so).
    expect(student.locator("body")).not_to_contain_text(re.compile(f"{re.escape(CHAT_MODEL)}|Search index|embeddings"))
    journey.look(student, "home")

    # 6. The chat: the list is a drawer on a phone; 5. a counter against the length limit.
    student.get_by_role("link", name="Physics helper " + suffix).first.click()
    expect(student.get_by_test_id("model-status")).to_have_text(re.compile("The assistant is available"))
    drawer = student.get_by_test_id("chats-drawer")
    if phone:
        expect(drawer).to_be_visible()
        expect(student.locator("#chat-sessions")).to_be_hidden()
    else:
        expect(drawer).to_be_hidden()
    question = student.get_by_label("Your question")
    question.fill("What is average power?")
    counter = student.locator("#char-count")
    expect(counter).to_have_text(re.compile(r"^22 / [\d,]+$"))
    journey.look(student, "chat-empty")

    # 1, 2. The answer and its passage hold every long thing at once; the searches are collapsed,
    # with a count and one numbering; the passage is rendered and labelled.
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "average power"}}]),
        Reply(content=ANSWER),
    )
    student.get_by_role("button", name="Send").click()
    conversation = student.get_by_test_id("conversation")
    answer = conversation.locator(".msg.assistant").last
    expect(answer.locator(".answer table")).to_be_visible()
    expect(answer.locator(".answer pre")).to_be_visible()
    expect(answer.get_by_test_id("regenerate")).to_be_visible()  # the answer is complete
    searches = answer.get_by_test_id("searches")
    expect(searches).not_to_have_attribute("open", "")
    expect(searches.locator("summary").first).to_have_text("Searched: average power — 1 passage")
    searches.locator("summary").first.click()
    found = searches.locator("details.passage").first
    expect(found.locator("summary")).to_contain_text(f"[1] {long_name}, p. 1, Work > Power “The average power is")
    assert searches.locator("ol").count() == 0, "[n] is the only numbering"
    found.locator("summary").click()
    expect(found.locator("strong", has_text="average power")).to_be_visible()
    # 4. Plain language after the answer too: no model name, no score.
    expect(student.get_by_test_id("model-status")).not_to_contain_text(CHAT_MODEL)
    expect(student.locator("main")).not_to_contain_text(re.compile("score|qwen", re.IGNORECASE))
    journey.look(student, "chat-searches")

    answer.locator("a.cite", has_text="[1]").click()
    source = answer.locator(".citations details").first
    expect(source).to_have_attribute("open", "")
    expect(source.locator(".passage-text table")).to_be_visible()
    expect(source).not_to_contain_text("$$W=")
    journey.look(student, "chat-citation")

    # 3. The cited page of the original, one click away (in the pane beside the chat; a phone's whole screen).
    source.get_by_role("link", name="Open page 1 of the original").click()
    original = student.get_by_test_id("source-pane")
    image = original.get_by_test_id("source-page-image")
    expect(image).to_be_visible()
    image_shown(student)
    journey.look(student, "original-page")
    original.get_by_test_id("close-pane").click()

    # 5. Copy the answer; regenerate it (the earlier answer stays).
    answer.get_by_role("button", name="Copy answer").click()
    expect(answer.get_by_role("button", name="Copied")).to_be_visible()
    assert student.evaluate("navigator.clipboard.readText()").startswith("The **average power** is work per time")
    ollama.script(Reply(content="Average power is the work done divided by the time taken."))
    answer.get_by_test_id("regenerate").click()
    expect(conversation.locator(".msg.assistant").last).to_contain_text("divided by the time taken")
    expect(conversation.locator(".msg.assistant")).to_have_count(2)

    # 5. The chat is titled from its first message; rename it.
    sessions = student.locator(".session-list")
    if phone:
        drawer.click()
        expect(drawer).to_have_attribute("aria-expanded", "true")
    expect(sessions.locator("li.current")).to_contain_text("What is average power?")
    if phone:
        # The list is a dialog over the page: its own Close button closes it, focus back on the opener.
        student.locator("#chat-sessions .drawer-close").click()
        expect(drawer).to_have_attribute("aria-expanded", "false")
        expect(drawer).to_be_focused()
    student.locator(".rename summary").click()
    student.get_by_label("Chat title").fill("Power, week 3")
    student.get_by_test_id("rename-chat").click()
    expect(student.get_by_text("Chat renamed.")).to_be_visible()
    journey.look(student, "chat-renamed")

    if phone:
        # 6. The composer stays at the bottom of the screen while the student reads from the top;
        # the drawer holds the chat list.
        student.evaluate("window.scrollTo(0, 0)")
        box = student.locator("#composer").bounding_box()
        assert box is not None and box["y"] + box["height"] <= 844 + 1
        drawer.click()
        expect(student.locator("#chat-sessions")).to_be_visible()
        expect(sessions.locator("li.current")).to_contain_text("Power, week 3")
        journey.look(student, "chat-drawer")

    # 5. A new chat leaves no empty chat behind; the student's chats are searched by their words.
    student.get_by_test_id("new-chat").click()
    no_overflow(student)
    student.goto(live_app.url + "/")
    expect(student.get_by_test_id("recent-chats")).to_contain_text("Power, week 3")
    expect(student.get_by_test_id("recent-chats").locator("li")).to_have_count(1)
    journey.look(student, "home-recent-chats")
    student.get_by_test_id("recent-chats").get_by_role("link", name="Power, week 3").click()
    no_overflow(student)
    if phone:
        drawer.click()
    search = student.get_by_label("Search your chats")
    search.fill("photosynthesis")
    search.press("Enter")
    expect(sessions).to_contain_text("No chat matches “photosynthesis”.")
    no_overflow(student)
    if phone:
        drawer.click()
    search = student.get_by_label("Search your chats")
    search.fill("divided")  # a word of an answer, not of the title
    search.press("Enter")
    expect(sessions.locator("li")).to_have_count(1)
    if phone:
        drawer.click()
    expect(sessions.get_by_role("link", name="Power, week 3")).to_be_visible()
    journey.look(student, "chat-search")

    # 5. Delete it (after a confirmation): gone from the list.
    sessions.get_by_role("link", name="Power, week 3").click()
    no_overflow(student)
    student.once("dialog", lambda dialog: dialog.accept())
    student.get_by_test_id("delete-chat").click()
    expect(student.get_by_text("Chat deleted.")).to_be_visible()
    expect(sessions).not_to_contain_text("Power, week 3")
    journey.look(student, "chat-deleted")

    # A mistyped address: our page, as wide as the screen, with a way home.
    assert student.goto(live_app.url + "/chats/no-such-chat/").status == 404
    expect(student.get_by_role("heading", name="Not found")).to_be_visible()
    journey.look(student, "not-found")
    student.get_by_role("link", name="Back to your home page").click()
    expect(student.get_by_role("heading", name="Your assistants")).to_be_visible()

    # 8. Their account: tokens, name and password.
    student.goto(live_app.url + "/account/")
    journey.look(student, "account")
    student.get_by_test_id("profile-link").click()
    student.get_by_label("First name").fill("Sanna")
    student.get_by_role("button", name="Save name").click()
    expect(student.get_by_text("Your name was saved.")).to_be_visible()
    journey.look(student, "profile")
