"""Plain words in a real browser (issue 29 item 8), at a phone's and a laptop's width and in
Finnish: a new teacher creates a collection in Finnish, which the site's default model for search
by meaning does not know, and sees the right model offered before the collection exists; the chat
model is a choice among the server's chat models; no model ids, method names or setting names are
shown outside "Details"; a student has no API-token section."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.test_budget_journey import WORDS as LOGIN_WORDS
from tests.browser.test_budget_journey import log_in
from tests.browser.test_finnish_journey import look_at
from tests.test_plain_words import SETTING, WORDS

pytestmark = pytest.mark.browser

PASSWORD = "budget-journey-pass-123"  # log_in's
MULTILINGUAL = "ollama:snowflake-arctic-embed2"  # the test model server's embedder

SETUP = """
from accounts.models import Role, User
from chat.models import Enrollment, Prompt
teacher = User.objects.create_user({teacher!r}, password={password!r}, role=Role.TEACHER)
student = User.objects.create_user({student!r}, password={password!r}, role=Role.STUDENT)
prompt = Prompt.objects.create(owner=teacher, name={name!r}, chat_model="qwen3:8b")
Enrollment.objects.create(student=student, prompt=prompt)
"""

# What the page shows without opening any "Details" (a closed one's content is not rendered, so
# innerText leaves it out), the model pickers left aside: a model's name is what is chosen there.
SHOWN = """() => {
    const pickers = [...document.querySelectorAll('#id_chat_model, #id_student_models, #composer-model')];
    pickers.forEach((e) => { e.dataset.display = e.style.display; e.style.display = 'none'; });
    const text = document.body.innerText;
    pickers.forEach((e) => { e.style.display = e.dataset.display; });
    return text;
}"""

OFFER = {
    "en": "Finnish: the model for search by meaning was changed to one that knows it",
    "fi": "suomi: merkityshaun malliksi vaihdettiin kieltä osaava malli",
}
DETAILS = {"en": "Details", "fi": "Tiedot"}
CREATE = {"en": "Create collection", "fi": "Luo kokoelma"}
TOKENS = {"en": "API tokens", "fi": "API-tunnukset"}


def plain(page) -> None:
    """No banned word or setting name is shown outside "Details"."""
    text = page.evaluate(SHOWN)
    found = [m.group(0) for m in [*WORDS.finditer(text), *SETTING.finditer(text)]]
    assert found == [], f"{page.url} shows {found}"


@pytest.mark.parametrize(
    ("language", "width"),
    [pytest.param("en", 390, id="phone"), pytest.param("en", 1366, id="desktop"), pytest.param("fi", 390, id="fi")],
)
def test_a_finnish_collection_gets_the_right_model_before_it_exists(
    live_app, new_page, journey, ollama, language, width
):
    login = LOGIN_WORDS[language]
    names = {"teacher": f"plainope{language}{width}", "student": f"plainopp{language}{width}"}
    live_app.manage("shell", "-c", SETUP.format(password=PASSWORD, name=f"Sanat {language} {width}", **names))
    size = (width, 844 if width < 800 else 900)
    look_here = look_at(journey, language, size)

    def look(page, label: str, *, details_open: bool = False) -> None:
        if not details_open:  # an opened "Details" shows the names on purpose
            plain(page)
        look_here(page, label)

    teacher = new_page(*size, locale="fi-FI" if language == "fi" else "en-GB")
    log_in(teacher, live_app, login, names["teacher"])
    look(teacher, "home")

    # A new collection in Finnish: the model that knows Finnish is chosen and said so, before saving.
    teacher.goto(live_app.url + "/collections/new/")
    teacher.locator("#id_name").fill(f"Tilastotiede {language} {width}")
    model = teacher.locator("#id_embedding_model")
    expect(model).to_have_value("local:all-MiniLM-L6-v2")  # the site's default knows English only
    expect(model).to_be_hidden()  # which model exactly is behind "Details"
    teacher.locator("#id_language").select_option("finnish")
    expect(teacher.get_by_test_id("language-offer")).to_contain_text(OFFER[language])
    expect(model).to_have_value(MULTILINGUAL)
    look(teacher, "language-offer")
    details = teacher.locator("details.field-details")
    details.locator("summary", has_text=DETAILS[language]).click()
    expect(model).to_be_visible()
    expect(model.locator("option:checked")).to_contain_text("snowflake-arctic-embed2")
    look(teacher, "model-details", details_open=True)
    teacher.get_by_role("button", name=CREATE[language]).click()
    teacher.wait_for_url(lambda url: "/collections/new/" not in url)
    expect(teacher.get_by_test_id("language-warning")).to_have_count(0)
    expect(teacher.locator(".collection-facts details")).to_contain_text("snowflake-arctic-embed2")
    look(teacher, "collection")

    # The chat model: a choice among the server's chat models, its embedder not among them.
    teacher.goto(live_app.url + "/prompts/new/")
    chat_model = teacher.locator("#id_chat_model")
    assert chat_model.evaluate("(e) => e.tagName") == "SELECT"
    assert chat_model.locator("option").evaluate_all("(o) => o.map((e) => e.value)") == ["qwen3:8b", "qwen3-vl:8b"]
    expect(chat_model).to_have_value("qwen3:8b")
    look(teacher, "new-prompt")

    # The account: the teacher's programs have tokens; the student has no such section.
    teacher.goto(live_app.url + "/account/")
    expect(teacher.get_by_role("heading", name=TOKENS[language])).to_be_visible()
    look(teacher, "teacher-account")
    student = new_page(*size, locale="fi-FI" if language == "fi" else "en-GB")
    log_in(student, live_app, login, names["student"])
    look(student, "student-home")
    student.goto(live_app.url + "/account/")
    expect(student.get_by_test_id("api-tokens")).to_have_count(0)
    expect(student.get_by_text(TOKENS[language])).to_have_count(0)
    look(student, "student-account")
