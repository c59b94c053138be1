"""A prompt's privacy notice says, in plain words, what its real settings do: what is stored, who
reads what at its level, how long chats are kept, where attached files go, which model servers get
the student's words and who runs the service. Its teachers and enrolled students read it by the
prompt's number, a visitor through a valid join code; nobody else, and a removed student no longer."""

from __future__ import annotations

import html
import re

import pytest
from django.utils import translation

from accounts.models import Role, User
from chat.course import writes
from chat.course.enrollment import remove_student
from chat.models import Enrollment
from collections_app.models import Collection

OPERATOR = {
    "PRIVACY_OPERATOR": "Testiyliopiston tietotekniikkakeskus",
    "PRIVACY_CONTACT": "tietosuoja@testi.example",
    "PRIVACY_DATA_LOCATION": "Helsinki, Finland (the university's own servers)",
}


def _text(response) -> str:
    """The page as a reader sees it: its text without tags, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", response.content.decode())).split())


def _notice(client, prompt) -> str:
    response = client.get(f"/prompts/{prompt.pk}/privacy/")
    assert response.status_code == 200
    return _text(response)


@pytest.fixture
def operator(settings):
    for name, value in OPERATOR.items():
        setattr(settings, name, value)
    return settings


def test_the_notice_is_written_from_the_prompts_real_settings(operator, client_for, prompt, student, owner):
    operator.CHAT_RETENTION_DAYS = 365
    operator.CHAT_ATTACHMENT_MAX_PAGES = 7
    operator.CHAT_ATTACHMENT_MAX_BYTES = 3 * 1024 * 1024
    operator.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"
    owner.first_name, owner.last_name = "Olga", "Opettaja"
    owner.save()
    prompt.retention_days = 30
    prompt.chat_visibility = "named"
    prompt.chat_model = "qwen3:8b"
    prompt.student_models = ["qwen3:8b", "openai:Qwen/Qwen3-8B"]
    prompt.save()
    prompt.collections.update(embedding_model="local:all-MiniLM-L6-v2")

    page = _notice(client_for(student), prompt)

    # Who runs it, from the settings.
    assert "This CurreChat service is run by Testiyliopiston tietotekniikkakeskus." in page
    assert "or a request to see or delete it: tietosuoja@testi.example." in page
    assert "Where your data is stored: Helsinki, Finland (the university's own servers)." in page
    assert "was set up by Olga Opettaja" in page
    # Who reads what: the prompt's level, and what each level means.
    assert "At this assistant's level: Your teachers can read your chats under your name." in page
    assert "Chats under your name this assistant" in page
    assert "Statistics only" in page and "Chats under a number" in page
    # How long: the prompt's own 30 days (shorter than the site's 365).
    assert "Your chats are deleted 30 days after their last message." in page
    # Attached files: the real limits, kept as text with the question.
    assert "(up to 3 MB and 7 pages)" in page
    assert "does not keep the file itself" in page
    # Model servers in words: two language models on two kinds of server, the embedder on this machine.
    assert "you may choose between 2 models" in page
    assert "the model server the administrator connected" in page
    assert "an OpenAI-compatible model server" in page and "may be run by another organisation" in page
    assert "processed on this service's own computer (no other server)" in page
    assert "then reads the search words with each passage found" in page, "curation is on"
    # No model ids.
    assert "qwen3" not in page and "Qwen" not in page and "MiniLM" not in page


def test_unset_operator_settings_say_the_administrator_has_not_filled_them_in(settings, client_for, prompt, student):
    settings.PRIVACY_OPERATOR = settings.PRIVACY_CONTACT = settings.PRIVACY_DATA_LOCATION = ""
    page = _notice(client_for(student), prompt)
    assert "The administrator of this service has not filled in who runs it." in page
    assert "The administrator has not filled in whom to contact about your data; ask your teacher." in page
    assert "The administrator has not filled in where the data is stored." in page
    assert "Your teacher can ask the service's administrator who runs these servers and where." in page


def test_retention_follows_the_site_when_it_is_shorter_and_says_when_nothing_is_deleted(
    settings, client_for, prompt, student
):
    settings.CHAT_RETENTION_DAYS = 14
    prompt.retention_days = 90
    prompt.save()
    assert "Your chats are deleted 14 days after their last message." in _notice(client_for(student), prompt)
    settings.CHAT_RETENTION_DAYS = 0
    prompt.retention_days = None
    prompt.save()
    page = _notice(client_for(student), prompt)
    assert "Your chats are kept until you delete them: neither this assistant nor the service deletes them." in page
    assert "deleted 14 days" not in page


def test_a_prompt_without_search_says_the_words_go_to_the_language_model_only(client_for, prompt, student):
    prompt.source_policy = "no_search"
    prompt.curation_enabled = True
    prompt.save()
    page = _notice(client_for(student), prompt)
    assert "This assistant does not search course material: your words go to the language model only." in page
    assert "search words" not in page.split("Which model servers receive your words", 1)[1]
    assert "sent to one language model" in page


def test_the_level_shown_follows_a_teachers_change(client_for, prompt, student, owner):
    writes.update_prompt(owner, prompt, {"chat_visibility": "none"})
    page = _notice(client_for(student), prompt)
    assert "At this assistant's level: Your teachers see only statistics" in page
    assert "Statistics only this assistant" in page


def test_the_api_gives_the_same_notice_and_what_the_student_confirmed(operator, client_for, prompt, student):
    Enrollment.objects.filter(student=student).update(privacy_confirmed_level="pseudonymous")
    body = client_for(student).get(f"/api/v1/prompts/{prompt.pk}/privacy").json()
    assert body["level"] == "pseudonymous" and body["change"] is None
    assert body["confirmed_level"] == "pseudonymous"
    assert [s["key"] for s in body["sections"]] == [
        "operator", "stored", "readers", "retention", "attachments", "models",
    ]  # fmt: skip
    operator_section = body["sections"][0]["paragraphs"]
    assert "This CurreChat service is run by Testiyliopiston tietotekniikkakeskus." in operator_section
    assert [level["current"] for level in body["levels"]] == [False, True, False]


def test_the_notice_reads_in_finnish(client_for, prompt, student):
    student.language = "fi"
    student.save()
    page = _notice(client_for(student), prompt)
    assert "Kuka lukee mitä" in page and "Kuinka kauan keskustelusi säilytetään" in page
    assert "Who reads what" not in page


# --- Who may read it -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("who", "status"),
    [("student", 200), ("owner", 200), ("co_teacher", 200), ("other_student", 404), ("other_teacher", 404)],
)
def test_who_may_read_the_notice_by_the_prompts_number(client_for, prompt, student, owner, other_student, who, status):
    users = {
        "student": student,
        "owner": owner,
        "other_student": other_student,
        "co_teacher": User.objects.create_user("cecilia-co", password="x", role=Role.TEACHER),
        "other_teacher": User.objects.create_user("tom-other", password="x", role=Role.TEACHER),
    }
    prompt.co_teachers.add(users["co_teacher"])
    client = client_for(users[who])
    assert client.get(f"/prompts/{prompt.pk}/privacy/").status_code == status
    assert client.get(f"/api/v1/prompts/{prompt.pk}/privacy").status_code == status


def test_a_teacher_reads_what_students_read_with_a_note(client_for, prompt, owner):
    page = _notice(client_for(owner), prompt)
    assert "This is what your students read." in page and "The assistant's settings" in page


def test_an_anonymous_visitor_is_sent_to_log_in(client, prompt):
    response = client.get(f"/prompts/{prompt.pk}/privacy/")
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.get(f"/api/v1/prompts/{prompt.pk}/privacy").status_code == 401


def test_a_student_just_removed_loses_the_notice_at_once(client_for, prompt, student, owner):
    client = client_for(student)
    assert client.get(f"/prompts/{prompt.pk}/privacy/").status_code == 200
    remove_student(Enrollment.objects.get(student=student, prompt=prompt))
    assert client.get(f"/prompts/{prompt.pk}/privacy/").status_code == 404
    assert client.get(f"/api/v1/prompts/{prompt.pk}/privacy").status_code == 404


def test_a_visitor_with_a_valid_join_code_reads_it_without_an_account(client, prompt, owner):
    response = client.get(f"/join/{prompt.join_code.lower()}/privacy/")
    assert response.status_code == 200
    page = _text(response)
    assert "Who reads what" in page and "Back to joining" in page
    assert client.get("/join/NOSUCHCODE/privacy/").status_code == 404
    old = prompt.join_code
    from chat.course.enrollment import rotate_join_code

    rotate_join_code(prompt)
    assert client.get(f"/join/{old}/privacy/").status_code == 404, "a retired code opens nothing"
    writes.update_prompt(owner, prompt, {"active": False})
    assert client.get(f"/join/{prompt.join_code}/privacy/").status_code == 404, "a switched-off prompt neither"


def test_the_join_page_and_every_chat_link_the_notice(client_for, prompt, student, other_student, owner, session):
    join_page = client_for(other_student).get(f"/join/{prompt.join_code}/").content.decode()
    assert f'href="/join/{prompt.join_code}/privacy/"' in join_page
    notice_link = f'href="/prompts/{prompt.pk}/privacy/"'
    assert notice_link in client_for(student).get(f"/prompts/{prompt.pk}/chat/new/").content.decode()
    assert notice_link in client_for(student).get(f"/prompts/{prompt.pk}/chat/{session.pk}/").content.decode()
    session.messages.create(role="user", content="What is bias?")
    teacher_reading = client_for(owner).get(f"/prompts/{prompt.pk}/chat/{session.pk}/").content.decode()
    assert notice_link in teacher_reading
    assert notice_link in client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()


def test_collections_embedded_on_a_model_server_are_named_by_their_server(client_for, prompt, student, owner):
    second = Collection.objects.create(
        name="Extra", language="english", owner=owner, embedding_model="ollama:snowflake-arctic-embed2"
    )
    prompt.collections.update(embedding_model="local:all-MiniLM-L6-v2")
    prompt.collections.add(second)
    page = _notice(client_for(student), prompt)
    processed = page.split("the search words are processed on ", 1)[1].split(". ", 1)[0]
    assert "this service's own computer (no other server)" in processed
    assert "the model server the administrator connected to this service" in processed


def test_notice_sentences_are_catalogued_in_finnish_and_swedish(prompt):
    """Every sentence of the notice comes out of the catalogues in both languages (none left in English)."""
    prompt.source_policy = "no_search"  # its own sentence, besides the searching ones of the default
    prompt.save()
    english = _flat(prompt, "en") + _flat(prompt, "en", search=True)
    for language in ("fi", "sv"):
        translated = _flat(prompt, language) + _flat(prompt, language, search=True)
        same = [line for line in translated if line in english]
        assert same == [], f"{language}: {same}"


def _flat(prompt, language: str, *, search: bool = False) -> list[str]:
    from chat.privacy.notice import notice

    if search:
        prompt.source_policy = "material_first"
    with translation.override(language):
        shown = notice(prompt)
    prompt.source_policy = "no_search"
    return (
        [s.heading for s in shown.sections]
        + [p for s in shown.sections for p in s.paragraphs]
        + [text for level in shown.levels for text in (level.title, level.detail)]
    )


def test_a_teacher_reading_the_notice_has_confirmed_nothing_and_is_asked_nothing(client_for, prompt, owner):
    writes.update_prompt(owner, prompt, {"chat_visibility": "named"})
    body = client_for(owner).get(f"/api/v1/prompts/{prompt.pk}/privacy").json()
    assert body["confirmed_level"] is None and body["confirmed_at"] is None and body["change"] is None
