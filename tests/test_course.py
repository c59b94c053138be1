"""Running a course: schedule with teacher preview, co-teachers, the roster, join links, source
policy, duplicates, Stop, export and deleting chats — through the API, the pages and the websocket."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta

import pytest
from channels.db import database_sync_to_async
from django.utils import timezone

from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, EnrollmentStatus, Message, MessageStatus, Prompt
from collections_app.models import Collection
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn, search_call
from tests.waiting import wait_for
from tests.websockets import EVENT_SECONDS


def api(client, method: str, url: str, data=None):
    kwargs = {"content_type": "application/json"} if data is not None else {}
    return getattr(client, method)(f"/api/v1{url}", json.dumps(data) if data is not None else None, **kwargs)


@pytest.fixture
def co_teacher(db):
    return User.objects.create_user("cleo-coteacher", password="x", role=Role.TEACHER)


# --- Schedule and preview ----------------------------------------------------------------------


def test_before_opening_students_are_told_when_it_opens_and_teachers_preview(
    client_for, owner, student, chat_prompt, ollama
):
    opens = timezone.now() + timedelta(days=3)
    assert (
        api(client_for(owner), "patch", f"/prompts/{chat_prompt.pk}", {"opens_at": opens.isoformat()}).json()["state"]
        == "draft"
    )
    refused = api(client_for(student), "post", "/chats", {"prompt_id": chat_prompt.pk})
    assert refused.status_code == 403 and "opens on" in refused.json()["detail"]
    home = client_for(student).get("/").content.decode()
    assert chat_prompt.name in home and "This assistant opens on" in home

    teacher_chat = api(client_for(owner), "post", "/chats", {"prompt_id": chat_prompt.pk})
    assert teacher_chat.status_code == 201, "the owner previews before students can"
    page = client_for(owner).get(f"/prompts/{chat_prompt.pk}/chat/", follow=True).content.decode()
    assert "Preview — students can't use this now." in page
    ollama.script(Reply(content="Preview works."))
    answer = api(client_for(owner), "post", f"/chats/{teacher_chat.json()['id']}/messages", {"content": "Hi"})
    assert answer.status_code == 200 and answer.json()["content"] == "Preview works."


def test_after_closing_chats_stay_readable_but_take_no_messages(client_for, owner, student, session, ollama):
    ollama.script(Reply(content="Before closing."))
    assert api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Q"}).status_code == 200
    closes = timezone.now() - timedelta(minutes=1)
    api(client_for(owner), "patch", f"/prompts/{session.prompt_id}", {"closes_at": closes.isoformat()})
    refused = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Again"})
    assert refused.status_code == 403 and "closed on" in refused.json()["detail"]
    readable = api(client_for(student), "get", f"/chats/{session.pk}")
    assert readable.status_code == 200 and readable.json()["messages"][-1]["content"] == "Before closing."
    page = client_for(student).get(f"/prompts/{session.prompt_id}/chat/{session.pk}/").content.decode()
    assert "your chats stay readable" in page and 'id="composer"' not in page


def test_closing_before_opening_is_refused(client_for, owner, prompt):
    now = timezone.now()
    response = api(
        client_for(owner),
        "patch",
        f"/prompts/{prompt.pk}",
        {"opens_at": now.isoformat(), "closes_at": (now - timedelta(hours=1)).isoformat()},
    )
    assert (
        response.status_code == 400 and response.json()["detail"] == "The closing time must be after the opening time."
    )


# --- Co-teachers -------------------------------------------------------------------------------


def test_co_teacher_edits_and_sees_the_roster_but_only_the_owner_deletes_or_changes_co_teachers(
    client_for, owner, co_teacher, other_teacher, prompt
):
    added = api(client_for(owner), "patch", f"/prompts/{prompt.pk}", {"co_teacher_ids": [co_teacher.pk]})
    assert added.status_code == 200 and added.json()["co_teacher_ids"] == [co_teacher.pk]
    co = client_for(co_teacher)
    assert api(co, "patch", f"/prompts/{prompt.pk}", {"system_prompt": "Be brief."}).status_code == 200
    assert api(co, "get", f"/prompts/{prompt.pk}/students").json()[0]["label"] == "Student 1"
    assert co.get(f"/prompts/{prompt.pk}/").status_code == 200
    changed = api(co, "patch", f"/prompts/{prompt.pk}", {"co_teacher_ids": [co_teacher.pk, other_teacher.pk]})
    assert (
        changed.status_code == 403 and changed.json()["detail"] == "Only the prompt's owner can change its co-teachers."
    )
    assert api(co, "delete", f"/prompts/{prompt.pk}").status_code == 403
    assert Prompt.objects.filter(pk=prompt.pk).exists()
    assert "Delete prompt" not in co.get(f"/prompts/{prompt.pk}/").content.decode()
    # Ending co-teaching takes the prompt away at once.
    api(client_for(owner), "patch", f"/prompts/{prompt.pk}", {"co_teacher_ids": []})
    assert api(co, "get", f"/prompts/{prompt.pk}").status_code == 404


def test_co_teacher_attaches_only_collections_they_may_use(client_for, owner, co_teacher, prompt):
    prompt.co_teachers.add(co_teacher)
    owners_only = Collection.objects.create(name="Owner's drafts", owner=owner)
    theirs = Collection.objects.create(name="Cleo's notes", owner=co_teacher)
    co = client_for(co_teacher)
    refused = api(co, "patch", f"/prompts/{prompt.pk}", {"collection_ids": [owners_only.pk]})
    assert refused.status_code == 400
    attached = sorted(c.pk for c in prompt.collections.all()) + [theirs.pk]
    kept = api(co, "patch", f"/prompts/{prompt.pk}", {"collection_ids": attached})
    assert kept.status_code == 200 and kept.json()["collection_ids"] == sorted(attached), (
        "collections the owner attached stay attached when a co-teacher saves"
    )


# --- Roster, removal, join links ---------------------------------------------------------------


def test_roster_labels_students_by_number_unless_named(client_for, owner, student, other_student, prompt):
    Enrollment.objects.create(prompt=prompt, student=other_student)
    rows = api(client_for(owner), "get", f"/prompts/{prompt.pk}/students").json()
    assert [(r["id"], r["label"]) for r in rows] == [(1, "Student 1"), (2, "Student 2")]
    body = json.dumps(rows) + client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()
    assert student.username not in body and other_student.username not in body
    api(client_for(owner), "patch", f"/prompts/{prompt.pk}", {"chat_visibility": "named"})
    named = api(client_for(owner), "get", f"/prompts/{prompt.pk}/students").json()
    assert [r["label"] for r in named] == [student.username, other_student.username]


def test_students_cannot_read_the_roster(client_for, student, prompt):
    assert api(client_for(student), "get", f"/prompts/{prompt.pk}/students").status_code == 403


def test_removed_student_cannot_post_and_may_join_again_unless_blocked(client_for, owner, student, session, ollama):
    prompt = session.prompt
    assert api(client_for(owner), "delete", f"/prompts/{prompt.pk}/students/1").status_code == 204
    assert api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "Q"}).status_code == 403
    search_url = f"/collections/{prompt.collections.first().pk}/search"
    searched = api(client_for(student), "post", search_url, {"query": "bias"})
    assert searched.status_code == 404, "no search runs for a removed student"
    assert not ollama.chat_requests()
    rejoined = api(client_for(student), "post", "/prompts/join", {"code": prompt.join_code, "privacy_confirmed": True})
    assert rejoined.status_code == 200
    assert Enrollment.objects.get(student=student).status == EnrollmentStatus.ENROLLED
    assert api(client_for(owner), "delete", f"/prompts/{prompt.pk}/students/1?block=true").status_code == 204
    rejoin = api(client_for(student), "post", "/prompts/join", {"code": prompt.join_code, "privacy_confirmed": True})
    assert rejoin.status_code == 403 and "cannot join it again" in rejoin.json()["detail"]
    row = api(client_for(owner), "get", f"/prompts/{prompt.pk}/students").json()[0]
    assert row["blocked"] and row["status"] == "blocked" and row["label"] == "Student 1"


def test_removing_a_student_from_the_page_takes_effect(client_for, owner, student, prompt):
    response = client_for(owner).post(f"/prompts/{prompt.pk}/students/1/remove/")
    assert response.status_code == 302
    assert client_for(student).get(f"/prompts/{prompt.pk}/chat/").status_code == 404


@pytest.mark.django_db(transaction=True)
async def test_a_removed_students_open_websocket_refuses_the_next_message(student, session, ollama):
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    await database_sync_to_async(Enrollment.objects.filter(student=student).update)(status=EnrollmentStatus.REMOVED)
    await ws.send_json_to({"type": "user_message", "content": "Still here?"})
    event = json.loads(await ws.receive_from(timeout=EVENT_SECONDS))
    await ws.disconnect()
    assert event["type"] == "error" and event["code"] == "not_allowed"
    assert not ollama.chat_requests()
    assert not await database_sync_to_async(Message.objects.filter(content="Still here?").exists)()


def test_join_link_confirms_on_get_and_enrolls_on_post(client_for, owner, other_student, prompt):
    client = client_for(other_student)
    page = client.get(f"/join/{prompt.join_code}/")
    body = page.content.decode()
    assert page.status_code == 200 and prompt.name in body and owner.username in body
    assert "Student N" in body, "the student is told what teachers see"
    assert not Enrollment.objects.filter(student=other_student).exists(), "a GET never enrolls"
    assert client.post(f"/join/{prompt.join_code}/", {"privacy_confirmed": "1"}).status_code == 302
    assert Enrollment.objects.filter(student=other_student, status=EnrollmentStatus.ENROLLED).exists()


def test_a_new_join_code_retires_the_old_one(client_for, owner, other_student, prompt):
    old = prompt.join_code
    rotated = api(client_for(owner), "post", f"/prompts/{prompt.pk}/join-code")
    assert rotated.status_code == 200 and rotated.json()["join_code"] != old
    assert client_for(other_student).get(f"/join/{old}/").status_code == 404
    assert api(client_for(other_student), "post", "/prompts/join", {"code": old}).status_code == 404
    new_code = {"code": rotated.json()["join_code"], "privacy_confirmed": True}
    joined = api(client_for(other_student), "post", "/prompts/join", new_code)
    assert joined.status_code == 200


# --- Policy, guidance, duplicate ----------------------------------------------------------------


def test_no_search_policy_offers_the_model_no_tool(client_for, owner, student, session, ollama):
    api(client_for(owner), "patch", f"/prompts/{session.prompt_id}", {"source_policy": "no_search"})
    ollama.script(Reply(content="From general knowledge."))
    api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "What is bias?"})
    assert not ollama.chat_requests()[-1].get("tools")


def test_instructions_and_example_questions_are_shown_in_an_empty_chat(client_for, owner, student, chat_prompt):
    changes = {"student_instructions": "Ask about weeks 1–3.", "example_questions": ["What is bias?", "  "]}
    saved = api(client_for(owner), "patch", f"/prompts/{chat_prompt.pk}", changes).json()
    assert saved["example_questions"] == ["What is bias?"], "blank questions are dropped"
    page = client_for(student).get(f"/prompts/{chat_prompt.pk}/chat/", follow=True).content.decode()
    assert "Ask about weeks 1–3." in page and 'data-question="What is bias?"' in page
    too_many = api(client_for(owner), "patch", f"/prompts/{chat_prompt.pk}", {"example_questions": ["q"] * 7})
    assert too_many.status_code == 400 and "at most 6" in too_many.json()["detail"]


def test_duplicate_copies_settings_and_collections_but_not_students(client_for, owner, prompt):
    api(client_for(owner), "patch", f"/prompts/{prompt.pk}", {"student_instructions": "Weeks 1-3"})
    copy = api(client_for(owner), "post", f"/prompts/{prompt.pk}/duplicate")
    assert copy.status_code == 201
    data = copy.json()
    assert data["name"] == f"{prompt.name} (copy)" and data["student_instructions"] == "Weeks 1-3"
    assert data["collection_ids"] == [c.pk for c in prompt.collections.all()]
    assert data["join_code"] != prompt.join_code and data["student_count"] == 0


# --- Stop, export, delete -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_stop_keeps_the_partial_answer_and_the_next_message_works(student, session, ollama):
    ollama.script(Reply(chunks=[f"w{i} " for i in range(300)], delay=0.02), Reply(content="Next answer."))
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "Talk long"})
    first = json.loads(await ws.receive_from(timeout=EVENT_SECONDS))
    assert first["type"] == "token"
    await ws.send_json_to({"type": "stop"})
    events = [first, *await receive_turn(ws)]
    done = events[-1]
    assert done["type"] == "message_done" and done["message"]["status"] == "stopped"
    streamed = "".join(e["text"] for e in events if e["type"] == "token")
    assert streamed and done["message"]["content"] == streamed and len(streamed.split()) < 300
    stored = await database_sync_to_async(Message.objects.get)(pk=done["message"]["id"])
    assert stored.status == MessageStatus.STOPPED and stored.content == streamed
    # The model server sees the request end.
    assert await asyncio.to_thread(ollama.wait_for_abandoned, 1, EVENT_SECONDS) == 1
    await ws.send_json_to({"type": "user_message", "content": "And now?"})
    nxt = await receive_turn(ws)
    await ws.disconnect()
    assert nxt[-1]["type"] == "message_done" and nxt[-1]["message"]["content"] == "Next answer."


@pytest.mark.django_db(transaction=True)
async def test_stop_ends_an_answer_whose_model_has_not_said_a_word_yet(student, session, ollama):
    """A model reading a long prompt is silent for a while: Stop ends the answer then too."""
    silent = threading.Event()
    ollama.script(Reply(chunks=["late "], gate_after=0, gate=silent))
    ws, _, _ = await connect_ws(student, session.id)
    try:
        await ws.send_json_to({"type": "user_message", "content": "Think hard"})
        await asyncio.to_thread(wait_for, lambda: ollama.chat_requests(), 30, "the model to be asked")
        await ws.send_json_to({"type": "stop"})
        events = await receive_turn(ws)
    finally:
        silent.set()
        await ws.disconnect()
    done = events[-1]
    assert done["type"] == "message_done" and done["message"]["status"] == "stopped"
    assert not [e for e in events if e["type"] == "token"]
    assert await asyncio.to_thread(ollama.wait_for_abandoned, 1, EVENT_SECONDS) == 1


def test_stop_without_a_running_answer_is_a_conflict(client_for, student, session):
    response = api(client_for(student), "post", f"/chats/{session.pk}/stop")
    assert response.status_code == 409 and response.json()["detail"] == "Nothing is being answered in this chat."


def test_export_resolves_citations_for_the_student_only(client_for, owner, student, other_student, session, ollama):
    ollama.script(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Bias skews samples [1]."))
    api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "What is bias?"})
    response = client_for(student).get(f"/api/v1/chats/{session.pk}/export?format=md")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/markdown")
    text = response.content.decode()
    assert "## You" in text and "What is bias?" in text and "Bias skews samples [1]." in text
    assert "- [1] lecture-3.pdf, p. 4, Sampling > Bias:" in text
    assert client_for(owner).get(f"/api/v1/chats/{session.pk}/export").status_code == 403
    assert client_for(other_student).get(f"/api/v1/chats/{session.pk}/export").status_code == 404


def test_teacher_export_is_pseudonymous_json_lines(client_for, owner, student, session, ollama):
    ollama.script(Reply(content="Answer."))
    api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "My question"})
    response = client_for(owner).get(f"/api/v1/prompts/{session.prompt_id}/chats/export.jsonl")
    lines = [json.loads(line) for line in b"".join(response.streaming_content).decode().splitlines()]
    assert [(r["student"], r["messages"][0]["content"]) for r in lines] == [("Student 1", "My question")]
    assert student.username not in json.dumps(lines)


def test_student_deletes_their_own_chat_and_teachers_no_longer_see_it(client_for, owner, student, session):
    assert api(client_for(owner), "delete", f"/chats/{session.pk}").status_code == 403
    assert api(client_for(student), "delete", f"/chats/{session.pk}").status_code == 204
    assert not ChatSession.objects.filter(pk=session.pk).exists()
    assert api(client_for(owner), "get", f"/prompts/{session.prompt_id}/chats").json() == []


# --- Attachments ---------------------------------------------------------------------------------


def _pdf(pages: list[str]) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_text((72, 72), text)
    return doc.tobytes()


def test_an_attached_pdf_is_read_with_the_question_and_kept_out_of_the_collection(client_for, student, session, ollama):
    from django.core.files.uploadedfile import SimpleUploadedFile

    ollama.script(Reply(content="Your notes say the mean is 4."))
    upload = SimpleUploadedFile("omat-muistiinpanot.pdf", _pdf(["Keskiarvo on 4.", "Mediaani on 3."]))
    response = client_for(student).post(
        f"/api/v1/chats/{session.pk}/messages", {"content": "Check my notes", "attachment": upload}
    )
    assert response.status_code == 200, response.content
    sent = ollama.chat_requests()[-1]["messages"][-1]["content"]
    assert "Check my notes" in sent and "Keskiarvo on 4." in sent and "Mediaani on 3." in sent
    chat = api(client_for(student), "get", f"/chats/{session.pk}").json()
    question = chat["messages"][0]
    assert question["content"] == "Check my notes"
    assert question["attachment"] == {
        "name": "omat-muistiinpanot.pdf",
        "pages": 2,
        "chars": question["attachment"]["chars"],
    }
    assert not session.prompt.collections.first().files.exists(), "never added to a collection"
    export = client_for(student).get(f"/api/v1/chats/{session.pk}/export").content.decode()
    assert "_Attached: omat-muistiinpanot.pdf_" in export


@pytest.mark.parametrize(
    ("name", "data", "status", "sentence"),
    [
        ("kuva.png", b"\x89PNG\r\n\x1a\n" + bytes(200), 415, "not text"),
        ("rikki.pdf", b"%PDF-1.7 broken", 400, "damaged"),
        ("tyhja.txt", b"", 400, "is empty"),
        ("pitka.pdf", None, 413, "at most 20"),
    ],
)
def test_bad_attachments_get_the_upload_sentences(client_for, student, session, ollama, name, data, status, sentence):
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = data if data is not None else _pdf([f"Sivu {i}" for i in range(21)])
    upload = SimpleUploadedFile(name, data)
    response = client_for(student).post(f"/api/v1/chats/{session.pk}/messages", {"content": "Q", "attachment": upload})
    assert response.status_code == status and sentence in response.json()["detail"].lower()
    assert not Message.objects.filter(session=session).exists() and not ollama.chat_requests()


def test_an_attachment_too_big_for_the_context_is_refused_with_a_sentence(
    client_for, student, session, ollama, settings
):
    from django.core.files.uploadedfile import SimpleUploadedFile

    settings.CHAT_ATTACHMENT_MAX_TOKENS = 50
    upload = SimpleUploadedFile("essee.txt", ("Sana " * 400).encode())
    response = client_for(student).post(f"/api/v1/chats/{session.pk}/messages", {"content": "Q", "attachment": upload})
    assert response.status_code == 413 and "Attach a shorter excerpt" in response.json()["detail"]


def test_a_chat_keeps_the_label_its_student_was_told_after_the_prompt_becomes_named(client_for, owner, student, prompt):
    student.first_name, student.last_name = "Sanna", "Suomi"
    student.save()
    chat = ChatSession.objects.create(prompt=prompt, user=student)  # started under "Student N"
    Message.objects.create(session=chat, role="user", content="What is a p-value?")
    teacher = client_for(owner)
    api(teacher, "patch", f"/prompts/{prompt.pk}", {"chat_visibility": "named"})
    page = teacher.get(f"/prompts/{prompt.pk}/").content.decode()
    asked = page[page.index("What students asked") :].split("</section>")[0]
    views = {
        "prompt page's chat list": asked,
        "chat page": teacher.get(f"/prompts/{prompt.pk}/chat/{chat.pk}/").content.decode(),
        "chats API": json.dumps(api(teacher, "get", f"/prompts/{prompt.pk}/chats").json()),
        "chat API": json.dumps(api(teacher, "get", f"/chats/{chat.pk}").json()),
    }
    for where, body in views.items():
        assert "Student 1" in body and "Sanna Suomi" not in body, where
    assert "Sanna Suomi" not in page, "the roster keeps 'Student 1' while a chat of that number is pseudonymous"
    later = ChatSession.objects.create(prompt=prompt, user=student, visibility="named")
    Message.objects.create(session=later, role="user", content="And a confidence interval?")
    labels = [c["user"] for c in api(teacher, "get", f"/prompts/{prompt.pk}/chats").json()]
    assert sorted(labels) == ["Sanna Suomi", "Student 1"]
