"""Dates and numbers in Finnish, as a teacher and a student read them in a real browser whose own
locale is American English: the statistics chart's days carry Finnish month abbreviations, token
counts have a no-break space between thousands, the roster and the file list write the same, and the
student's budget line, written by the page's script in the student's own time zone, writes the reset
moment exactly as the server writes one. Every page fits 390 and 1366 px and passes axe-core."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone, translation
from playwright.sync_api import expect

from kernel.formats import moment
from tests.browser.conftest import log_in, no_overflow
from tests.browser.test_finnish_journey import FinnishPages

pytestmark = pytest.mark.browser

PASSWORD = "muodot-journey-pass-123"
NBSP = "\xa0"
STUDENT_ZONE = "Europe/Helsinki"  # the server writes in UTC; the student's script in their own zone
FINNISH_MONTHS = (
    "tammik.", "helmik.", "maalisk.", "huhtik.", "toukok.", "kesäk.",
    "heinäk.", "elok.", "syysk.", "lokak.", "marrask.", "jouluk.",
)  # fmt: skip

# A teacher and a student who chose Finnish (saved on their accounts), a prompt with a year of
# statistics (1 234 567 tokens, all on one day; 1 252 messages), the student 4 600 tokens into a
# 5 000-token week, and a 1 500-page PDF of 12 345 passages. Prints the prompt's and the collection's ids.
SETUP = """
from datetime import timedelta
from django.utils import timezone
from accounts.models import Role, User
from chat.course.enrollment import enroll
from chat.metering.usage import UsageMeter
from chat.models import Prompt
from chat.models.records import PromptDay
from collections_app.models import Collection, SourceFile
teacher = User.objects.create_user("muoto-ope", password={password!r}, role=Role.TEACHER, language="fi")
student = User.objects.create_user("muoto-opp", password={password!r}, role=Role.STUDENT, language="fi")
prompt = Prompt.objects.create(owner=teacher, name="Muotoavustaja", chat_model="qwen3:8b", weekly_token_budget=5000)
enroll(prompt, student)
UsageMeter(student.pk, prompt.pk)(4600, 0, "qwen3:8b")
today = timezone.localdate()
for back in range(3, 365, 40):
    PromptDay.objects.create(prompt=prompt, day=today - timedelta(days=back), questions=1, answers=1)
busy = PromptDay.objects.filter(prompt=prompt, day=today - timedelta(days=3))
busy.update(questions=617, answers=617, tokens=1234567)
collection = Collection.objects.create(name="Muotokokoelma", owner=teacher, language="finnish")
SourceFile.objects.create(
    collection=collection, original_name="luentomoniste.pdf", file="collections/x/muoto", file_type="pdf",
    size=123456789, sha256="e" * 64, status="ready", pages=1500, chunk_count=12345, uploaded_by=teacher, progress=100,
)
print(prompt.pk, collection.pk)
"""


def axis_labels(page) -> list[dict]:
    """The chart's day labels as drawn: their text and where they are on the screen."""
    return page.evaluate(
        """() => [...document.querySelectorAll('[data-testid="chart"] text.day')].map((t) => {
            const box = t.getBoundingClientRect();
            return {text: t.textContent, left: box.left, right: box.right, width: box.width};
        })"""
    )


