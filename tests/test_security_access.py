"""Access taken away stops at once: deactivated, logged-out and demoted users on an open websocket,
a demoted teacher's edit rights, and a former co-owner's own prompt (issue 12, items 1-4)."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async
from django.test import Client

from accounts.models import Role, User
from chat.models import ChatSession, Message, Prompt
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn, search_call
from tests.websockets import EVENT_SECONDS


async def _refused(ws, ollama, text: str) -> dict:
    await ws.send_json_to({"type": "user_message", "content": text})
    event = json.loads(await ws.receive_from(timeout=EVENT_SECONDS))
    await ws.disconnect()
    assert not ollama.chat_requests(), "no model call (and no search) for a refused message"
    assert not await database_sync_to_async(Message.objects.filter(content=text).exists)()
    return event


@pytest.mark.django_db(transaction=True)
async def test_a_deactivated_students_open_websocket_refuses_the_next_message(student, session, ollama):
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    await database_sync_to_async(User.objects.filter(pk=student.pk).update)(is_active=False)
    event = await _refused(ws, ollama, "Still here?")
    assert event["type"] == "error" and event["code"] == "not_allowed"


@pytest.mark.django_db(transaction=True)
async def test_a_logged_out_students_open_websocket_refuses_the_next_message(student, session, ollama):
    from currechat.asgi import application  # noqa: F401 - the app the socket below talks to
    from tests.websockets import open_websocket

    ws, connected, _ = await open_websocket(student, f"/ws/chats/{session.id}/")
    assert connected
    # Logging out anywhere ends the browser session the socket was opened with.
    from django.contrib.sessions.models import Session

    await database_sync_to_async(Session.objects.all().delete)()
    event = await _refused(ws, ollama, "Am I still signed in?")
    assert event["type"] == "error" and "signed out" in event["detail"]


@pytest.mark.django_db(transaction=True)
async def test_a_demoted_teachers_open_preview_websocket_refuses_the_next_message(owner, chat_prompt, ollama):
    preview = await database_sync_to_async(ChatSession.objects.create)(prompt=chat_prompt, user=owner)
    ws, connected, _ = await connect_ws(owner, preview.id)
    assert connected
    await database_sync_to_async(User.objects.filter(pk=owner.pk).update)(role=Role.STUDENT)
    event = await _refused(ws, ollama, "Preview again")
    assert event["type"] == "error" and event["code"] == "not_allowed"


def test_a_demoted_teacher_loses_edit_rights_at_once(client_for, owner, collection, prompt):
    client = client_for(owner)
    patch = {"content_type": "application/json"}
    assert client.patch(f"/api/v1/prompts/{prompt.pk}", json.dumps({"description": "ok"}), **patch).status_code == 200
    User.objects.filter(pk=owner.pk).update(role=Role.STUDENT)
    prompt_patch = client.patch(f"/api/v1/prompts/{prompt.pk}", json.dumps({"description": "no"}), **patch)
    collection_patch = client.patch(f"/api/v1/collections/{collection.pk}", json.dumps({"description": "no"}), **patch)
    assert prompt_patch.status_code in (403, 404) and collection_patch.status_code in (403, 404)
    assert client.get(f"/collections/{collection.pk}/").status_code in (403, 404)
    assert client.get(f"/prompts/{prompt.pk}/").status_code in (403, 404)
    prompt.refresh_from_db()
    assert prompt.description != "no"


def test_a_former_co_owner_chatting_through_their_own_prompt_gets_no_passages(
    client_for, owner, co_owner, material, ollama
):
    own = Prompt.objects.create(owner=co_owner, name="Cora's own", curation_enabled=False)
    own.collections.add(material)
    chat = ChatSession.objects.create(prompt=own, user=co_owner)
    ollama.script(Reply(tool_calls=[search_call("sampling bias")]), Reply(content="Answer."))
    body = {"content": "What is selection bias?"}
    client = client_for(co_owner)
    url = f"/api/v1/chats/{chat.pk}/messages"
    first = client.post(url, json.dumps(body), content_type="application/json")
    assert first.status_code == 200 and "Selection bias arises" in json.dumps(first.json())

    material.co_owners.remove(co_owner)  # the owner ends the co-ownership
    ollama.reset()
    ollama.script(Reply(tool_calls=[search_call("sampling bias")]), Reply(content="Answer."))
    second = client.post(url, json.dumps(body), content_type="application/json")
    sent = json.dumps(ollama.chat_requests())
    assert "Selection bias arises" not in sent and "Selection bias arises" not in json.dumps(second.json())
    page = client.get(f"/prompts/{own.pk}/").content.decode()
    assert page.count(material.name) and 'data-testid="unavailable-collections"' in page
    assert material.pk in client.get(f"/api/v1/prompts/{own.pk}").json()["unavailable_collection_ids"]


@pytest.mark.django_db(transaction=True)
async def test_a_removed_students_socket_runs_no_search(student, session, ollama):
    """The message before removal is answered with passages; the one after runs nothing."""
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    ollama.script(Reply(tool_calls=[search_call("bias")]), Reply(content="Answer [1]."))
    await ws.send_json_to({"type": "user_message", "content": "First"})
    events = await receive_turn(ws)
    assert any(e["type"] == "tool_result" for e in events)
    from chat.course.enrollment import remove_student

    enrollment = await database_sync_to_async(lambda: session.prompt.enrollments.get(student=student))()
    await database_sync_to_async(remove_student)(enrollment)
    ollama.reset()
    event = await _refused(ws, ollama, "Second")
    assert event["type"] == "error"


def test_client_without_session_is_refused_by_the_api(session):
    assert Client().post(f"/api/v1/chats/{session.pk}/messages", {"content": "x"}).status_code == 401
