"""A student whose browser speaks Finnish does the whole chat journey in Finnish, and their teacher's
pages are Finnish too: every page says `<html lang="fi">`, passes axe-core, fits a phone (390 px)
and a laptop (1366 px), and shows none of the catalogue's English sentences.

The catalogue's English sentences (tests/untranslated.py) are looked for in the text the browser
shows, so strings written by the pages' scripts (the chat's search line, citations) count too.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow
from tests.fake_ollama import Reply
from tests.untranslated import catalogue_sentences, english_left

pytestmark = pytest.mark.browser

PASSWORD = "suomi-journey-pass-123"
PASSAGE = (
    "Keskiarvo lasketaan jakamalla havaintojen summa niiden lukumäärällä. "
    "Se reagoi poikkeaviin havaintoihin, toisin kuin mediaani."
)
ANSWER = "Keskiarvo on havaintojen summa jaettuna niiden lukumäärällä [1]."
WIDTHS = (390, 1366)

# A teacher, a student who has joined nothing yet, a Finnish collection with one indexed Markdown
# passage, and a prompt that searches it; prints the prompt's join code.
SETUP = """
from accounts.models import Role, User
from chat.models import Prompt
from collections_app.models import Collection, SourceFile
from rag.index import CollectionIndex, IndexedChunk
from rag.providers import get_embedding_model
teacher = User.objects.create_user("opettaja", password={password!r}, role=Role.TEACHER, first_name="Outi")
User.objects.create_user("opiskelija", password={password!r}, role=Role.STUDENT)
collection = Collection.objects.create(
    name="Tilastotiede", owner=teacher, language="finnish", embedding_model="ollama:snowflake-arctic-embed2"
)
text = {passage!r}
source = SourceFile.objects.create(
    collection=collection, original_name="keskiluvut.md", file="collections/x/fi", file_type="markdown",
    size=len(text), sha256="f" * 64, status="ready", chunk_count=1, markdown="# Keskiluvut\\n\\n" + text,
    extractor="markdown", uploaded_by=teacher, progress=100,
)
vector = get_embedding_model(collection.embedding_model).embed_batch([text])[0]
CollectionIndex.for_collection(collection).replace_file(
    source.pk, [IndexedChunk(source.pk, 0, text, "keskiluvut.md", None, None, "Keskiluvut", vector)]
)
prompt = Prompt.objects.create(
    owner=teacher, name="Tilastoavustaja", chat_model="qwen3:8b", curation_enabled=False,
    student_instructions="Kysy keskiluvuista.",
)
prompt.collections.add(collection)
print(prompt.join_code)
"""

# What a page shows a reader: its text, its title, and the labels and prompts in attributes.
VISIBLE_TEXT = """() => [
    document.title,
    document.body.innerText,
    ...[...document.querySelectorAll('[aria-label], [placeholder], [title], [data-confirm], img[alt]')].flatMap(
        (e) => ['aria-label', 'placeholder', 'title', 'data-confirm', 'alt'].map((a) => e.getAttribute(a) || '')),
].join(' ')"""


# Words any English sentence is full of and Finnish text never has: they find English that is not in
# the catalogue at all (a sentence nobody marked), which the catalogue check cannot.
ENGLISH_WORDS = {"the", "and", "your", "you", "is", "are", "with", "this", "of", "to", "for", "has", "was", "from"}


def english_words(text: str) -> set[str]:
    return ENGLISH_WORDS & set(re.findall(r"\b[a-z]+\b", text.lower()))


class FinnishPages:
    """The checks every page of the journey passes, with screenshots at both widths."""

    def __init__(self, journey):
        self.journey = journey
        self.sentences = catalogue_sentences("fi", placeholders=True)

    def check(self, page, label: str) -> None:
        expect(page.locator("html")).to_have_attribute("lang", "fi")
        text = page.evaluate(VISIBLE_TEXT)
        left = english_left(text, self.sentences, min_words=2)
        assert left == [], f"{label} ({page.url}) still says, in English: {left}"
        assert not english_words(text), f"{label} ({page.url}) has English words {english_words(text)}: {text}"
        height = page.viewport_size["height"]
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": height})
            no_overflow(page)
            self.journey.check_a11y(page)
            self.journey.shot(page, f"{label}-{width}")


def look_at(journey, language: str, size: tuple[int, int]):
    """A journey's `look` for a test in `language` at `size`: in Finnish, `FinnishPages.check` at both
    widths, then back at the test's own size; otherwise `journey.look`."""
    finnish = FinnishPages(journey) if language == "fi" else None

    def look(page, label: str) -> None:
        if finnish:
            finnish.check(page, label)
            page.set_viewport_size({"width": size[0], "height": size[1]})
        else:
            journey.look(page, label)

    return look


