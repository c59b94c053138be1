"""The privacy sheet and time zones in a real browser (issue 46, items 11 and 14), at 390 and 1366 px,
in English and Finnish, with axe-core.

An administrator opens the privacy sheet from the admin, reads it and downloads its Markdown. A
teacher whose browser is in New York reads their prompt's closing time in New York time, named, and
types a new one in the page language's own format (Finnish: "1.12.2031 klo 9.00"), not the
browser's mm/dd/yyyy picker."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow

pytestmark = pytest.mark.browser

PASSWORD = "privacy-sheet-pass-123"
SETUP = """
from datetime import datetime, UTC
from accounts.models import Role, User
from chat.models import Prompt
User.objects.create_user("dpo{suffix}", password={password!r}, role=Role.TEACHER, is_staff=True, language={language!r})
teacher = User.objects.create_user("tz{suffix}", password={password!r}, role=Role.TEACHER, language={language!r})
prompt = Prompt.objects.create(
    owner=teacher, name="Schedule {suffix}", chat_model="qwen3:8b", closes_at=datetime(2031, 3, 3, 15, 0, tzinfo=UTC)
)
print(prompt.pk)
"""
CASES = [
    pytest.param(390, "en", id="phone-en"),
    pytest.param(1366, "en", id="desktop-en"),
    pytest.param(390, "fi", id="phone-fi"),
]


@pytest.mark.parametrize(("width", "language"), CASES)
def test_an_administrator_reads_and_downloads_the_privacy_sheet(live_app, new_page, journey, width, language):
    suffix = f"{width}{language}"
    live_app.manage("shell", "-c", SETUP.format(suffix=suffix, password=PASSWORD, language=language))
    page = new_page(width, 844 if width < 800 else 900)
    log_in(page, live_app, "dpo" + suffix, PASSWORD)
    page.goto(live_app.url + "/admin/")
    no_overflow(page)
    page.get_by_test_id("admin-privacy-sheet").click()
    page.wait_for_url("**/privacy-sheet/")
    expect(page.locator("html")).to_have_attribute("lang", language)
    sheet = page.get_by_test_id("privacy-sheet")
    expect(page.get_by_role("heading", level=1)).to_have_count(1)
    for part in ("operator", "stored", "retention", "readers", "servers", "deletion", "subprocessors"):
        expect(sheet.get_by_test_id(f"sheet-{part}").get_by_role("heading", level=2)).to_be_visible()
    # From the live app's settings: who runs it, and the model server it was given (loopback here).
    expect(sheet.get_by_test_id("sheet-operator")).to_contain_text("Testiyliopisto IT")
    expect(sheet.get_by_test_id("sheet-servers")).to_contain_text("127.0.0.1")
    expect(sheet.get_by_test_id("sheet-readers").locator("tbody tr")).to_have_count(3)  # the three levels
    journey.look(page, f"sheet-{suffix}")

    with page.expect_download() as info:
        page.get_by_test_id("privacy-sheet-download").click()
    download = info.value
    assert download.suggested_filename == "currechat-privacy-sheet.md"
    text = Path(download.path()).read_text(encoding="utf-8")
    assert text.startswith("# ") and "Testiyliopisto IT" in text and text.count("\n## ") == 7


@pytest.mark.parametrize(("width", "language"), CASES)
def test_a_teacher_reads_and_types_schedules_in_their_own_zone_and_language(
    live_app, new_page, journey, width, language
):
    suffix = f"s{width}{language}"
    prompt_id = live_app.manage(
        "shell", "-c", SETUP.format(suffix=suffix, password=PASSWORD, language=language)
    ).split()[-1]
    page = new_page(width, 844 if width < 800 else 900, timezone_id="America/New_York")
    log_in(page, live_app, "tz" + suffix, PASSWORD)  # the login page told the server the zone
    page.goto(f"{live_app.url}/prompts/{prompt_id}/")
    no_overflow(page)

    # 15.00 UTC on 3 March is 10.00 in New York, and the line says which zone it is.
    state = page.get_by_test_id("prompt-state")
    shown = "3.3.2031 klo 10.00 (America/New_York)" if language == "fi" else "Mar 3, 2031, 10:00 AM (America/New_York)"
    expect(state).to_contain_text(shown)

    # The field shows the time as the language writes it, typed as text in the same zone.
    field = page.locator("input[name=closes_at]")
    expect(field).to_have_attribute("type", "text")
    expect(field).to_have_value("03.03.2031 klo 10.00" if language == "fi" else "Mar 03, 2031, 10:00 AM")
    expect(page.locator("#id_closes_at_helptext")).to_contain_text("America/New_York")
    journey.look(page, f"schedule-{suffix}")

    field.fill("1.12.2031 klo 9.00" if language == "fi" else "Dec 1, 2031, 9:00 AM")
    page.locator("input[name=closes_at]").press("Enter")
    expect(page.get_by_test_id("prompt-state")).to_contain_text(
        "1.12.2031 klo 9.00 (America/New_York)" if language == "fi" else "Dec 1, 2031, 9:00 AM (America/New_York)"
    )
    no_overflow(page)
