"""One way to write dates and numbers per language: the helpers (kernel/formats.py) in English,
Finnish and Swedish, and the pages a teacher and a student read written with them: a teacher's
statistics, a roster, a file list and a student's budget line. The language selector names each
language in its own language."""

from __future__ import annotations

import html
import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from django.template import Context, Template
from django.utils import formats as django_formats
from django.utils import timezone, translation

from chat.metering.usage import UsageMeter
from chat.models import Enrollment
from chat.models.records import PromptDay
from collections_app.models import FileStatus, SourceFile
from kernel import formats

ROOT = Path(__file__).resolve().parent.parent
NBSP = "\xa0"
LANGUAGES = ("en", "fi", "sv")
MOMENT = datetime(2025, 9, 5, 14, 30, tzinfo=UTC)  # 17.30 in Helsinki (summer time)

# What each language's reader should see, written out by hand (not by the code under test).
EXPECTED = {
    "en": {
        "day": "Sep 5, 2025",
        "moment": "Sep 5, 2025, 5:30 PM",
        "number": "1,234,567",
        "decimal": "1,234.57",
        "percent": "29%",
        "months": ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
        "chart_day": "{month} {day}",
        "bytes": "1,000 bytes",
        "megabytes": "1.5 MB",
    },
    "fi": {
        "day": "5.9.2025",
        "moment": "5.9.2025 klo 17.30",
        "number": f"1{NBSP}234{NBSP}567",
        "decimal": f"1{NBSP}234,57",
        "percent": f"29{NBSP}%",
        "months": [
            "tammik.",
            "helmik.",
            "maalisk.",
            "huhtik.",
            "toukok.",
            "kesäk.",
            "heinäk.",
            "elok.",
            "syysk.",
            "lokak.",
            "marrask.",
            "jouluk.",
        ],  # fmt: skip
        "chart_day": "{day}. {month}",
        "bytes": f"1{NBSP}000 tavua",
        "megabytes": "1,5 Mt",
    },
    "sv": {
        "day": "2025-09-05",
        "moment": "2025-09-05 17:30",
        "number": f"1{NBSP}234{NBSP}567",
        "decimal": f"1{NBSP}234,57",
        "percent": f"29{NBSP}%",
        "months": ["jan.", "feb.", "mars", "apr.", "maj", "juni", "juli", "aug.", "sep.", "okt.", "nov.", "dec."],
        "chart_day": "{day} {month}",
        "bytes": f"1{NBSP}000 byte",
        "megabytes": "1,5 MB",
    },
}
# The shape of a moment whose value the test does not choose (the end of the current week).
MOMENT_SHAPE = {
    "en": r"[A-Z][a-z]{2} \d{1,2}, \d{4}, \d{1,2}:\d{2} [AP]M",
    "fi": r"\d{1,2}\.\d{1,2}\.\d{4} klo \d{1,2}\.\d{2}",
    "sv": r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}",
}


@pytest.fixture
def helsinki(settings):
    settings.TIME_ZONE = "Europe/Helsinki"


