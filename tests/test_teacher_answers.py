"""The teacher's own answers: written through the API with sources, served to a student asking the
same question however it is written, without any model request or budget, the assistant still a
click away, and expired when a cited file changes."""

from __future__ import annotations

import json

import pytest

from chat.insight.answers import question_key
from chat.models import TeacherAnswer
from collections_app.models import FileStatus, PageCorrection, SourceFile
from collections_app.signals import file_changed
from rag.index import ChunkStore
from tests.fake_ollama import Reply

ANSWER = "The exam is on **12 March** in hall B [1]."


def api(client, method: str, url: str, data=None):
    kwargs = {"content_type": "application/json"} if data is not None else {}
    return getattr(client, method)(f"/api/v1{url}", json.dumps(data) if data is not None else None, **kwargs)


@pytest.fixture
def notes(chat_prompt):
    """The indexed material's file 2 as a ready file of the prompt's collection."""
    collection = chat_prompt.collections.get()
    source = SourceFile.objects.create(
        collection=collection,
        original_name="notes.md",
        file="x/notes.md",
        file_type="markdown",
        size=10,
        sha256="0" * 64,
        status=FileStatus.READY,
    )
    # The fixture's chunks were indexed under file id 2: index them again under this file's id.
    store = ChunkStore(collection.pk)
    chunks = store.file_chunks(2)
    from dataclasses import replace

    from rag.index import CollectionIndex
    from rag.providers import get_embedding_model

    vectors = get_embedding_model(collection.embedding_model).embed_batch([c.text for c in chunks])
    CollectionIndex.for_collection(collection).replace_file(
        source.pk, [replace(c, file_id=source.pk, embedding=v) for c, v in zip(chunks, vectors, strict=True)]
    )
    return source


@pytest.fixture
def teacher_answer(client_for, owner, chat_prompt, notes):
    chunk_id = ChunkStore(notes.collection_id).key(notes.pk, 2)
    response = api(
        client_for(owner),
        "post",
        f"/prompts/{chat_prompt.pk}/teacher-answers",
        {"question": "When is the exam?", "answer": ANSWER, "sources": [{"file_id": notes.pk, "chunk_id": chunk_id}]},
    )
    assert response.status_code == 201, response.content
    return response.json()


def ask(client, session, text: str) -> dict:
    response = api(client, "post", f"/chats/{session.id}/messages", {"content": text})
    assert response.status_code == 200, response.content
    return response.json()


def test_the_key_ignores_case_punctuation_whitespace_and_diacritics():
    assert question_key("  When is the EXAM?? ") == question_key("when is the exam") == "when is the exam"
    assert question_key("Whén  is\tthe exam…!") == "when is the exam"
    assert question_key("Milloin on tentti?") == question_key("milloin ON tentti")
    assert question_key("Milloin on tentti?") != question_key("Milloin on tentti 2?")


@pytest.mark.parametrize(
    "asked", ["When is the exam?", "when is the exam", "  WHEN is the   exam?!", "Whén is the exam"]
)
def test_a_student_gets_the_teachers_answer_without_a_model_request(
    asked, teacher_answer, client_for, student, session, ollama
):
    session.prompt.weekly_token_budget = 1  # spent or not, a teacher's answer costs nothing
    session.prompt.save()
    before = len(ollama.requests)
    reply = ask(client_for(student), session, asked)
    assert reply["answered_by"] == "teacher" and reply["mode"] == "teacher"
    assert reply["content"] == ANSWER and "<strong>12 March</strong>" in reply["html"]
    assert [c["file_name"] for c in reply["citations"]] == ["notes.md"]
    assert "Least squares regression" in reply["citations"][0]["text"]
    assert ollama.requests[before:] == [], "no request of any kind reached the model server"
    assert TeacherAnswer.objects.get(pk=teacher_answer["id"]).served == 1
    chat = api(client_for(student), "get", f"/chats/{session.id}").json()
    assert chat["messages"][-1]["answered_by"] == "teacher"


def test_another_question_and_asking_the_assistant_instead_run_the_normal_turn(
    teacher_answer, client_for, student, session, ollama
):
    ollama.script(Reply(content="The assistant's answer."), Reply(content="Another answer."))
    client = client_for(student)
    other = ask(client, session, "When is the exam retake?")
    assert other["answered_by"] == "assistant" and other["content"] == "The assistant's answer."
    ask(client, session, "When is the exam?")
    instead = api(client, "post", f"/chats/{session.id}/regenerate")
    assert instead.status_code == 200
    assert instead.json()["answered_by"] == "assistant" and instead.json()["content"] == "Another answer."
    assert len(ollama.chat_requests()) == 2


