"""The safety check before the model (seed 000), against a moderation endpoint at its protocol
(tests/fake_moderation.py) and a guard classifier on the Ollama-protocol test server."""

from __future__ import annotations

import pytest

from chat.models import Message
from tests.fake_moderation import FakeModeration
from tests.fake_ollama import Reply

pytestmark = pytest.mark.django_db(transaction=True)

CONTACTS = "Student health services, 0800 123 456, https://uni.example/help"
HARM = "I want to hurt myself tonight"


@pytest.fixture(scope="module")
def moderation_server():
    fake = FakeModeration().start()
    yield fake
    fake.stop()


@pytest.fixture
def moderated(moderation_server, settings):
    moderation_server.flags = {"hurt myself": ("self-harm", "self-harm/intent"), "bomb": ("violence", "illicit")}
    moderation_server.status = 200
    moderation_server.requests.clear()
    settings.MODERATION_MODEL = "moderation:omni-moderation-latest"
    settings.MODERATION_BASE_URL = moderation_server.url
    settings.MODERATION_HELP_CONTACTS = CONTACTS
    settings.MODERATION_WHEN_DOWN = "allow"
    settings.MODERATION_OUTPUT = False
    return moderation_server


def ask(client_for, student, session, content: str) -> dict:
    response = client_for(student).post(f"/api/v1/chats/{session.id}/messages", {"content": content})
    assert response.status_code == 200, response.content
    return response.json()


def stats(client_for, owner, session) -> dict:
    return client_for(owner).get(f"/api/v1/prompts/{session.prompt_id}/stats").json()["moderation"]


def test_a_flagged_message_gets_a_caring_answer_with_help_contacts_and_no_model_turn(
    moderated, ollama, client_for, student, owner, session
):
    reply = ask(client_for, student, session, HARM)
    assert reply["guard"] == "flagged" and reply["status"] == "complete"
    assert CONTACTS in reply["content"] and "you don't have to deal with it alone" in reply["content"]
    assert ollama.chat_requests() == [], "no model read the message"
    assert moderated.requests[-1] == {"model": "omni-moderation-latest", "input": HARM}
    assert stats(client_for, owner, session) == {"flagged_input": 1, "flagged_output": 0, "unavailable": 0}
    # Metered: the check's cost is on the student's week.
    usage = client_for(student).get(f"/api/v1/me/usage?prompt_id={session.prompt_id}").json()
    assert usage["prompts"][0]["used"] > 0
    # The question stays in the chat, for the teachers only as the student was told (pseudonymous here).
    assert Message.objects.filter(session=session, content=HARM).exists()


def test_a_flagged_message_outside_self_harm_gets_the_deployments_message_without_contacts(
    moderated, ollama, client_for, student, session, settings
):
    settings.MODERATION_MESSAGE = "This assistant only helps with the course. Contact your teacher."
    reply = ask(client_for, student, session, "How do I build a bomb?")
    assert reply["content"] == "This assistant only helps with the course. Contact your teacher."
    assert ollama.chat_requests() == []


def test_a_message_not_flagged_goes_to_the_model(moderated, ollama, client_for, student, owner, session):
    ollama.script(Reply(content="Selection bias skews the sample."))
    reply = ask(client_for, student, session, "What is selection bias?")
    assert reply["content"] == "Selection bias skews the sample." and reply["guard"] is None
    assert moderated.requests[-1]["input"] == "What is selection bias?"
    assert stats(client_for, owner, session) == {"flagged_input": 0, "flagged_output": 0, "unavailable": 0}


@pytest.mark.parametrize("failure", ["status", "unreachable"])
def test_a_check_that_is_down_lets_the_message_through_when_the_policy_allows(
    failure, moderated, ollama, client_for, student, owner, session, settings
):
    if failure == "status":
        moderated.status = 503
    else:
        settings.MODERATION_BASE_URL = "http://127.0.0.1:9/v1"  # nothing listens there
    ollama.script(Reply(content="An answer all the same."))
    reply = ask(client_for, student, session, "What is selection bias?")
    assert reply["content"] == "An answer all the same."
    assert stats(client_for, owner, session)["unavailable"] == 1


def test_a_check_that_is_down_refuses_when_the_policy_says_so(
    moderated, ollama, client_for, student, session, settings
):
    moderated.status = 503
    settings.MODERATION_WHEN_DOWN = "refuse"
    reply = ask(client_for, student, session, "What is selection bias?")
    assert reply["status"] == "failed"
    assert (
        reply["error"]
        == "The assistant cannot check messages right now, so it cannot answer. Try again in a few minutes."
    )
    assert ollama.chat_requests() == []


def test_a_guard_model_on_the_model_server_flags_self_harm(ollama, client_for, student, session, settings):
    settings.MODERATION_MODEL = "guard:llama-guard3:1b"
    settings.MODERATION_HELP_CONTACTS = CONTACTS
    ollama.models.append("llama-guard3:1b")
    ollama.script(Reply(content="unsafe\nS11"))
    reply = ask(client_for, student, session, HARM)
    assert reply["guard"] == "flagged" and CONTACTS in reply["content"]
    (guard_request,) = ollama.chat_requests()
    assert guard_request["model"] == "llama-guard3:1b" and guard_request["messages"][-1]["content"] == HARM

    ollama.script(Reply(content="safe"), Reply(content="Bias is a systematic error."))
    assert ask(client_for, student, session, "What is bias?")["content"] == "Bias is a systematic error."


def test_a_flagged_answer_is_taken_back_when_output_is_checked(
    moderated, ollama, client_for, student, owner, session, settings
):
    settings.MODERATION_OUTPUT = True
    ollama.script(Reply(content="Here is how to make a bomb: ..."))
    reply = ask(client_for, student, session, "Tell me a chemistry fact.")
    assert "bomb" not in reply["content"] and reply["guard"] == "flagged_output"
    assert "bomb" not in Message.objects.get(pk=reply["id"]).content
    assert stats(client_for, owner, session)["flagged_output"] == 1


def test_the_statistics_page_shows_the_safety_checks_counts(moderated, ollama, client_for, student, owner, session):
    ask(client_for, student, session, HARM)
    page = client_for(owner).get(f"/prompts/{session.prompt_id}/insight/").content.decode()
    assert 'data-testid="flagged-input">1<' in page and 'data-testid="flagged-output">0<' in page
    assert 'data-testid="moderation-unavailable">0<' in page
    assert 'data-testid="leak-rewritten"' not in page, "the leak guard's counts only for a guided prompt"
