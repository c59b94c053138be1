"""Small things people stumbled on (issue 46, item 12), as the server writes the pages: the chat's
heading, a teacher's own test chat told the truth, the embed code only while embedding is on,
"Reset this week" asking first, every accepted format on a new teacher's home, plain words on the
prompt form, and a student's rating for the teacher who reads the chat."""

from __future__ import annotations

import json
import re

import pytest

from accounts.models import Role, User
from chat.models import ChatSession, Feedback, Message, MessageRole
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def chat_config(page: str) -> dict:
    return json.loads(re.search(r'id="chat-config" type="application/json">(.*?)</script>', page, re.S).group(1))  # type: ignore[union-attr]


def test_the_chat_page_has_one_h1_the_prompts_name(prompt, student, client_for):
    page = client_for(student).get(f"/prompts/{prompt.pk}/chat/new/").content.decode()
    assert re.findall(r"<h1[^>]*>(.*?)</h1>", page) == ["Stats helper"]


def test_a_teachers_own_test_chat_does_not_say_your_teachers_read_it(prompt, owner, student, client_for):
    own = client_for(owner).get(f"/prompts/{prompt.pk}/chat/new/").content.decode()
    assert "This is your own test chat" in own and "Your teachers can read your chats" not in own
    theirs = client_for(student).get(f"/prompts/{prompt.pk}/chat/new/").content.decode()
    assert "This is your own test chat" not in theirs


def test_the_embed_code_shows_only_while_embedding_is_on(prompt, owner, client_for, settings):
    settings.EMBED_ALLOWED_ORIGINS = []
    page = client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()
    assert "Copy embed code" not in page and 'data-testid="embed-code"' not in page
    assert "ask your administrator to allow" in page
    settings.EMBED_ALLOWED_ORIGINS = ["https://moodle.example.edu"]
    assert "Copy embed code" in client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()


def test_reset_this_week_asks_before_it_acts(prompt, owner, student, client_for):
    page = client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()
    form = re.search(r'<form[^>]*class="inline reset-week"[^>]*>', page)
    assert form is not None and "data-confirm=" in form.group(0)


def test_a_new_teachers_home_lists_every_accepted_format(client_for, db):
    teacher = User.objects.create_user("new-teacher", password=PASSWORD, role=Role.TEACHER)
    home = client_for(teacher).get("/").content.decode()
    empty = re.search(r'data-testid="no-collections">(.*?)</p>', home, re.S).group(1)  # type: ignore[union-attr]
    for kind in ("PDF", "PowerPoint (.pptx)", "Word (.docx)", ".vtt", "PNG", "Markdown", "HTML", "MB"):
        assert kind in empty, kind


def test_the_prompt_form_speaks_plainly(prompt, owner, client_for):
    page = client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()
    assert "LLM" not in page and "Curation enabled" not in page and "0-2;" not in page
    assert "How varied the answers are" in page


def test_a_teacher_reading_a_students_chat_sees_the_students_rating(prompt, owner, student, client_for):
    chat = ChatSession.objects.create(prompt=prompt, user=student, title="Means", visibility="pseudonymous")
    Message.objects.create(session=chat, role=MessageRole.USER, content="What is the mean?")
    answer = Message.objects.create(session=chat, role=MessageRole.ASSISTANT, content="The average.")
    Feedback.objects.create(message=answer, prompt=prompt, rating="down", comment="Needed an example")
    config = chat_config(client_for(owner).get(f"/prompts/{prompt.pk}/chat/{chat.pk}/").content.decode())
    assert config["ratings_read"] == {str(answer.pk): {"rating": "down", "comment": "Needed an example"}}
    own = chat_config(client_for(student).get(f"/prompts/{prompt.pk}/chat/{chat.pk}/").content.decode())
    assert own["ratings_read"] is None and own["feedback"] == {
        str(answer.pk): {"rating": "down", "comment": "Needed an example"}
    }
