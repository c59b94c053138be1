"""Issue 46, items 5 and 9 in Finnish, at 390 and 1366 px: a teacher whose browser speaks Finnish
uploads a picture the vision model reads badly, sees in the file list itself that a page needs
checking (live and after a reload), reads the page image beside the editor, zooms it in place by
click and by keyboard, corrects the page and sees the correction. Every page passes the Finnish
checks (html lang, axe-core, no English sentence of the catalogue left; tests/browser/test_finnish_journey.py).

Dates in narrow tables never break inside themselves ("28.11.2 026", issue 46): the teacher's API
tokens are listed with Finnish dates, the longest, and each date stays on one line at 390 px."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow
from tests.browser.test_finnish_journey import look_at
from tests.test_ingest_formats import PICTURE

pytestmark = pytest.mark.browser

PASSWORD = "viljan-salasana-4567"

# A teacher with a Finnish collection, and an API token (so the account page lists dates in a table).
SETUP = """
from accounts.models import ApiToken, Role, User
from collections_app.models import Collection
teacher = User.objects.create_user("kuvaopettaja{w}", password={password!r}, role=Role.TEACHER)
Collection.objects.create(
    name="Biologia {w}", owner=teacher, language="finnish", embedding_model="ollama:snowflake-arctic-embed2"
)
ApiToken.issue(teacher, "arviointi", days=30)
"""

CORRECTION = "| Tekijä | Vaikutus nopeuteen |\n|---|---|\n| Valo | nostaa sitä |\n| Kylmä | hidastaa entsyymejä |"

# Where each date of a table's <time> elements is drawn: the top of every line box that the date's
# own characters ("28.11.2026", up to the first space) take. One top per date: it is on one line.
DATE_LINES = """(table) => [...table.querySelectorAll('time')].map((time) => {
    const node = time.firstChild;
    const end = node.textContent.indexOf(' ');
    const range = document.createRange();
    range.setStart(node, 0);
    range.setEnd(node, end < 0 ? node.textContent.length : end);
    return {text: time.textContent, date: range.toString(),
            lines: [...new Set([...range.getClientRects()].map((r) => Math.round(r.top)))]};
})"""


def log_in_finnish(page, app, username: str) -> None:
    log_in(page, app, username, PASSWORD, ("Käyttäjätunnus", "Salasana", "Kirjaudu sisään"))


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_finnish_teacher_sees_pages_to_check_and_corrects_one_beside_its_zoomable_image(
    live_app, new_page, journey, ollama, width, tmp_path
):
    live_app.manage("shell", "-c", SETUP.format(w=width, password=PASSWORD))
    board = tmp_path / "taulu.png"
    board.write_bytes(PICTURE)  # the fake vision model reads it as two letters: a page to check
    size = (width, 844 if width < 800 else 900)
    look = look_at(journey, "fi", size)
    page = new_page(*size, locale="fi-FI")
    log_in_finnish(page, live_app, f"kuvaopettaja{width}")

    # Item 5: the file list itself says that a page needs checking, as the file becomes ready...
    page.get_by_role("link", name=f"Biologia {width}").first.click()
    page.get_by_label("Pudota tiedostot tähän tai valitse ne").set_input_files([str(board)])
    page.get_by_role("button", name="Lähetä").click()
    row = page.locator("#file-table tbody tr", has_text="taulu.png")
    expect(row.locator(".file-status")).to_have_text("Valmis", timeout=60_000)
    expect(row.get_by_test_id("pages-to-check")).to_have_text("· 1 sivu kaipaa tarkistusta")
    expect(row).to_have_attribute("data-type", "Kuva")  # its type named, live as after a reload
    # ... and after a reload, with the collection's notice above the list.
    page.reload()
    expect(page.get_by_test_id("flagged-count")).to_contain_text(
        "1 sivu, jonka kuvia lukeva malli on voinut lukea väärin, kaipaa tarkistusta"
    )
    expect(row.get_by_test_id("pages-to-check")).to_have_text("· 1 sivu kaipaa tarkistusta")
    expect(row.get_by_test_id("pages-to-check")).to_have_attribute("href", re.compile(r"/files/\d+/#page-1$"))
    expect(row).to_have_attribute("data-type", "Kuva")
    look(page, "fi-review-collection")

    # Item 9: the link leads to the page; its image is large enough to read, beside the editor.
    row.get_by_test_id("pages-to-check").click()
    expect(page.get_by_role("heading", name="Poimittu teksti")).to_be_visible()
    flagged = page.locator('[data-testid="review-page"]', has=page.get_by_test_id("page-flag"))
    expect(flagged.get_by_test_id("page-flag")).to_have_text(
        "Kuvia lukeva malli antoi tältä sivulta vain vähän tekstiä tai ei lainkaan."
    )
    picture = flagged.get_by_role("img", name="Sivu 1 sellaisena kuin se on alkuperäisessä")
    expect(picture).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth > 300", arg=picture.element_handle())
    editor = flagged.get_by_label("Sivun teksti Markdown-muodossa")
    expect(editor).to_be_visible()  # open already: the page needs checking
    room = flagged.locator(".review-columns").bounding_box()["width"]
    # (a phone: the whole width of the page's text; wider: half the page, beside the editor)
    assert picture.bounding_box()["width"] >= (0.95 * room if width < 800 else 450), "the page image is readable"
    expect(flagged.get_by_role("link", name="Avaa sivu 1 erikseen")).to_be_visible()
    look(page, "fi-review-page")

    # It zooms in place by a click on it; the editor stays. By keyboard, its button ("Suurenna").
    zoom = flagged.get_by_role("button", name="Suurenna")
    picture.click()
    expect(zoom).to_have_attribute("aria-pressed", "true")
    assert picture.bounding_box()["width"] >= (1.9 * room if width < 800 else 900), "zoomed twice as wide"
    expect(editor).to_be_visible()
    no_overflow(page)
    zoom.focus()
    page.keyboard.press("Enter")
    expect(zoom).to_have_attribute("aria-pressed", "false")
    page.keyboard.press("Space")
    expect(zoom).to_have_attribute("aria-pressed", "true")
    look(page, "fi-review-zoomed")
    page.keyboard.press("Enter")
    expect(zoom).to_have_attribute("aria-pressed", "false")
    assert picture.bounding_box()["width"] <= room + 1, "back beside the editor"

    # The correction, saved in Finnish words, replaces what the model read.
    editor.fill(CORRECTION)
    flagged.get_by_role("button", name="Tallenna ja indeksoi uudelleen").click()
    expect(page.locator(".messages")).to_contain_text("Sivu 1 korjattu; tiedosto indeksoidaan uudelleen tekstilläsi.")
    no_overflow(page)
    page.get_by_role("link", name=f"← Biologia {width}").click()
    row = page.locator("#file-table tbody tr", has_text="taulu.png")
    expect(row.locator(".file-status")).to_have_text("Valmis", timeout=60_000)
    expect(row.get_by_test_id("pages-to-check")).to_have_count(0)
    no_overflow(page)
    row.get_by_role("link", name="taulu.png").click()
    expect(page.get_by_test_id("page-flag")).to_have_count(0)
    expect(page.get_by_test_id("page-markdown").locator("table")).to_contain_text("hidastaa entsyymejä")
    expect(page.get_by_test_id("correction-history")).to_contain_text(f"Korjannut kuvaopettaja{width} ")
    look(page, "fi-review-corrected")

    # A table of dates on a phone: each Finnish date ("28.11.2026 klo 13.45") stays whole.
    page.get_by_role("link", name="Tili").click()
    tokens = page.get_by_test_id("api-tokens").locator("table")
    expect(tokens).to_contain_text("arviointi")
    page.set_viewport_size({"width": 390, "height": size[1]})
    dates = page.evaluate(DATE_LINES, tokens.element_handle())
    assert len(dates) == 2, f"the token's creation and expiry dates: {dates}"
    for date in dates:
        assert re.fullmatch(r"\d{1,2}\.\d{1,2}\.\d{4}", date["date"]), f"a Finnish date: {date}"
        assert re.fullmatch(r"\S+ klo \d{1,2}\.\d{2}", date["text"]), f"a Finnish moment: {date}"
        assert len(date["lines"]) == 1, f"{date['text']!r} breaks inside its date at 390 px: {date}"
    look(page, "fi-account")
