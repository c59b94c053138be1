"""A student confirms a prompt's privacy notice on joining (the join page refuses without it; the API
records it when told, and a program that sends only the code joins as it always has), and
acknowledges a raise of the level before their next chat starts under it: until then the chat page
shows what changed and a new chat is refused on the page and the API alike, while an older chat goes
on at the level it started under. Lowering the level asks nobody; a raise after it asks again."""

from __future__ import annotations

import json

import pytest
from channels.db import database_sync_to_async

from chat.course import writes
from chat.models import ChatSession, Enrollment, Message
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn


def api(client, method: str, path: str, body: dict | None = None):
    if method == "get":
        return client.get(f"/api/v1{path}")
    return getattr(client, method)(f"/api/v1{path}", json.dumps(body or {}), content_type="application/json")


def _text(response) -> str:
    import html
    import re

    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", response.content.decode())).split())


# --- Joining ---------------------------------------------------------------------------------------


def test_joining_on_the_page_without_confirming_is_refused_with_a_sentence(client_for, prompt, other_student):
    client = client_for(other_student)
    refused = client.post(f"/join/{prompt.join_code}/", {"privacy_level": "pseudonymous"})
    assert refused.status_code == 200
    assert "Confirm that you have read the privacy notice to join" in _text(refused)
    assert not Enrollment.objects.filter(student=other_student).exists()

    joined = client.post(f"/join/{prompt.join_code}/", {"privacy_confirmed": "1", "privacy_level": "pseudonymous"})
    assert joined.status_code == 302 and joined["Location"] == f"/prompts/{prompt.pk}/chat/"
    enrollment = Enrollment.objects.get(student=other_student, prompt=prompt)
    assert enrollment.privacy_confirmed_level == "pseudonymous" and enrollment.privacy_confirmed_at is not None
    assert enrollment.privacy_accepted_level == "pseudonymous"


def test_signing_up_without_confirming_makes_no_account_and_keeps_what_was_typed(client, prompt):
    data = {"username": "uusi", "password1": "a-long-enough-pass", "password2": "a-long-enough-pass"}
    refused = client.post(f"/join/{prompt.join_code}/", data)
    page = _text(refused)
    assert "Confirm that you have read the privacy notice to join" in page
    assert 'value="uusi"' in refused.content.decode()
    assert not Enrollment.objects.filter(student__username="uusi").exists()
    assert not client.session.get("_auth_user_id")
    from accounts.models import User

    assert not User.objects.filter(username="uusi").exists()
    client.post(f"/join/{prompt.join_code}/", data | {"privacy_confirmed": "1"})
    assert Enrollment.objects.get(student__username="uusi").privacy_confirmed_level == "pseudonymous"


def test_a_level_raised_while_the_student_read_is_shown_before_they_join(client_for, prompt, other_student, owner):
    client = client_for(other_student)
    writes.update_prompt(owner, prompt, {"chat_visibility": "named"})
    refused = client.post(f"/join/{prompt.join_code}/", {"privacy_confirmed": "1", "privacy_level": "pseudonymous"})
    page = _text(refused)
    assert "What teachers can see changed while you were reading" in page and "under your name" in page
    assert not Enrollment.objects.filter(student=other_student).exists()
    # Lowered while they read: they agreed to more than is read now, and join at the lower level.
    writes.update_prompt(owner, prompt, {"chat_visibility": "none"})
    client.post(f"/join/{prompt.join_code}/", {"privacy_confirmed": "1", "privacy_level": "named"})
    assert Enrollment.objects.get(student=other_student).privacy_confirmed_level == "none"


def test_the_api_join_needs_the_confirmation_and_records_it(client_for, prompt, other_student, owner):
    client = client_for(other_student)
    unknown = api(client, "post", "/prompts/join", {"code": "NOSUCHONE", "privacy_confirmed": True})
    assert unknown.status_code == 404, "an unknown code is still told apart first"
    refused = api(client, "post", "/prompts/join", {"code": prompt.join_code, "privacy_confirmed": False})
    assert refused.status_code == 400
    assert refused.json()["field"] == "privacy_confirmed"
    assert "Confirm that you have read the privacy notice to join" in refused.json()["detail"]
    assert not Enrollment.objects.filter(student=other_student).exists()

    writes.update_prompt(owner, prompt, {"chat_visibility": "named"})
    stale = {"code": prompt.join_code, "privacy_confirmed": True, "privacy_level": "pseudonymous"}
    assert api(client, "post", "/prompts/join", stale).status_code == 409

    joined = api(client, "post", "/prompts/join", {"code": prompt.join_code, "privacy_confirmed": True})
    assert joined.status_code == 200 and joined.json() == {
        "id": prompt.pk, "name": prompt.name, "description": prompt.description,
    }  # fmt: skip
    assert Enrollment.objects.get(student=other_student).privacy_confirmed_level == "named"


