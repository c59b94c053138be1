"""A prompt that is not open yet, as a student who joins it by code and its teacher meet it: the
student is told when it opens (no invitation to ask, no green "available", no composer); the
teacher's home shows its real state and counts only the enrolled student, as the roster does. At a
phone's and a laptop's width, and in Finnish at both."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_budget_journey import WORDS as LOGIN_WORDS
from tests.browser.test_budget_journey import log_in
from tests.browser.test_finnish_journey import look_at

pytestmark = pytest.mark.browser

PASSWORD = "budget-journey-pass-123"  # log_in's

SETUP = """
from datetime import datetime, UTC
from accounts.models import Role, User
from chat.course.enrollment import enroll, remove_student
from chat.models import Prompt
teacher = User.objects.create_user({teacher!r}, password={password!r}, role=Role.TEACHER)
User.objects.create_user({student!r}, password={password!r}, role=Role.STUDENT)
gone = User.objects.create_user({gone!r}, password={password!r}, role=Role.STUDENT)
prompt = Prompt.objects.create(
    owner=teacher, name={name!r}, chat_model="qwen3:8b", opens_at=datetime(2031, 3, 3, 10, 0, tzinfo=UTC)
)
remove_student(enroll(prompt, gone))
print(prompt.join_code)
"""

WORDS = {
    "en": {
        "code": "Join code",
        "join": "Join",
        "joined": "You joined “{name}”. This assistant opens on Mar 3, 2031",
        "first": "Ask your first question",
        "available": "available",
        "draft": "Not open yet",
        "students": "Students (1)",
    },
    "fi": {
        "code": "Liittymiskoodi",
        "join": "Liity",
        "joined": "Liityit avustajaan ”{name}”. Tämä avustaja avautuu 3.3.2031",
        "first": "Kysy ensimmäinen kysymyksesi",
        "available": "käytettävissä",
        "draft": "Ei vielä avoinna",
        "students": "Opiskelijat (1)",
    },
}


@pytest.mark.parametrize(
    ("language", "width"),
    [pytest.param("en", 390, id="phone"), pytest.param("en", 1366, id="desktop"), pytest.param("fi", 390, id="fi")],
)
def test_a_prompt_not_open_yet_reads_the_same_everywhere(live_app, new_page, journey, language, width):
    words, login = WORDS[language], LOGIN_WORDS[language]
    names = {role: f"{role}-{language}{width}" for role in ("teacher", "student", "gone")}
    name = f"Tulossa {language} {width}"
    code = live_app.manage("shell", "-c", SETUP.format(password=PASSWORD, name=name, **names)).split()[-1]
    size = (width, 844 if width < 800 else 900)
    locale = "fi-FI" if language == "fi" else "en-GB"
    look = look_at(journey, language, size)

    # The student joins with the code alone: told when it opens, nothing invites a question yet.
    student = new_page(*size, locale=locale)
    log_in(student, live_app, login, names["student"])
    student.get_by_label(words["code"]).fill(code)
    student.get_by_role("button", name=words["join"], exact=True).click()
    expect(student.get_by_test_id("join-confirm")).to_be_visible()  # the join page the code opens
    look(student, "student-join-page")
    student.get_by_test_id("privacy-confirm").get_by_role("checkbox").check()
    student.get_by_test_id("join-button").click()
    expect(student.get_by_text(words["joined"].format(name=name))).to_be_visible()
    expect(student.get_by_test_id("prompt-closed")).to_be_visible()
    main = student.get_by_role("main")
    expect(main).not_to_contain_text(words["first"])
    expect(student.get_by_test_id("model-status")).to_have_count(0)
    expect(main).not_to_contain_text(words["available"])
    expect(student.locator("#composer")).to_have_count(0)
    look(student, "student-joined-before-opening")

    # The teacher's home: the real state, and only the enrolled student counted, as on the roster.
    teacher = new_page(*size, locale=locale)
    log_in(teacher, live_app, login, names["teacher"])
    row = teacher.get_by_role("row").filter(has_text=name)
    expect(row.get_by_test_id("prompt-home-state")).to_contain_text(words["draft"])
    expect(row.get_by_role("cell").nth(2)).to_have_text("1")
    look(teacher, "teacher-home-states")
    row.get_by_role("link", name=name).click()
    expect(teacher.get_by_role("heading", name=words["students"])).to_be_visible()
    look(teacher, "teacher-roster-count")
