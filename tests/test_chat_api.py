"""The chat REST API and pages: who may read and write a chat, JSON and event-stream answers."""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

from chat.models import ChatSession, MessageStatus
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call

CAST = ["student", "owner", "co_owner", "other_teacher", "other_student", "anonymous"]
# Reading a chat: its student, and the prompt's teacher (read-only); everyone else is told nothing.
OUTSIDERS = {"co_owner": 404, "other_teacher": 404, "other_student": 404, "anonymous": 401}
READ_API = {"student": 200, "owner": 200, **OUTSIDERS}
WRITE_API = {"student": 200, "owner": 403, **OUTSIDERS}


@pytest.fixture
def as_(request, client_for, session):
    def make(who: str):
        return client_for(None if who == "anonymous" else request.getfixturevalue(who))

    return make


def post_json(client, url: str, data: dict, **extra):
    return client.post(url, json.dumps(data), content_type="application/json", **extra)


@pytest.mark.parametrize("who", CAST)
def test_only_the_student_and_the_teacher_can_read_a_chat(as_, who, session):
    response = as_(who).get(f"/api/v1/chats/{session.id}")
    assert response.status_code == READ_API[who]
    if response.status_code == 200:
        assert response.json()["id"] == session.id


@pytest.mark.parametrize("who", CAST)
def test_only_the_student_can_write_in_a_chat(as_, who, session, ollama):
    ollama.script(Reply(content="An answer."))
    response = post_json(as_(who), f"/api/v1/chats/{session.id}/messages", {"content": "hello"})
    assert response.status_code == WRITE_API[who]
    assert session.messages.exists() == (who == "student")


@pytest.mark.parametrize("who", CAST)
def test_chat_page_access(as_, who, session):
    response = as_(who).get(f"/prompts/{session.prompt_id}/chat/{session.id}/")
    if who == "anonymous":
        assert response.status_code == 302 and "/login/" in response["Location"]
        return
    assert response.status_code == (200 if who in ("student", "owner") else 404)
    if who == "student":
        assert b'id="composer"' in response.content
    if who == "owner":
        assert b'id="composer"' not in response.content and b'data-testid="read-only"' in response.content


def test_the_chat_list_shows_own_chats_and_to_teachers_their_students_chats(client_for, session, student, owner):
    other = ChatSession.objects.create(prompt=session.prompt, user=owner)
    assert [c["id"] for c in client_for(student).get("/api/v1/chats").json()] == [session.id]
    assert {c["id"] for c in client_for(owner).get("/api/v1/chats").json()} == {session.id, other.id}


def test_students_start_chats_only_with_prompts_they_joined(client_for, chat_prompt, student, other_student):
    created = post_json(client_for(student), "/api/v1/chats", {"prompt_id": chat_prompt.id})
    assert created.status_code == 201 and created.json()["prompt_id"] == chat_prompt.id
    assert post_json(client_for(other_student), "/api/v1/chats", {"prompt_id": chat_prompt.id}).status_code == 404
    chat_prompt.active = False
    chat_prompt.save()
    refused = post_json(client_for(student), "/api/v1/chats", {"prompt_id": chat_prompt.id})
    assert refused.status_code == 403 and "switched off" in refused.json()["detail"]