def test_student_chats_in_finnish_and_teacher_pages_are_finnish(live_app, new_page, journey, ollama):
    code = live_app.manage("shell", "-c", SETUP.format(password=PASSWORD, passage=PASSAGE)).split()[-1]
    ollama.script(
        Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "keskiarvo"}}], delay=0.3),
        Reply(content=ANSWER, delay=0.05),
    )
    pages = FinnishPages(journey)
    student = new_page(390, 844, locale="fi-FI")

    # Log in: the browser's language picks Finnish before anyone has chosen one.
    student.goto(live_app.url + "/")
    expect(student.get_by_role("heading", name="Kirjaudu sisään")).to_be_visible()
    pages.check(student, "login")
    student.get_by_label("Käyttäjätunnus").fill("opiskelija")
    student.get_by_label("Salasana").fill(PASSWORD)
    student.get_by_role("button", name="Kirjaudu sisään").click()

    # Home: nothing joined yet; join with the teacher's code.
    expect(student.get_by_role("heading", name="Avustajasi")).to_be_visible()
    pages.check(student, "home")
    student.get_by_label("Liittymiskoodi").fill(code)
    student.get_by_role("button", name="Liity").click()

    # The join page: what the teacher sees, the privacy notice to confirm.
    expect(student.get_by_test_id("privacy-note")).to_contain_text("Opiskelija N")
    pages.check(student, "join")
    student.get_by_test_id("privacy-confirm").get_by_role("checkbox").check()
    student.get_by_test_id("join-button").click()

    # The chat: joined, told what the teacher sees, the teacher's instructions.
    expect(student.get_by_text("Liityit avustajaan ”Tilastoavustaja”")).to_be_visible()
    expect(student.get_by_test_id("student-instructions")).to_have_text("Kysy keskiluvuista.")
    pages.check(student, "chat-empty")

    # Ask: the search, then the answer citing [1], all in Finnish.
    student.get_by_label("Kysymyksesi").fill("Miten keskiarvo lasketaan?")
    student.get_by_role("button", name="Lähetä").click()
    conversation = student.get_by_test_id("conversation")
    answer = conversation.locator(".msg.assistant").last
    expect(answer).to_contain_text("jaettuna niiden lukumäärällä")
    expect(answer.get_by_test_id("searches").locator("summary").first).to_have_text("Haettu: keskiarvo — 1 kohta")
    expect(student.get_by_role("button", name="Lähetä")).to_be_visible()  # the turn is over

    # The citation opens the passage, named by its file and section.
    answer.locator("a.cite", has_text="[1]").click()
    source = answer.locator(".citations details").first
    expect(source).to_have_attribute("open", "")
    expect(source).to_contain_text("keskiluvut.md, Keskiluvut")
    pages.check(student, "chat-answer")

    # Its original: the passage in its section, marked, in the pane beside the chat.
    source.get_by_role("link", name="Näytä se osiossaan").click()
    original = student.get_by_test_id("source-pane")
    expect(original.get_by_test_id("source-context")).to_contain_text("jakamalla havaintojen summa")
    expect(original.locator("mark.cited").first).to_be_visible()
    expect(original.get_by_text("Avustajan lainaama kohta on merkitty keltaisella.")).to_be_visible()
    pages.check(student, "cited-passage")
    original.get_by_role("button", name="Sulje").click()

    # Back home, the chat is listed among the recent ones.
    student.goto(live_app.url + "/")
    expect(student.get_by_test_id("recent-chats")).to_contain_text("Tilastoavustaja")
    pages.check(student, "home-with-chat")

    # The teacher's collection and prompt pages, in Finnish as well.
    teacher = new_page(1366, 900, locale="fi-FI")
    teacher.goto(live_app.url + "/login/")
    pages.check(teacher, "teacher-login")
    teacher.get_by_label("Käyttäjätunnus").fill("opettaja")
    teacher.get_by_label("Salasana").fill(PASSWORD)
    teacher.get_by_role("button", name="Kirjaudu sisään").click()
    teacher.get_by_role("link", name="Tilastotiede").first.click()
    files = teacher.locator("#file-table tbody tr")
    expect(files.filter(has_text="keskiluvut.md").locator(".file-status")).to_have_text("Valmis")
    expect(teacher.get_by_role("button", name="Lähetä")).to_be_visible()
    # What is not in a catalogue is Finnish too: the language's name, the workers' count.
    expect(teacher.get_by_role("main")).to_contain_text("suomi · omistaja")
    expect(teacher.get_by_test_id("status-badge")).to_contain_text("1 taustakäsittelijä käynnissä")
    pages.check(teacher, "teacher-collection")

    files.get_by_role("link", name="keskiluvut.md").click()
    expect(teacher.get_by_role("heading", name="Poimittu teksti")).to_be_visible()
    expect(teacher.locator("article.chunk")).to_contain_text("jakamalla havaintojen summa")
    pages.check(teacher, "teacher-file")

    teacher.get_by_role("link", name="← Tilastotiede").click()
    teacher.get_by_role("link", name="Kokeile hakua").click()
    pages.check(teacher, "teacher-search-empty")
    teacher.get_by_label("Hakusanat").fill("keskiarvo")
    teacher.get_by_role("button", name="Hae").click()
    expect(teacher.locator(".search-results li.passage").first).to_contain_text("keskiluvut.md")
    pages.check(teacher, "teacher-search")

    teacher.get_by_role("link", name="Tilastotiede").first.click()
    teacher.get_by_test_id("settings-tab").click()
    expect(teacher.locator("#id_language")).to_be_visible()
    expect(teacher.get_by_label("Merkityshaun malli")).to_be_hidden()  # which model exactly: behind "Tiedot"
    pages.check(teacher, "teacher-collection-settings")

    teacher.goto(live_app.url + "/")
    teacher.get_by_role("link", name="Tilastoavustaja").first.click()
    expect(teacher.get_by_test_id("roster")).to_contain_text("Opiskelija 1")
    expect(teacher.get_by_label("Järjestelmäkehote")).to_be_visible()
    pages.check(teacher, "teacher-prompt")


def test_swedish_browser_gets_swedish_login_page(live_app, new_page, journey):
    page = new_page(390, 844, locale="sv-SE")
    page.goto(live_app.url + "/login/")
    expect(page.locator("html")).to_have_attribute("lang", "sv")
    expect(page.get_by_role("heading", name="Logga in")).to_be_visible()
    expect(page.get_by_label("Lösenord")).to_be_visible()
    assert english_left(page.evaluate(VISIBLE_TEXT), catalogue_sentences("sv", placeholders=True), min_words=2) == []
    no_overflow(page)
    journey.check_a11y(page)
    journey.shot(page, "login-sv")
