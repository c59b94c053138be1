"""Students choose between the models a prompt offers: the model server gets the chosen model, the
chat keeps it and shows which model wrote each answer, a model the prompt does not offer is refused
alike over the websocket and the REST API, and a model gone from the list or the server is handled
in plain words."""

from __future__ import annotations

import html
import json

import pytest
from channels.db import database_sync_to_async
from prometheus_client import REGISTRY

from chat.course import writes
from chat.course.allowances import allowance
from chat.models import ChatSession, Message, MessageStatus
from tests.fake_ollama import Reply
from tests.fake_openai import FakeOpenAI
from tests.fixtures_chat import connect_ws, receive_turn
from tests.websockets import EVENT_SECONDS

SECOND = "llama3.2:3b"  # the model a student picks instead of the prompt's own (qwen3:8b)
NOT_OFFERED = "“qwen3-vl:8b” is not one of this assistant's models. Choose one of: qwen3:8b, llama3.2:3b."
GONE = "The model “llama3.2:3b” is no longer offered here. Choose one of: qwen3:8b, and send again."


@pytest.fixture
def offered(session, owner, ollama):
    """The student's chat on a prompt whose teacher offers qwen3:8b (its own) and SECOND."""
    ollama.models.append(SECOND)
    writes.update_prompt(owner, session.prompt, {"student_models": [SECOND]})
    session.prompt.refresh_from_db()
    return session


def post_message(client, session, content: str, **extra):
    body = {"content": content, **extra}
    return client.post(f"/api/v1/chats/{session.id}/messages", json.dumps(body), content_type="application/json")


def tokens_counted(model: str) -> float:
    sample = REGISTRY.get_sample_value("currechat_model_tokens_total", {"model": model, "kind": "completion"})
    return sample or 0.0


def test_the_student_chooses_a_model_and_the_chat_keeps_it(offered, client_for, student, ollama):
    client = client_for(student)
    ollama.script(Reply(content="Answered by the second model.", completion_tokens=7))
    before = tokens_counted(SECOND)

    chosen = post_message(client, offered, "What is bias?", model=SECOND)

    assert chosen.status_code == 200 and chosen.json()["model"] == SECOND
    assert ollama.chat_requests()[-1]["model"] == SECOND, "the model server was asked for the chosen model"
    assert tokens_counted(SECOND) - before == 7, "its tokens are counted under the model that wrote them"
    assert allowance(student.pk, offered.prompt).used > 0
    # The next message names no model: the chat keeps the one chosen.
    ollama.script(Reply(content="Still the second model."))
    assert post_message(client, offered, "And then?").json()["model"] == SECOND
    assert ollama.chat_requests()[-1]["model"] == SECOND
    chat = client.get(f"/api/v1/chats/{offered.id}").json()
    assert chat["model"] == SECOND and chat["model_choices"] == ["qwen3:8b", SECOND]
    assert [m["model"] for m in chat["messages"] if m["role"] == "assistant"] == [SECOND, SECOND]
    # Another chat starts with the prompt's own model.
    other = ChatSession.objects.create(prompt=offered.prompt, user=student)
    ollama.script(Reply(content="The prompt's own model."))
    assert post_message(client, other, "Hello").json()["model"] == "qwen3:8b"
    assert ollama.chat_requests()[-1]["model"] == "qwen3:8b"


def test_a_model_of_the_openai_compatible_server_can_be_chosen(offered, owner, client_for, student, settings):
    server = FakeOpenAI().start()
    try:
        settings.OPENAI_BASE_URL = server.url
        writes.update_prompt(owner, offered.prompt, {"student_models": [SECOND, "openai:Qwen/Qwen3-8B"]})
        server.script(Reply(content="From vLLM."))
        answer = post_message(client_for(student), offered, "Hi", model="openai:Qwen/Qwen3-8B")
        assert answer.status_code == 200 and answer.json()["content"] == "From vLLM."
        assert answer.json()["model"] == "openai:Qwen/Qwen3-8B"
        assert server.chat_requests()[-1]["model"] == "Qwen/Qwen3-8B"
    finally:
        server.stop()


def test_a_model_the_prompt_does_not_offer_is_refused_by_the_api(offered, client_for, student, ollama):
    refused = post_message(client_for(student), offered, "Hi", model="qwen3-vl:8b")
    assert refused.status_code == 400 and refused.json()["detail"] == NOT_OFFERED
    assert not offered.messages.exists() and not ollama.chat_requests()