def text_of(page: str) -> str:
    """What a reader sees of a page: its text without markup, entities resolved."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page.split("<body>", 1)[-1]))


def get_in(client, language: str, url: str) -> str:
    response = client.get(url, HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    return response.content.decode()


# --- The helpers, per language ----------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_helpers_write_as_the_language_writes(language, helsinki):
    want = EXPECTED[language]
    with translation.override(language):
        assert formats.day(MOMENT) == formats.day(date(2025, 9, 5)) == want["day"]
        assert formats.moment(MOMENT) == want["moment"]
        assert formats.moment(MOMENT, zone=True) == f"{want['moment']} (Europe/Helsinki)"
        assert formats.number(1234567) == want["number"]
        assert formats.number(1234.5678, 2) == want["decimal"]
        assert formats.number(999) == "999"
        assert formats.percent(0.29) == want["percent"], "0.29 * 100 is 28.999... in floating point"
        assert formats.percent(29, 100) == want["percent"]
        assert formats.percent(0.996).startswith("99"), "a budget reads 100% only once it is used up"
        assert formats.file_size(1000) == want["bytes"]
        assert formats.file_size(1536 * 1024) == want["megabytes"]
        assert formats.file_size(int(9.96 * 1024 * 1024)) == want["megabytes"].replace("1.5", "10").replace("1,5", "10")
        labels = [formats.chart_day(date(2025, month, 5)) for month in range(1, 13)]
    assert labels == [want["chart_day"].format(day=5, month=m) for m in want["months"]]


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_has_one_date_format_and_one_date_time_format(language):
    """The short and long names give the same shape, so no page (nor the admin) can mix two."""
    get = django_formats.get_format
    assert get("SHORT_DATE_FORMAT", language) == get("DATE_FORMAT", language)
    assert get("SHORT_DATETIME_FORMAT", language) == get("DATETIME_FORMAT", language)
    assert get("DATETIME_FORMAT", language).startswith(get("DATE_FORMAT", language))


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_template_filters_are_the_helpers(language, helsinki):
    template = Template(
        "{% load formats %}{{ when|day }}|{{ when|moment }}|{{ n|number }}|{{ x|number:2 }}|{{ share|percent }}"
        "|{{ progress|percent:100 }}|{{ size|file_size }}|{{ nothing|moment }}{{ nothing|number }}"
    )
    values = {"when": MOMENT, "n": 1234567, "x": 1234.5678, "share": 0.29, "progress": 29, "size": 1000}
    with translation.override(language):
        written = template.render(Context({**values, "nothing": None}))
    want = EXPECTED[language]
    assert written == "|".join(
        [
            want["day"],
            want["moment"],
            want["number"],
            want["decimal"],
            want["percent"],
            want["percent"],
            want["bytes"],
            "",
        ]
    )


def test_dates_and_numbers_have_one_writer():
    """Templates and code write what people read through kernel/formats.py, never a format of their own."""
    own_formats = re.compile(r"\|date:\"|\|floatformat|\{% widthratio|\|filesizeformat|\|intcomma")
    for path in (ROOT / "templates").rglob("*.html"):
        found = own_formats.findall(path.read_text(encoding="utf-8"))
        assert not found, f"{path.relative_to(ROOT)} formats by itself: {found}"
    for package in ("kernel", "rag", "accounts", "access", "collections_app", "chat", "sso", "lti", "currechat"):
        for path in (ROOT / package).rglob("*.py"):
            if "management" in path.parts:
                continue  # manage.py's output is for operators at a terminal, in English and ISO 8601
            code = path.read_text(encoding="utf-8").replace('strftime("%Y%m%dT%H")', "")  # a Redis key
            where = path.relative_to(ROOT)
            assert not re.search(r"\{[^{}]*:,[.0-9a-z]*\}", code), f"{where} groups digits the English way"
            assert not re.search(r"\{[^{}]*:%[A-Za-z]|strftime\(|dateformat\.format\(", code), f"{where} writes dates"
    for path in (ROOT / "static" / "js").glob("*.js"):
        if path.name != "formats.js":
            code = path.read_text(encoding="utf-8")
            assert "toLocale" not in code and "new Intl." not in code, f"{path.name}: use localFormats (formats.js)"


# --- The pages, per language ------------------------------------------------------------------------


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_teachers_statistics_are_written_in_the_language(language, prompt, owner, client_for):
    today = timezone.localdate()
    busy = today - timedelta(days=3)
    PromptDay.objects.create(prompt=prompt, day=busy, questions=617, answers=617, tokens=1234567, searches=1500)
    page = get_in(client_for(owner), language, f"/prompts/{prompt.pk}/insight/?days=365")
    want, seen = EXPECTED[language], text_of(page)

    assert re.search(rf'data-testid="messages">{formats_of(language, 1234)}<', page)
    assert re.search(rf'data-testid="tokens">{want["number"]}<', page)
    cells = r"<td>([^<]+)</td>" * 3
    day_row = re.search(rf'<tr><th scope="row"><time datetime="[\d-]+">([^<]+)</time></th>{cells}', page)
    assert day_row.groups() == (
        written_day(language, busy),
        formats_of(language, 1234),
        want["number"],
        formats_of(language, 1500),
    )

    # The chart's axis: every label is its day with the language's own month abbreviation.
    labels = re.findall(r'<text class="axis day" x="[\d.]+" y="214" text-anchor="(?:middle|end)">([^<]+)</text>', page)
    start = today - timedelta(days=364)
    expected = [
        want["chart_day"].format(day=d.day, month=want["months"][d.month - 1])
        for d in (start + timedelta(days=i) for i in range(0, 365, 60))
    ]
    assert labels == expected and len(labels) == 7, "a label about every two months, across the year"
    assert f"<title>{written_day(language, busy)}:" in page, "a bar's title names its day as the table does"
    axis_top = re.search(r'text-anchor="end">([^<]+)</text><text class="axis"[^>]*text-anchor="end">0<', page).group(1)
    assert axis_top == formats_of(language, 2000)
    assert not re.search(r"\b\d{4}-\d{2}-\d{2}\b", seen) or language == "sv", "no ISO dates for people"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_roster_is_written_in_the_language(language, prompt, student, owner, client_for, helsinki):
    prompt.weekly_token_budget = 5000
    prompt.save()
    Enrollment.objects.filter(prompt=prompt, student=student).update(created=MOMENT, last_active=MOMENT)
    UsageMeter(student.pk, prompt.pk)(1234, 0, "qwen3:8b")
    page = get_in(client_for(owner), language, f"/prompts/{prompt.pk}/")
    row = text_of(page.split('data-testid="student-row"', 1)[1].split("</tr>", 1)[0])
    want = EXPECTED[language]
    assert want["day"] in row and want["moment"] in row
    used = {
        "en": "1,234 of 5,000 tokens (24%)",
        "fi": f"1{NBSP}234 / 5{NBSP}000 tokenia (24{NBSP}%)",
        "sv": f"1{NBSP}234 av 5{NBSP}000 token (24{NBSP}%)",
    }[language]
    assert used in row


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_file_list_is_written_in_the_language(language, collection, owner, client_for):
    files = [
        SourceFile(
            collection=collection,
            original_name=f"lecture-{i:04d}.md",
            file=f"collections/{collection.pk}/{i:064d}",
            file_type="markdown",
            size=1000,
            sha256=f"{i:064d}",
            status=FileStatus.READY,
            uploaded_by=owner,
        )
        for i in range(1001)
    ]
    files[-1].file_type, files[-1].pages, files[-1].chunk_count = "pdf", 1500, 12345
    SourceFile.objects.bulk_create(files)
    page = get_in(client_for(owner), language, f"/collections/{collection.pk}/?sort=-name")
    count = {"en": "1,001 files.", "fi": f"1{NBSP}001 tiedostoa.", "sv": f"1{NBSP}001 filer."}[language]
    assert count in text_of(page)
    row = page.split('<tr data-file-id="', 2)[1]
    assert "lecture-1000.md" in row
    pages = {"en": "1,500 pages", "fi": f"1{NBSP}500 sivua", "sv": f"1{NBSP}500 sidor"}[language]
    assert pages in text_of(row)
    assert re.search(rf'class="file-chunks"[^>]*>{formats_of(language, 12345)}<', row)


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_students_budget_line_is_written_in_the_language(language, prompt, student, client_for):
    prompt.weekly_token_budget = 5000
    prompt.save()
    UsageMeter(student.pk, prompt.pk)(4600, 0, "qwen3:8b")
    page = get_in(client_for(student), language, f"/prompts/{prompt.pk}/chat/")
    line = text_of(page.split('id="usage-line"', 1)[1].split("</p>", 1)[0])
    used = {
        "en": "You have used 92% of this week's allowance.",
        "fi": f"Olet käyttänyt 92{NBSP}% tämän viikon kiintiöstäsi.",
        "sv": f"Du har använt 92{NBSP}% av veckans kvot.",
    }[language]
    assert used in line
    assert re.search(rf"{MOMENT_SHAPE[language]} \(UTC\)\.$", line.strip()), line


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_language_selector_names_each_language_in_its_own_language(language, student, client_for):
    page = get_in(client_for(student), language, "/")
    selector = page.split('id="language-select"', 1)[1].split("</select>", 1)[0]
    options = re.findall(r'<option value="(\w+)" lang="(\w+)"[^>]*>([^<]+)</option>', selector)
    assert options == [("en", "en", "English"), ("fi", "fi", "suomi"), ("sv", "sv", "svenska")]


def formats_of(language: str, n: int) -> str:
    """`n` (under a million) with the language's thousands separator, written out by hand."""
    separator = {"en": ",", "fi": NBSP, "sv": NBSP}[language]
    return f"{n // 1000}{separator}{n % 1000:03d}" if n >= 1000 else str(n)


def written_day(language: str, d: date) -> str:
    month = EXPECTED["en"]["months"][d.month - 1]
    return {"en": f"{month} {d.day}, {d.year}", "fi": f"{d.day}.{d.month}.{d.year}", "sv": d.isoformat()}[language]