def test_teachers_list_change_and_delete_their_answers(teacher_answer, client_for, co_owner, chat_prompt):
    chat_prompt.co_teachers.add(co_owner)
    client = client_for(co_owner)
    url = f"/prompts/{chat_prompt.pk}/teacher-answers"
    listed = api(client, "get", url).json()
    assert [(a["question"], a["expired"]) for a in listed] == [("When is the exam?", False)]
    assert set(listed[0]) >= {"id", "question", "answer", "created", "expired"}
    changed = api(client, "patch", f"{url}/{teacher_answer['id']}", {"answer": "On 13 March."})
    assert changed.status_code == 200 and changed.json()["answer"] == "On 13 March."
    twice = api(client, "post", url, {"question": "WHEN is the exam", "answer": "x"})
    assert twice.status_code == 409 and "already an answer" in twice.json()["detail"]
    empty = api(client, "post", url, {"question": "?!", "answer": "x"})
    assert empty.status_code == 400 and "Write the question" in empty.json()["detail"]
    assert api(client, "delete", f"{url}/{teacher_answer['id']}").status_code == 204
    assert api(client, "get", url).json() == []


def test_a_source_outside_the_prompts_collections_is_refused(client_for, owner, chat_prompt, other_teacher):
    from collections_app.models import Collection

    elsewhere = Collection.objects.create(name="Other", owner=other_teacher)
    foreign = SourceFile.objects.create(
        collection=elsewhere, original_name="secret.md", file="x/s.md", file_type="markdown", size=1, sha256="1" * 64,
        status=FileStatus.READY,
    )  # fmt: skip
    response = api(
        client_for(owner),
        "post",
        f"/prompts/{chat_prompt.pk}/teacher-answers",
        {"question": "Q?", "answer": "A.", "sources": [{"file_id": foreign.pk}]},
    )
    assert response.status_code == 400 and "not a ready file of this prompt" in response.json()["detail"]


@pytest.mark.parametrize("change", ["re-extracted", "corrected", "deleted"])
def test_an_answer_expires_when_a_cited_file_changes(
    change, teacher_answer, notes, client_for, owner, student, session, ollama
):
    from collections_app import lifecycle, review

    if change == "re-extracted":
        lifecycle.requeue(notes, re_extract=True, enqueue=False)
    elif change == "corrected":
        notes.markdown = "# Notes\n\nOld text."
        notes.save()
        review.correct_page(owner, notes, 0, "New text.")
        assert PageCorrection.objects.filter(source=notes).exists()
    else:
        lifecycle.delete_file(notes)
    listed = api(client_for(owner), "get", f"/prompts/{session.prompt_id}/teacher-answers").json()
    assert listed[0]["expired"] is True and "notes.md" in listed[0]["expired_because"]
    page = client_for(owner).get(f"/prompts/{session.prompt_id}/insight/").content.decode()
    assert "notes.md" in page and "no longer given to students" in page
    ollama.script(Reply(content="The assistant's answer."))
    reply = ask(client_for(student), session, "When is the exam?")
    assert reply["answered_by"] == "assistant", "an expired answer is served no more"
    saved = api(client_for(owner), "patch", f"/prompts/{session.prompt_id}/teacher-answers/{listed[0]['id']}", {})
    if change != "deleted":
        assert saved.status_code == 200 and saved.json()["expired"] is False, "saving it again serves it again"


def test_a_rechunk_without_new_text_keeps_the_answer(teacher_answer, notes):
    from collections_app import lifecycle

    lifecycle.requeue(notes, re_extract=False, enqueue=False)  # e.g. a re-index after Redis lost its data
    assert TeacherAnswer.objects.get(pk=teacher_answer["id"]).expired is False
    file_changed.send(sender=SourceFile, file_id=notes.pk + 1000, file_name="other.md")
    assert TeacherAnswer.objects.get(pk=teacher_answer["id"]).expired is False


def test_a_teacher_accepts_the_assistants_draft_on_the_page_and_students_get_it(
    client_for, owner, student, session, ollama, notes
):
    ollama.script(Reply(content="The exam is on 12 March."))
    ask(client_for(student), session, "When is the exam?")
    teacher = client_for(owner)
    page = teacher.get(f"/prompts/{session.prompt_id}/insight/?question=When+is+the+exam%3F").content.decode()
    assert 'data-testid="answer-draft"' in page and ">The exam is on 12 March.</textarea>" in page
    saved = teacher.post(
        f"/prompts/{session.prompt_id}/insight/answers/",
        {"question": "When is the exam?", "answer": "The exam is on 12 March.", "sources": [str(notes.pk)]},
    )
    assert saved.status_code == 302
    row = TeacherAnswer.objects.get()
    assert [s["file_name"] for s in row.sources] == ["notes.md"] and row.author == owner
    before = len(ollama.requests)
    reply = ask(client_for(student), session, "when is the exam")
    assert reply["answered_by"] == "teacher" and ollama.requests[before:] == []


def test_no_draft_comes_from_a_chat_teachers_may_not_read(client_for, owner, student, session, ollama):
    session.visibility = "none"
    session.save()
    ollama.script(Reply(content="The exam is on 12 March."))
    ask(client_for(student), session, "When is the exam?")
    page = client_for(owner).get(f"/prompts/{session.prompt_id}/insight/?question=When+is+the+exam%3F").content
    assert b"12 March" not in page and b'data-testid="answer-draft"' not in page