def test_a_finnish_teacher_and_student_read_one_way_of_writing_dates_and_numbers(live_app, new_page, journey):
    prompt_id, collection_id = live_app.manage("shell", "-c", SETUP.format(password=PASSWORD)).split()[-2:]
    pages = FinnishPages(journey)
    # The browser's own locale is American English: only the page's language may decide.
    teacher = new_page(390, 844, locale="en-US")
    log_in(teacher, live_app, "muoto-ope", PASSWORD)

    # The language selector names each language in its own language.
    names = teacher.locator("#language-select option").all_inner_texts()
    assert names == ["English", "suomi", "svenska"]

    # The statistics of a year: the chart's days with Finnish month abbreviations, the counts grouped.
    teacher.goto(f"{live_app.url}/prompts/{prompt_id}/insight/?days=365")
    # (Playwright's text checks treat a no-break space as any space: the exact characters are read too.)
    expect(teacher.get_by_test_id("tokens")).to_have_text(f"1{NBSP}234{NBSP}567")
    assert teacher.get_by_test_id("tokens").inner_text() == f"1{NBSP}234{NBSP}567"
    assert teacher.get_by_test_id("messages").inner_text() == f"1{NBSP}252"
    busiest = teacher.get_by_test_id("day-table").locator("tbody tr").filter(has_text="567")
    assert f"1{NBSP}234\t1{NBSP}234{NBSP}567" in busiest.inner_text()
    for width in (390, 1366):
        teacher.set_viewport_size({"width": width, "height": 844})
        no_overflow(teacher)
        labels = axis_labels(teacher)
        texts = [label["text"] for label in labels]
        assert len(texts) == 7, texts
        for text in texts:
            day, month = re.fullmatch(r"(\d{1,2})\. (\S+)", text).groups()
            assert month in FINNISH_MONTHS and 1 <= int(day) <= 31, text
        assert len({text.split()[1] for text in texts}) >= 6, f"a year of months: {texts}"
        assert all(label["width"] > 0 for label in labels), "every label is drawn"
        assert all(a["right"] <= b["left"] for a, b in zip(labels, labels[1:], strict=False)), f"overlap at {width}"
        chart = teacher.get_by_test_id("chart").bounding_box()
        assert all(chart["x"] <= label["left"] and label["right"] <= chart["x"] + chart["width"] for label in labels)
    pages.check(teacher, "statistics-year")

    # The roster: the student's week as Finnish writes it.
    teacher.goto(f"{live_app.url}/prompts/{prompt_id}/")
    row = teacher.get_by_test_id("student-row").first
    expect(row.get_by_test_id("week-use")).to_contain_text(f"4{NBSP}600 / 5{NBSP}000 tokenia (92{NBSP}%)")
    assert f"4{NBSP}600 / 5{NBSP}000 tokenia (92{NBSP}%)" in row.get_by_test_id("week-use").inner_text()
    expect(row).to_contain_text(re.compile(r"\d{1,2}\.\d{1,2}\.\d{4}"))
    pages.check(teacher, "roster")

    # The file list: pages and passages grouped, by the server and by the page's script alike.
    teacher.goto(f"{live_app.url}/collections/{collection_id}/")
    row = teacher.locator("#file-table tbody tr").first
    expect(row).to_contain_text(f"1{NBSP}500 sivua")
    expect(row.locator(".file-chunks")).to_have_text(f"12{NBSP}345")
    assert row.locator(".file-chunks").inner_text() == f"12{NBSP}345"
    pages.check(teacher, "file-list")

    # The student, in Helsinki: the budget line is rewritten by the page's script in their own zone,
    # and says the reset moment exactly as the server writes a moment in Finnish.
    student = new_page(390, 844, locale="en-US", timezone_id=STUDENT_ZONE)
    log_in(student, live_app, "muoto-opp", PASSWORD)
    student.goto(f"{live_app.url}/prompts/{prompt_id}/chat/")
    no_overflow(student)
    resets_at = student.evaluate("JSON.parse(document.getElementById('chat-config').textContent).usage.resets_at")
    with translation.override("fi"), timezone.override(ZoneInfo(STUDENT_ZONE)):
        when = moment(datetime.fromisoformat(resets_at))
    line = f"Olet käyttänyt 92{NBSP}% tämän viikon kiintiöstäsi. Kiintiö alkaa alusta {when}."
    expect(student.get_by_test_id("usage-line")).to_have_text(line)
    assert student.get_by_test_id("usage-line").inner_text() == line
    assert re.fullmatch(r"\d{1,2}\.\d{1,2}\.\d{4} klo \d{1,2}\.\d{2}", when)
    # The message counter, written by the script as the student types.
    student.get_by_label("Kysymyksesi").fill("Miten keskiarvo lasketaan?")
    expect(student.locator("#char-count")).to_have_text(f"26 / 8{NBSP}000")
    assert student.locator("#char-count").inner_text() == f"26 / 8{NBSP}000"
    pages.check(student, "student-budget-line")