def test_posting_a_message_returns_the_finished_turn(client_for, student, session, ollama):
    ollama.script(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Bias **matters** [1]."))
    response = post_json(client_for(student), f"/api/v1/chats/{session.id}/messages", {"content": "Bias?"})
    assert response.status_code == 200
    turn = response.json()
    assert turn["status"] == MessageStatus.COMPLETE and turn["content"] == "Bias **matters** [1]."
    assert "<strong>matters</strong>" in turn["html"]
    assert turn["tool_calls"][0]["query"] == "selection bias"
    assert turn["tool_results"][0]["passages"][0]["file_name"] == "lecture-3.pdf"
    assert turn["citations"][0]["n"] == 1
    detail = client_for(student).get(f"/api/v1/chats/{session.id}").json()
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert detail["messages"][1]["citations"] == turn["citations"]


def test_api_refusals_have_their_status_codes(client_for, student, session, settings):
    settings.CHAT_MAX_MESSAGE_CHARS = 5
    too_long = post_json(client_for(student), f"/api/v1/chats/{session.id}/messages", {"content": "far too long"})
    assert too_long.status_code == 413 and "characters" in too_long.json()["detail"]
    settings.CHAT_MAX_MESSAGE_CHARS = 100
    settings.CHAT_RATE_LIMIT = 1
    client = client_for(student)
    post_json(client, f"/api/v1/chats/{session.id}/messages", {"content": "one"})
    limited = post_json(client, f"/api/v1/chats/{session.id}/messages", {"content": "two"})
    assert limited.status_code == 429 and "Try again in" in limited.json()["detail"]


@pytest.mark.django_db(transaction=True)
async def test_the_event_stream_carries_the_websocket_events(student, session, ollama):
    from channels.db import database_sync_to_async

    ollama.script(Reply(tool_calls=[search_call("standard error")]), Reply(content="Bigger samples help [1]."))
    client = AsyncClient()
    await database_sync_to_async(client.force_login)(student)
    response = await client.post(
        f"/api/v1/chats/{session.id}/messages",
        json.dumps({"content": "Why?"}),
        content_type="application/json",
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 200 and response["Content-Type"].startswith("text/event-stream")
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    frames = [f for f in body.split("\n\n") if f]
    kinds = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert kinds[:2] == ["tool_call", "tool_result"] and kinds[-1] == "message_done"
    events = [json.loads(f.split("\n")[1].removeprefix("data: ")) for f in frames]
    tokens = [e["text"] for e in events if e["type"] == "token"]
    assert "".join(tokens) == "Bigger samples help [1]."


def test_student_home_links_each_prompt_to_its_chat(client_for, student, chat_prompt):
    page = client_for(student).get("/").content.decode()
    assert f'href="/prompts/{chat_prompt.id}/chat/"' in page


def test_a_new_chat_is_stored_only_from_its_first_message(client_for, student, chat_prompt, ollama):
    client = client_for(student)
    for _ in range(3):  # "New chat" clicked again and again leaves nothing behind
        page = client.get(f"/prompts/{chat_prompt.id}/chat/new/")
        assert page.status_code == 200 and 'id="composer"' in page.content.decode()
    assert client.get(f"/prompts/{chat_prompt.id}/chat/").status_code == 200
    assert not ChatSession.objects.filter(user=student).exists()
    created = post_json(client, "/api/v1/chats", {"prompt_id": chat_prompt.id}).json()
    ollama.script(Reply(content="Hello."))
    post_json(client, f"/api/v1/chats/{created['id']}/messages", {"content": "What is a sample?"})
    home = client.get(f"/prompts/{chat_prompt.id}/chat/")
    assert home.status_code == 302 and home["Location"].endswith(f"/chat/{created['id']}/")
    page = client.get(home["Location"]).content.decode()
    assert "What is a sample?" in page, "titled from its first message"


def test_students_rename_search_and_regenerate_their_chats(client_for, student, session, ollama):
    client = client_for(student)
    ollama.script(Reply(content="First answer."), Reply(content="Second answer."))
    post_json(client, f"/api/v1/chats/{session.id}/messages", {"content": "Explain variance"})
    again = client.post(f"/api/v1/chats/{session.id}/regenerate")
    assert again.status_code == 200 and again.json()["content"] == "Second answer."
    answers = [m["content"] for m in client.get(f"/api/v1/chats/{session.id}").json()["messages"]]
    assert answers == ["Explain variance", "First answer.", "Second answer."], "the earlier answer stays"
    client.post(f"/prompts/{session.prompt_id}/chat/{session.id}/rename/", {"title": "Variance notes"})
    session.refresh_from_db()
    assert session.title == "Variance notes"
    found = client.get(f"/prompts/{session.prompt_id}/chat/{session.id}/?q=variance").content.decode()
    missing = client.get(f"/prompts/{session.prompt_id}/chat/{session.id}/?q=entropy").content.decode()
    assert "Variance notes</a>" in found and "No chat matches “entropy”" in missing


def test_the_teacher_sees_what_students_asked(client_for, owner, session):
    session.title = "What is bias?"
    session.save()
    page = client_for(owner).get(f"/prompts/{session.prompt_id}/").content.decode()
    assert "What is bias?" in page and f"/prompts/{session.prompt_id}/chat/{session.id}/" in page


def test_the_chat_page_says_when_no_model_is_connected(client_for, owner, student, session, ollama):
    ollama.models = []
    page = client_for(student).get(f"/prompts/{session.prompt_id}/chat/{session.id}/").content.decode()
    assert "answers by quoting the course material" in page and "its language model is not connected" in page
    assert session.prompt.chat_model not in page, "students are not shown model names"
    teacher = client_for(owner).get(f"/prompts/{session.prompt_id}/chat/{session.id}/").content.decode()
    assert "without it" in teacher or "without a language model" in teacher


def test_the_student_home_lists_recent_chats_with_messages_only(client_for, student, session, ollama):
    ChatSession.objects.create(prompt=session.prompt, user=student)  # empty: not a chat to go back to
    ollama.script(Reply(content="Hi."))
    post_json(client_for(student), f"/api/v1/chats/{session.id}/messages", {"content": "What is variance?"})
    page = client_for(student).get("/").content.decode()
    assert 'data-testid="recent-chats"' in page and "What is variance?" in page
    assert page.count(f"/prompts/{session.prompt_id}/chat/") >= 1 and "New chat</a>" not in page
