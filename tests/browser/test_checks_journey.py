"""A teacher writes three test questions, runs them, changes the collection's language and sees the
questions run again by themselves once the worker has re-indexed the file, on a phone (390 px) and a
laptop (1366 px). Daphne and the RQ worker run as real processes (tests/browser/conftest.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from collections_app.models import Collection
teacher = User.objects.create_user({name!r}, password="checks-pass-4567", role=Role.TEACHER)
Collection.objects.create(name="Statistics 101", owner=teacher, embedding_model="ollama:snowflake-arctic-embed2")
"""

COURSE = """# Statistics 101

## Exam

The final exam is on 12 December in hall B. Bring a calculator and your student card.

## Grading

The course is graded on a scale from 0 to 5. Weekly exercises give up to 20 percent of the grade.

## Sampling

A random sample gives every member of the population the same chance of being chosen.
"""

QUESTIONS = [
    ("When is the final exam?", {"section": "Exam"}),
    ("How is the course graded?", {"phrase": "scale from 0 to 5"}),
    ("What is a random sample?", {"section": "Sampling"}),
]


@pytest.mark.parametrize("width", [390, 1366])
def test_teacher_adds_runs_and_sees_checks_rerun_after_a_language_change(live_app, new_page, journey, tmp_path, width):
    name = f"tessa{width}"
    live_app.manage("shell", "-c", SETUP.format(name=name))
    course = tmp_path / "statistics.md"
    course.write_text(COURSE)
    page = new_page(width=width)
    log_in(page, live_app, name, "checks-pass-4567")
    page.get_by_role("link", name="Statistics 101").first.click()
    no_overflow(page)
    page.get_by_label("Drop files here, or choose them").set_input_files([str(course)])
    page.get_by_role("button", name="Upload").click()
    row = page.locator("#file-table tbody tr", has_text="statistics.md")
    expect(row.locator(".file-status")).to_have_text("Ready", timeout=60_000)

    page.get_by_test_id("checks-tab").click()
    journey.look(page, f"checks-empty-{width}")
    for question, expect_ in QUESTIONS:
        page.get_by_label("Question", exact=True).fill(question)
        page.get_by_label("File that holds the answer").select_option(label="statistics.md")
        if "section" in expect_:
            page.get_by_label("Section (optional, part of its heading)").fill(expect_["section"])
        if "phrase" in expect_:
            page.get_by_label("Phrase the passage must contain (optional)").fill(expect_["phrase"])
        page.get_by_test_id("add-check").click()
        expect(page.locator(".messages")).to_contain_text("Test question added.")
    rows = page.get_by_test_id("check-row")
    expect(rows).to_have_count(3)
    expect(rows.first).to_contain_text("Not run yet.")

    page.get_by_test_id("run-checks").click()
    expect(page.locator(".messages")).to_contain_text("3 of 3 test questions found their passage in the top 15.")
    expect(page.get_by_test_id("checks-last-run")).to_contain_text("Run by hand")
    expect(page.get_by_test_id("check-rank")).to_have_count(3)
    for i in range(3):
        expect(page.get_by_test_id("check-rank").nth(i)).to_contain_text("Found at rank")
    journey.look(page, f"checks-run-{width}")

    page.get_by_test_id("settings-tab").click()
    no_overflow(page)
    page.locator("#id_language").select_option("swedish")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".messages")).to_contain_text("Re-indexing 1 file")
    no_overflow(page)

    page.get_by_test_id("checks-tab").click()
    # The worker re-indexes the file, then runs the questions; the page shows the new run when it
    # has finished (it looks again by itself until the run's results are stored).
    expect(page.get_by_test_id("checks-last-run")).to_contain_text("After a language change", timeout=180_000)
    expect(page.get_by_test_id("checks-last-run")).to_contain_text("3 of 3 passed")
    expect(page.get_by_test_id("checks-pending")).to_have_count(0)
    journey.look(page, f"checks-rerun-{width}")