@pytest.mark.django_db(transaction=True)
async def test_a_model_the_prompt_does_not_offer_is_refused_over_the_websocket(offered, student, ollama):
    ws, _, _ = await connect_ws(student, offered.id)
    await ws.send_json_to({"type": "user_message", "content": "Hi", "model": "qwen3-vl:8b"})
    refused = await ws.receive_json_from(timeout=EVENT_SECONDS)
    # The same check answers a choice over the socket: the chosen model reaches the server.
    ollama.script(Reply(content="Fine."))
    await ws.send_json_to({"type": "user_message", "content": "Hi", "model": SECOND})
    events = await receive_turn(ws)
    await ws.disconnect()
    assert refused == {
        "type": "error",
        "message_id": None,
        "code": "model_not_offered",
        "detail": NOT_OFFERED,
        "retryable": False,
    }
    assert events[-1]["type"] == "message_done" and events[-1]["message"]["model"] == SECOND
    assert [r["model"] for r in ollama.chat_requests()] == [SECOND]
    assert await database_sync_to_async(offered.messages.filter(role="user").count)() == 1


@pytest.mark.django_db(transaction=True)
async def test_a_model_the_teacher_takes_off_the_list_is_refused_when_named_and_left_when_not(
    offered, owner, client_for, student, ollama
):
    """Named in the message (a page still showing it): refused, nothing stored. A message naming
    none: the chat goes back to the prompt's own model, and the answer says which model wrote it."""
    ws, _, _ = await connect_ws(student, offered.id)
    ollama.script(Reply(content="From the second model."))
    await ws.send_json_to({"type": "user_message", "content": "First", "model": SECOND})
    assert (await receive_turn(ws))[-1]["type"] == "message_done"

    await database_sync_to_async(writes.update_prompt)(owner, offered.prompt, {"student_models": []})
    await ws.send_json_to({"type": "user_message", "content": "Second", "model": SECOND})
    refused = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert refused["type"] == "error" and refused["detail"] == GONE and refused["message_id"] is None

    ollama.script(Reply(content="From the prompt's model."))
    answer = await database_sync_to_async(lambda: post_message(client_for(student), offered, "Third"))()
    assert answer.status_code == 200 and answer.json()["model"] == "qwen3:8b"
    assert [r["model"] for r in ollama.chat_requests()] == [SECOND, "qwen3:8b"]
    questions = await database_sync_to_async(list)(
        offered.messages.filter(role="user").values_list("content", flat=True)
    )
    assert questions == ["First", "Third"]


def test_the_chat_page_offers_the_prompts_models_and_nothing_else(offered, client_for, student, owner, ollama):
    page = html.unescape(client_for(student).get(f"/prompts/{offered.prompt_id}/chat/{offered.id}/").content.decode())
    select = page.split('data-testid="model-select"')[1].split("</select>")[0]
    assert '<option value="qwen3:8b" selected>' in select and f'<option value="{SECOND}">' in select
    assert "qwen3-vl:8b" not in page, "a student never sees the server's other models"
    config = json.loads(page.split('id="chat-config" type="application/json">')[1].split("</script>")[0])
    assert config["show_models"] is True

    # One model only: no select, and the student is not told model names.
    writes.update_prompt(owner, offered.prompt, {"student_models": []})
    plain = client_for(student).get(f"/prompts/{offered.prompt_id}/chat/{offered.id}/").content.decode()
    assert 'data-testid="model-select"' not in plain and "qwen3:8b" not in plain


def test_a_chosen_model_gone_from_the_server_is_said_in_plain_words(offered, client_for, student, ollama):
    client = client_for(student)
    ollama.script(Reply(content="Chosen."))
    post_message(client, offered, "First", model=SECOND)
    ollama.models.remove(SECOND)

    page = html.unescape(client.get(f"/prompts/{offered.prompt_id}/chat/{offered.id}/").content.decode())
    assert f"{SECOND} (not available now)" in page
    assert "The assistant answers by quoting the course material: its language model is not connected." in page
    # Asked anyway: the answer quotes the material, as when no model is connected, and says so.
    quoted = post_message(client, offered, "What is selection bias?")
    assert quoted.status_code == 200 and quoted.json()["mode"] == "extractive"
    assert SECOND not in [r["model"] for r in ollama.chat_requests()[1:]]


def test_a_model_that_disappears_mid_turn_fails_in_plain_words(offered, client_for, student, ollama):
    ollama.script(Reply(status=404, error=f"model '{SECOND}' not found"))
    failed = post_message(client_for(student), offered, "Hi", model=SECOND)
    reply = Message.objects.get(session=offered, role="assistant")
    sentence = "The assistant is not available with this model right now. Choose another model, or try again later."
    assert reply.status == MessageStatus.FAILED and reply.error == sentence
    assert failed.json()["error"] == sentence
    assert "127.0.0.1" not in reply.error and "ollama pull" not in reply.error
