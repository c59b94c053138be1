"""The teacher's and the student's first ten minutes, in a real browser against a live server."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

TEACHER_PASSWORD = "journey-teacher-pass-123"


def log_in(page, app, username: str, password: str) -> None:
    page.goto(app.url + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def test_teacher_then_student_journey(live_app, new_page, journey):
    live_app.manage("create_teacher", "tiina", "--password", TEACHER_PASSWORD)
    page = new_page()

    # Log in.
    page.goto(live_app.url + "/")
    expect(page).to_have_title(re.compile("Log in"))
    journey.check_a11y(page)
    journey.shot(page, "login")
    log_in(page, live_app, "tiina", TEACHER_PASSWORD)
    expect(page.get_by_role("heading", name="Your teaching material")).to_be_visible()
    expect(page.get_by_test_id("status-badge")).to_contain_text("Search index: connected")
    journey.check_a11y(page)
    journey.shot(page, "teacher-home-empty")

    # Create a collection in Finnish; a missing name is explained and the input kept.
    page.get_by_role("link", name="New collection").first.click()
    page.get_by_label("Description").fill("Kurssin materiaali")
    page.get_by_label("Language").select_option("finnish")
    page.get_by_role("button", name="Create collection").click()
    expect(page.get_by_text("This field is required.")).to_be_visible()
    expect(page.get_by_label("Description")).to_have_value("Kurssin materiaali")
    page.get_by_label("Name").fill("Tilastotiede")
    page.get_by_role("button", name="Create collection").click()
    expect(page.get_by_role("heading", name="Tilastotiede")).to_be_visible()
    journey.check_a11y(page)
    journey.shot(page, "collection-created")

    # Create a prompt, connect the collection, write its system prompt.
    page.get_by_role("link", name="New prompt").first.click()
    page.get_by_label("Name").fill("Tilastoavustaja")
    page.get_by_label("System prompt").fill("Vastaa suomeksi ja kurssimateriaalin pohjalta.")
    page.get_by_label("Tilastotiede").check()
    page.get_by_role("button", name="Create prompt").click()
    expect(page.get_by_role("heading", name="Tilastoavustaja")).to_be_visible()
    journey.check_a11y(page)
    journey.shot(page, "prompt-created")

    # Copy the join link.
    page.get_by_role("button", name="Copy link").click()
    expect(page.get_by_role("button", name="Copied")).to_be_visible()
    join_url = page.get_by_label("Join link").input_value()
    assert page.evaluate("navigator.clipboard.readText()") == join_url
    assert re.search(r"/join/[A-Z0-9]{8}/$", join_url)

    # The student opens the join link and signs up.
    student = new_page(390, 844)  # phone width
    student.goto(join_url)
    expect(student.get_by_role("heading", name="Join “Tilastoavustaja”")).to_be_visible()
    journey.check_a11y(student)
    journey.shot(student, "student-join")
    student.get_by_label("Username").fill("sanna")
    student.get_by_label("Password", exact=True).fill("sannan-salasana-42")
    student.get_by_label("Password confirmation").fill("sannan-salasana-42")
    student.get_by_role("button", name="Create account and join").click()
    expect(student.get_by_text("You joined “Tilastoavustaja”")).to_be_visible()
    journey.check_a11y(student)
    journey.shot(student, "student-home")

    # The teacher sees the new student on the prompt page.
    page.reload()
    expect(page.get_by_text("sanna")).to_be_visible()
