"""The interface in English, Finnish and Swedish: the browser's language, the remembered switcher,
complete catalogues, and no English left on a Finnish student's pages."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from accounts.models import User
from chat.metering.usage import current_week, describe_reset
from collections_app.models import SourceFile
from tests.conftest import PASSWORD
from tests.untranslated import LOCALE, catalogue_sentences, english_left

CATALOGUES = sorted(LOCALE.glob("*/LC_MESSAGES/*.po"))


def _visible_text(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    # Attribute values people read (labels, confirmations) count as text too.
    attrs = " ".join(re.findall(r'(?:aria-label|data-confirm|placeholder|title)="([^"]*)"', html))
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html) + " " + attrs))


def test_browser_language_picks_the_login_page_language(db):
    english = Client().get("/login/").content.decode()
    finnish = Client(HTTP_ACCEPT_LANGUAGE="fi").get("/login/").content.decode()
    swedish = Client(HTTP_ACCEPT_LANGUAGE="sv-SE,sv;q=0.9,en;q=0.5").get("/login/").content.decode()
    assert '<html lang="en">' in english and "Log in</h1>" in english
    assert '<html lang="fi">' in finnish and "Kirjaudu sisään</h1>" in finnish and "Käyttäjätunnus" in finnish
    assert '<html lang="sv">' in swedish and "Logga in</h1>" in swedish and "Lösenord" in swedish
    assert "Log in</h1>" not in finnish + swedish


def test_compiled_catalogue_is_used_by_gettext():
    with translation.override("fi"):
        assert translation.gettext("Join code") == "Liittymiskoodi"
    with translation.override("sv"):
        assert translation.gettext("Join code") == "Anslutningskod"


def test_visitor_switcher_sets_the_cookie(db):
    c = Client()
    response = c.post("/i18n/setlang/", {"language": "sv", "next": "/login/"})
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert "Logga in</h1>" in c.get("/login/").content.decode()


def test_switcher_choice_is_remembered_for_the_user_across_sessions(student):
    first = Client(HTTP_ACCEPT_LANGUAGE="en")
    first.force_login(student)
    first.post("/i18n/setlang/", {"language": "fi", "next": "/"})
    student.refresh_from_db()
    assert student.language == "fi"
    # Another browser, which asks for English and has no language cookie: a real login applies the saved choice.
    second = Client(HTTP_ACCEPT_LANGUAGE="en")
    response = second.post("/login/", {"username": student.username, "password": PASSWORD}, follow=True)
    page = response.content.decode()
    assert '<html lang="fi">' in page and "Avustajasi" in page
    assert second.cookies["django_language"].value == "fi"


def test_unknown_language_is_not_saved(student):
    c = Client()
    c.force_login(student)
    c.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    student.refresh_from_db()
    assert student.language == ""


def test_saved_language_wins_over_the_browser(student):
    User.objects.filter(pk=student.pk).update(language="sv")
    c = Client(HTTP_ACCEPT_LANGUAGE="fi")
    c.force_login(student)
    assert "Dina assistenter" in c.get("/").content.decode()


def _english_left_in_finnish(paths: list[str], user) -> int:
    """Every marked string each page shows in English is gone from its Finnish version; how many
    strings the comparison saw."""
    sentences = catalogue_sentences("fi")
    checked = 0
    for path in paths:
        pages = {}
        for lang in ("en", "fi"):
            c = Client(HTTP_ACCEPT_LANGUAGE=lang)
            if user is not None:
                c.force_login(user)
            response = c.get(path)
            assert response.status_code == 200, path
            pages[lang] = _visible_text(response.content.decode())
        shown = [s for s in sentences if s.pattern.search(pages["en"])]
        checked += len(shown)
        left = english_left(pages["fi"], shown)
        assert left == [], f"{path} in Finnish still says {left}"
    return checked


@pytest.mark.parametrize("who", ["student", "visitor"])
def test_finnish_student_pages_have_no_untranslated_english(who, prompt, student):
    """Every marked string on the English page is gone from the Finnish one."""
    paths = ["/", f"/join/{prompt.join_code}/"] if who == "student" else [f"/join/{prompt.join_code}/", "/login/"]
    assert _english_left_in_finnish(paths, student if who == "student" else None) >= 8


def test_finnish_teacher_pages_have_no_untranslated_english(owner, prompt, collection):
    collection.name = "Tilastotiede"  # "Statistics" is one of the interface's own words
    collection.save()
    source = SourceFile.objects.create(
        collection=collection, original_name="muistiinpanot.md", file="collections/x/notes", file_type="markdown",
        size=10, sha256="a" * 64, status="queued", markdown="# Muistiinpanot\n\nKeskiarvo.", uploaded_by=owner,
    )  # fmt: skip
    paths = [
        "/",
        reverse("collection_create"),
        reverse("collection_detail", args=[collection.pk]),
        reverse("collection_settings", args=[collection.pk]),
        reverse("collection_search", args=[collection.pk]),
        reverse("collection_checks", args=[collection.pk]),
        reverse("file_detail", args=[source.pk]),
        reverse("prompt_create"),
        reverse("prompt_detail", args=[prompt.pk]),
        reverse("prompt_insight", args=[prompt.pk]),
        reverse("account"),
        reverse("profile"),
        reverse("start_reset"),
    ]
    assert _english_left_in_finnish(paths, owner) >= 100


def test_dates_follow_the_language(student, prompt):
    prompt.opens_at = datetime(2030, 3, 1, 9, 0, tzinfo=UTC)
    prompt.save()
    c = Client(HTTP_ACCEPT_LANGUAGE="fi")
    c.force_login(student)
    assert "Tämä avustaja avautuu 1.3.2030 klo 9.00 (UTC)" in c.get("/").content.decode()
    en = Client(HTTP_ACCEPT_LANGUAGE="en")
    en.force_login(student)
    assert "This assistant opens on Mar 1, 2030, 9:00 AM (UTC)" in en.get("/").content.decode()


def test_javascript_strings_are_translated(db):
    catalogue = Client(HTTP_ACCEPT_LANGUAGE="fi").get("/jsi18n/").content.decode()
    assert "Kopioitu" in catalogue


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_catalogue_has_no_empty_or_fuzzy_entries(po):
    result = subprocess.run(
        ["msgfmt", "--check", "--statistics", "-o", "/dev/null", str(po)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "fuzzy" not in result.stderr and "untranslated" not in result.stderr, result.stderr
    assert "#, fuzzy" not in po.read_text(encoding="utf-8")


def test_every_language_has_the_same_catalogues():
    names = {lang: {p.name for p in (LOCALE / lang / "LC_MESSAGES").glob("*.po")} for lang in ("fi", "sv")}
    assert names["fi"] == names["sv"] == {"django.po", "djangojs.po"}


def test_english_left_finds_marked_sentences_with_and_without_placeholders():
    """The check the Finnish pages rely on can fail (tests/browser/test_finnish_journey.py uses it too)."""
    sentences = catalogue_sentences("fi", placeholders=True)
    text = "Avustajasi. Your assistants · You joined “Tilastoavustaja”. Ask your first question below."
    left = english_left(text, sentences, min_words=2)
    assert "Your assistants" in left
    assert "You joined “%(name)s”. Ask your first question below." in left
    assert english_left("Avustajasi. Liityit avustajaan ”Tilastoavustaja”.", sentences, min_words=2) == []


def test_budget_reset_day_is_written_in_the_language(settings):
    settings.TIME_ZONE = "Europe/Helsinki"
    settings.USAGE_WEEK_RESET_WEEKDAY, settings.USAGE_WEEK_RESET_HOUR = 0, 6
    week = current_week(datetime(2026, 2, 25, 12, 0, tzinfo=UTC))
    said = {}
    for lang in ("en", "fi", "sv"):
        with translation.override(lang):
            said[lang] = describe_reset(week)
    assert said == {
        "en": "Mar 2, 2026, 6:00 AM (Europe/Helsinki)",
        "fi": "2.3.2026 klo 6.00 (Europe/Helsinki)",
        "sv": "2026-03-02 06:00 (Europe/Helsinki)",
    }
