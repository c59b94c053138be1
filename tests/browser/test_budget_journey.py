"""Weekly budgets as people meet them: a student whose week is used up reads it in plain words where
they type, with the time it starts again in their own time zone and language, and cannot send; their
teacher sees the student flagged on the roster, resets the week and raises the budget; the student
can send again. In a long chat the line stays in sight. At a phone's and a laptop's width, and in
Finnish at both."""

from __future__ import annotations

import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.utils import timezone, translation
from playwright.sync_api import expect

from kernel.formats import moment
from tests.browser.conftest import no_overflow
from tests.browser.test_finnish_journey import look_at

pytestmark = pytest.mark.browser

PASSWORD = "budget-journey-pass-123"
ZONE = "Pacific/Auckland"  # the student's own time zone, far from the server's (UTC)

SETUP = """
from accounts.models import Role, User
from chat.course.enrollment import enroll
from chat.models import ChatSession, Message, MessageRole, MessageStatus, Prompt
from chat.metering.usage import UsageMeter
teacher = User.objects.create_user({teacher!r}, password={password!r}, role=Role.TEACHER)
student = User.objects.create_user({student!r}, password={password!r}, role=Role.STUDENT)
prompt = Prompt.objects.create(owner=teacher, name={name!r}, chat_model="qwen3:8b", weekly_token_budget=1000)
enroll(prompt, student)
chat = ChatSession.objects.create(prompt=prompt, user=student, title="Pitkä keskustelu")
for i in range(20):
    Message.objects.create(session=chat, role=MessageRole.USER, content=f"Kysymys {{i}}")
    Message.objects.create(
        session=chat, role=MessageRole.ASSISTANT, content="Vastaus. " * 60, status=MessageStatus.COMPLETE
    )
UsageMeter(student.pk, prompt.pk)(1000, 0, "qwen3:8b")
print(prompt.pk, chat.pk)
"""

WORDS = {
    "en": {
        "username": "Username",
        "password": "Password",
        "log_in": "Log in",
        "used_up": "You have used this week's allowance. It starts again on",
        "send_again": "You can send messages again on",
        "send": "Send",
        "over": "over the budget",
        "budget": "Budget",
        "reset": "Reset this week",
        "budget_input": "Weekly budget (tokens; empty: the prompt's)",
        "save": "Save budget",
        "after_reset": "0 of 1,000 tokens (0%)",
        "raised": "0 of 5,000 tokens (0%)",
        "fresh": "You have used 0% of this week's allowance.",
    },
    "fi": {
        "username": "Käyttäjätunnus",
        "password": "Salasana",
        "log_in": "Kirjaudu sisään",
        "used_up": "Olet käyttänyt tämän viikon kiintiösi. Se alkaa alusta",
        "send_again": "Voit lähettää viestejä taas",
        "send": "Lähetä",
        "over": "yli budjetin",
        "budget": "Budjetti",
        "reset": "Nollaa tämä viikko",
        "budget_input": "Viikkobudjetti (tokeneina; tyhjä: avustajan oma)",
        "save": "Tallenna budjetti",
        "after_reset": "0 / 1\xa0000 tokenia (0\xa0%)",
        "raised": "0 / 5\xa0000 tokenia (0\xa0%)",
        "fresh": "Olet käyttänyt 0\xa0% tämän viikon kiintiöstäsi.",  # a no-break space before %
    },
}


def log_in(page, app, words: dict, username: str) -> None:
    page.goto(app.url + "/login/")
    no_overflow(page)
    page.get_by_label(words["username"]).fill(username)
    page.get_by_label(words["password"]).fill(PASSWORD)
    page.get_by_role("button", name=words["log_in"]).click()
    page.wait_for_url(lambda url: "/login/" not in url)
    no_overflow(page)


def reset_moment(page, language: str) -> str:
    """The moment the page should name: the week's end in the student's own zone, written as the
    server writes a moment in the page's language (kernel/formats.py), not as the browser's locale
    (en-GB here) would."""
    iso = page.evaluate("JSON.parse(document.getElementById('chat-config').textContent).usage.resets_at")
    with translation.override(language), timezone.override(ZoneInfo(ZONE)):
        return moment(datetime.fromisoformat(iso))


@pytest.mark.parametrize(
    ("language", "width"),
    [pytest.param("en", 390, id="phone"), pytest.param("en", 1366, id="desktop"), pytest.param("fi", 390, id="fi")],
)
def test_a_used_up_week_is_told_plainly_and_a_teacher_resets_it(live_app, new_page, journey, language, width):
    words = WORDS[language]
    names = {"teacher": f"budjettiope{language}{width}", "student": f"budjettiopp{language}{width}"}
    setup = SETUP.format(password=PASSWORD, name=f"Budjettikurssi {language} {width}", **names)
    prompt_id, chat_id = live_app.manage("shell", "-c", setup).split()[-2:]
    size = (width, 844 if width < 800 else 900)
    locale = "fi-FI" if language == "fi" else "en-GB"
    look = look_at(journey, language, size)

    # The student's week is used up: the line says so in words, with the reset in their own zone.
    student = new_page(*size, locale=locale, timezone_id=ZONE)
    log_in(student, live_app, words, names["student"])
    student.goto(f"{live_app.url}/prompts/{prompt_id}/chat/{chat_id}/")
    line = student.get_by_test_id("usage-line")
    expect(line).to_contain_text(words["used_up"])
    expect(line).to_contain_text(f"{words['used_up']} {reset_moment(student, language)}.")
    assert "token" not in line.inner_text().lower()
    expect(line).to_be_in_viewport()  # a long chat: the line stays in sight at the bottom
    expect(student.locator("#composer-note")).to_contain_text(words["send_again"])
    expect(student.get_by_role("button", name=words["send"], exact=True)).to_be_disabled()
    look(student, "student-week-used-up")

    # The teacher sees them over the budget, resets the week, then raises their budget.
    teacher = new_page(*size, locale=locale)
    log_in(teacher, live_app, words, names["teacher"])
    teacher.goto(f"{live_app.url}/prompts/{prompt_id}/")
    row = teacher.get_by_test_id("student-row").first
    expect(row.get_by_test_id("budget-flag")).to_have_text(words["over"])
    row.get_by_text(words["budget"], exact=True).click()
    look(teacher, "teacher-roster-over-budget")
    # Resetting asks first (issue 46): dismissed, nothing changes; accepted, the week starts again.
    asked = []
    teacher.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    row.get_by_role("button", name=words["reset"]).click()
    expect(row.get_by_test_id("budget-flag")).to_have_count(1)
    assert asked and asked[0].strip(), "Reset this week asks before it acts"
    teacher.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name=words["reset"]).click()
    row = teacher.get_by_test_id("student-row").first
    expect(row.get_by_test_id("week-use")).to_contain_text(words["after_reset"])
    expect(row.get_by_test_id("budget-flag")).to_have_count(0)
    no_overflow(teacher)
    row.get_by_text(words["budget"], exact=True).click()
    row.get_by_label(words["budget_input"]).fill("5000")
    row.get_by_role("button", name=words["save"]).click()
    row = teacher.get_by_test_id("student-row").first
    expect(row.get_by_test_id("week-use")).to_contain_text(words["raised"])
    look(teacher, "teacher-roster-raised")

    # The student can send again.
    student.reload()
    expect(student.get_by_test_id("usage-line")).to_have_text(re.compile(re.escape(words["fresh"])))
    expect(student.get_by_role("button", name=words["send"], exact=True)).to_be_enabled()
    expect(student.locator("#composer-note")).to_have_text("")
    look(student, "student-can-send-again")