def test_a_program_that_sends_only_the_code_joins_as_the_api_always_has(client_for, prompt, other_student):
    """DESIGN.md's contract is `POST /prompts/join {code}`: programs written to it keep working. The
    student is told the level now, as through a learning platform, and no confirmation is recorded."""
    client = client_for(other_student)
    joined = api(client, "post", "/prompts/join", {"code": prompt.join_code})
    assert joined.status_code == 200 and joined.json()["id"] == prompt.pk
    enrollment = Enrollment.objects.get(student=other_student)
    assert enrollment.privacy_confirmed_at is None and enrollment.privacy_confirmed_level == ""
    assert enrollment.privacy_accepted_level == prompt.chat_visibility
    assert api(client, "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201


def test_the_student_homes_join_box_leads_to_the_notice_and_its_confirmation(client_for, prompt, other_student):
    response = client_for(other_student).post("/join/", {"code": prompt.join_code}, follow=True)
    page = response.content.decode()
    assert 'data-testid="privacy-confirm"' in page and f"/join/{prompt.join_code}/privacy/" in page
    assert not Enrollment.objects.filter(student=other_student).exists()


# --- A raised level --------------------------------------------------------------------------------


@pytest.fixture
def raised(owner, session):
    """The student's prompt (their chat `session` started under "pseudonymous") raised to "named"."""
    writes.update_prompt(owner, session.prompt, {"chat_visibility": "named"})
    return session


def test_after_a_raise_the_chat_tells_the_student_and_starts_no_new_chat_until_acknowledged(
    client_for, raised, student, owner, ollama
):
    client = client_for(student)
    prompt = raised.prompt
    page = client.get(f"/prompts/{prompt.pk}/chat/{raised.pk}/")
    text = _text(page)
    assert "Your teacher has changed what they can see of your chats" in text
    assert "Until now: Your teachers can read your chats, labelled “Student N”" in text
    assert "From your next chat on: Your teachers can read your chats under your name." in text
    blank = client.get(f"/prompts/{prompt.pk}/chat/new/").content.decode()
    assert 'data-testid="privacy-change"' in blank and 'id="composer"' not in blank

    # The API refuses a new chat, with a sentence and a code.
    new_chat = api(client, "post", "/chats", {"prompt_id": prompt.pk})
    assert new_chat.status_code == 403 and new_chat.json()["code"] == "privacy_unconfirmed"
    assert "Confirm that you have read this before you chat on" in new_chat.json()["detail"]
    assert ChatSession.objects.filter(user=student).count() == 1
    # The older chat goes on under the level it started under, the one the student was told.
    ollama.script(Reply(content="Yes."))
    message = api(client, "post", f"/chats/{raised.pk}/messages", {"content": "Still there?"})
    assert message.status_code == 200, message.json()
    raised.refresh_from_db()
    assert raised.visibility == "pseudonymous" and Message.objects.filter(content="Still there?").exists()

    # The page's button acknowledges the level shown, and goes back to the chat.
    done = client.post(
        f"/prompts/{prompt.pk}/privacy/acknowledge/",
        {"level": "named", "next": f"/prompts/{prompt.pk}/chat/{raised.pk}/"},
        follow=True,
    )
    assert done.redirect_chain[-1][0] == f"/prompts/{prompt.pk}/chat/{raised.pk}/"
    assert 'id="composer"' in done.content.decode()
    assert 'data-testid="privacy-change"' not in done.content.decode()
    enrollment = Enrollment.objects.get(student=student, prompt=prompt)
    assert enrollment.privacy_confirmed_level == "named" and enrollment.privacy_confirmed_at is not None

    started = api(client, "post", "/chats", {"prompt_id": prompt.pk})
    assert started.status_code == 201
    assert ChatSession.objects.get(pk=started.json()["id"]).visibility == "named"
    raised.refresh_from_db()
    assert raised.visibility == "pseudonymous", "a chat keeps the level it started under"


@pytest.mark.django_db(transaction=True)
async def test_an_open_websocket_goes_on_at_its_chats_level_after_a_raise(student, session, owner, ollama):
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    await database_sync_to_async(writes.update_prompt)(owner, session.prompt, {"chat_visibility": "named"})
    ollama.script(Reply(content="Still pseudonymous."))
    await ws.send_json_to({"type": "user_message", "content": "Anyone reading?"})
    events = await receive_turn(ws)
    await ws.disconnect()
    assert events[-1]["type"] == "message_done", events[-1]
    await database_sync_to_async(session.refresh_from_db)()
    assert session.visibility == "pseudonymous", "the chat keeps the level the student was told"
    assert "".join(e["text"] for e in events if e["type"] == "token") == "Still pseudonymous."


def test_the_api_confirms_the_level_read_and_refuses_an_older_one(client_for, raised, student):
    client = client_for(student)
    prompt = raised.prompt
    notice = api(client, "get", f"/prompts/{prompt.pk}/privacy").json()
    assert notice["change"] == {"before": "pseudonymous", "now": "named"}
    stale = api(client, "post", f"/prompts/{prompt.pk}/privacy/confirm", {"level": "pseudonymous"})
    assert stale.status_code == 409 and "changed while you were reading" in stale.json()["detail"]
    confirmed = api(client, "post", f"/prompts/{prompt.pk}/privacy/confirm", {"level": "named"})
    assert confirmed.status_code == 200
    assert confirmed.json()["change"] is None and confirmed.json()["confirmed_level"] == "named"
    assert api(client, "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201


def test_lowering_asks_nobody_and_a_raise_after_it_asks_again(client_for, session, student, owner):
    client = client_for(student)
    prompt = session.prompt
    Enrollment.objects.filter(student=student).update(privacy_confirmed_level="named", privacy_accepted_level="named")
    writes.update_prompt(owner, prompt, {"chat_visibility": "named"})
    assert api(client, "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201, "confirmed already"
    writes.update_prompt(owner, prompt, {"chat_visibility": "none"})
    assert api(client, "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201, "lowering needs nothing"
    # Every chat page has told them "none" since: back to "pseudonymous" is a raise again.
    writes.update_prompt(owner, prompt, {"chat_visibility": "pseudonymous"})
    refused = api(client, "post", "/chats", {"prompt_id": prompt.pk})
    assert refused.status_code == 403 and refused.json()["code"] == "privacy_unconfirmed"
    assert Enrollment.objects.get(student=student).privacy_confirmed_level == "named", "the record is kept"


def test_a_raise_and_a_lowering_back_before_the_student_came_asks_nothing(client_for, session, student, owner):
    prompt = session.prompt
    writes.update_prompt(owner, prompt, {"chat_visibility": "named"})
    writes.update_prompt(owner, prompt, {"chat_visibility": "pseudonymous"})
    assert api(client_for(student), "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201


def test_teachers_are_never_asked_and_confirm_nothing(client_for, raised, owner):
    client = client_for(owner)
    prompt = raised.prompt
    assert api(client, "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201
    page = client.get(f"/prompts/{prompt.pk}/chat/new/").content.decode()
    assert 'data-testid="privacy-change"' not in page
    refused = api(client, "post", f"/prompts/{prompt.pk}/privacy/confirm", {"level": "named"})
    assert refused.status_code == 403
    assert client.post(f"/prompts/{prompt.pk}/privacy/acknowledge/", {"level": "named"}).status_code == 403


def test_a_student_who_joined_after_the_raise_is_not_asked_again(client_for, raised, other_student):
    client = client_for(other_student)
    prompt = raised.prompt
    api(client, "post", "/prompts/join", {"code": prompt.join_code, "privacy_confirmed": True})
    assert api(client, "post", "/chats", {"prompt_id": prompt.pk}).status_code == 201


def test_outsiders_and_removed_students_cannot_acknowledge(client_for, raised, student, other_student):
    prompt = raised.prompt
    outsider = client_for(other_student)
    assert outsider.post(f"/prompts/{prompt.pk}/privacy/acknowledge/", {"level": "named"}).status_code == 404
    Enrollment.objects.filter(student=student).update(status="removed")
    removed = api(client_for(student), "post", f"/prompts/{prompt.pk}/privacy/confirm", {"level": "named"})
    assert removed.status_code == 404
    assert Enrollment.objects.get(student=student).privacy_confirmed_level == ""


def test_the_acknowledgement_goes_back_only_to_this_site(client_for, raised, student):
    prompt = raised.prompt
    away = client_for(student).post(
        f"/prompts/{prompt.pk}/privacy/acknowledge/", {"level": "named", "next": "https://evil.example/"}
    )
    assert away.status_code == 302 and away["Location"] == f"/prompts/{prompt.pk}/chat/"


def test_the_chat_page_in_finnish_tells_what_changed(client_for, raised, student):
    student.language = "fi"
    student.save()
    page = _text(client_for(student).get(f"/prompts/{raised.prompt_id}/chat/{raised.pk}/"))
    assert "Opettajasi on muuttanut sitä, mitä hän näkee keskusteluistasi" in page
    assert "Your teacher has changed" not in page
