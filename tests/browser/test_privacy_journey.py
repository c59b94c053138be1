"""Privacy people can read, as a new student meets it: the join page links the prompt's privacy
notice (who runs the service, from the operator's settings; how long chats are kept, from the
prompt's own setting) and refuses to join until the student confirms it; the chat links it too.
When the teacher raises the level, the student's chat says what changed and asks for a confirmation
before the next chat, then lets them write. At a phone's and a laptop's width, and in Finnish."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow
from tests.browser.test_budget_journey import WORDS as LOGIN_WORDS
from tests.browser.test_budget_journey import log_in
from tests.browser.test_finnish_journey import look_at

pytestmark = pytest.mark.browser

PASSWORD = "budget-journey-pass-123"  # log_in's

SETUP = """
from accounts.models import Role, User
from chat.models import Prompt
teacher = User.objects.create_user({teacher!r}, password={password!r}, role=Role.TEACHER, first_name="Tuula")
User.objects.create_user({student!r}, password={password!r}, role=Role.STUDENT)
prompt = Prompt.objects.create(
    owner=teacher, name={name!r}, chat_model="qwen3:8b", retention_days=30, curation_enabled=False
)
print(prompt.join_code)
"""

# The teacher raises the level through the prompt's one write path, as the prompt page saves it.
RAISE = """
from chat.course import writes
from chat.models import Prompt
prompt = Prompt.objects.get(name={name!r})
writes.update_prompt(prompt.owner, prompt, {{"chat_visibility": "named"}})
"""

WORDS = {
    "en": {
        "code": "Join code",
        "join": "Join",
        "refused": "Confirm that you have read the privacy notice to join",
        "operator": "This CurreChat service is run by Testiyliopisto IT.",
        "contact": "tietosuoja@testi.example",
        "location": "Where your data is stored: Helsinki.",
        "retention": "Your chats are deleted 30 days after their last message.",
        "current": "Chats under a number",
        "back": "Back to joining",
        "joined": "You joined “{name}”",
        "changed": "Your teacher has changed what they can see of your chats",
        "now": "From your next chat on: Your teachers can read your chats under your name.",
        "named": "Your teachers can read your chats under your name.",
        "confirmed": "You confirmed this notice on",
        "named_title": "Chats under your name",
    },
    "fi": {
        "code": "Liittymiskoodi",
        "join": "Liity",
        "refused": "Vahvista, että olet lukenut tietosuojaselosteen, jotta voit liittyä",
        "operator": "Tätä CurreChat-palvelua tarjoaa Testiyliopisto IT.",
        "contact": "tietosuoja@testi.example",
        "location": "Missä tietosi säilytetään: Helsinki.",
        "retention": "Keskustelusi poistetaan 30 päivää viimeisen viestinsä jälkeen.",
        "current": "Keskustelut numerolla",
        "back": "Takaisin liittymiseen",
        "joined": "Liityit avustajaan ”{name}”",
        "changed": "Opettajasi on muuttanut sitä, mitä hän näkee keskusteluistasi",
        "now": "Seuraavasta keskustelustasi alkaen: Opettajasi voivat lukea keskustelujasi nimelläsi.",
        "named": "Opettajasi voivat lukea keskustelujasi nimelläsi.",
        "confirmed": "Vahvistit tämän selosteen",
        "named_title": "Keskustelut nimelläsi",
    },
}


@pytest.mark.parametrize(
    ("language", "width"),
    [pytest.param("en", 390, id="phone"), pytest.param("en", 1366, id="desktop"), pytest.param("fi", 390, id="fi")],
)
def test_a_student_confirms_the_privacy_notice_on_joining_and_a_raised_level_in_the_chat(
    live_app, new_page, journey, language, width
):
    words, login = WORDS[language], LOGIN_WORDS[language]
    names = {role: f"yks-{role}-{language}{width}" for role in ("teacher", "student")}
    name = f"Yksityisyys {language} {width}"
    code = live_app.manage("shell", "-c", SETUP.format(password=PASSWORD, name=name, **names)).split()[-1]
    size = (width, 844 if width < 800 else 900)
    look = look_at(journey, language, size)

    student = new_page(*size, locale="fi-FI" if language == "fi" else "en-GB")
    log_in(student, live_app, login, names["student"])
    student.get_by_label(words["code"]).fill(code)
    student.get_by_role("button", name=words["join"], exact=True).click()
    expect(student.get_by_test_id("join-confirm")).to_be_visible()
    look(student, "join-page")

    # Joining without ticking the box is refused, with a sentence beside the box.
    student.get_by_test_id("join-button").click()
    expect(student.get_by_test_id("privacy-refusal")).to_contain_text(words["refused"])
    expect(student.get_by_test_id("privacy-confirm").get_by_role("checkbox")).to_have_attribute("aria-invalid", "true")
    look(student, "join-refused")

    # The notice, from the join page: the operator's settings and the prompt's own retention.
    student.get_by_test_id("privacy-note").get_by_test_id("privacy-link").click()
    expect(student.get_by_test_id("privacy-operator")).to_contain_text(words["operator"])
    expect(student.get_by_test_id("privacy-operator")).to_contain_text(words["contact"])
    expect(student.get_by_test_id("privacy-operator")).to_contain_text(words["location"])
    expect(student.get_by_test_id("privacy-retention")).to_contain_text(words["retention"])
    expect(student.get_by_test_id("privacy-level-current")).to_contain_text(words["current"])
    look(student, "notice-before-joining")
    student.get_by_role("link", name=words["back"]).click()
    no_overflow(student)

    # Confirmed, the student joins and lands in the chat, which links the notice too.
    student.get_by_test_id("privacy-confirm").get_by_role("checkbox").check()
    student.get_by_test_id("join-button").click()
    expect(student.get_by_text(words["joined"].format(name=name))).to_be_visible()
    expect(student.get_by_test_id("visibility-note").get_by_test_id("privacy-link")).to_be_visible()
    expect(student.locator("#composer")).to_be_visible()
    look(student, "joined")

    # The teacher raises the level: before the next chat, the chat page says what changed.
    live_app.manage("shell", "-c", RAISE.format(name=name))
    student.reload()
    change = student.get_by_test_id("privacy-change")
    expect(change).to_contain_text(words["changed"])
    expect(change).to_contain_text(words["now"])
    expect(student.locator("#composer")).to_have_count(0)
    look(student, "level-raised")

    # Acknowledged: the composer is back, under the new level.
    student.get_by_test_id("privacy-acknowledge").click()
    expect(student.get_by_test_id("privacy-change")).to_have_count(0)
    expect(student.locator("#composer")).to_be_visible()
    expect(student.get_by_test_id("visibility-note")).to_contain_text(words["named"])
    look(student, "acknowledged")

    # The notice now shows what the student confirmed.
    student.get_by_test_id("visibility-note").get_by_test_id("privacy-link").click()
    expect(student.get_by_test_id("privacy-confirmed")).to_contain_text(words["confirmed"])
    expect(student.get_by_test_id("privacy-confirmed")).to_contain_text(words["named_title"])
    look(student, "notice-confirmed")
