"""Open websockets follow the account's session rules (issue 38, item 5): a password changed in one
browser ends every open socket of the account's browser sessions (chat and collection progress) at
its next message or event, as their next page request is signed out. The browser that changed it
has a new session: a socket opened with its cookie as it is now is accepted (its pages reconnect,
static/js/chat.js and collection.js); a copy of its old cookie, or another browser's, opens nothing.
A rotated SECRET_KEY (the old one in SECRET_KEY_FALLBACKS) signs nobody out."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.conf import settings
from django.test import Client
from django.urls import reverse

from chat.models import ChatSession, Message, Prompt
from collections_app.progress import publish
from tests.conftest import PASSWORD
from tests.fake_ollama import Reply
from tests.fixtures_chat import receive_turn
from tests.websockets import EVENT_SECONDS, open_websocket

pytestmark = pytest.mark.django_db(transaction=True)

NEW_PASSWORD = "a-brand-new-staple-2026"
EVENT = {"type": "file_progress", "file_id": 1, "name": "notes.md", "status": "processing", "progress": 50}


def browser(user) -> Client:
    """A browser signed in with the user's password, as on the login page."""
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


async def sockets(client: Client, user, chat_id: int, collection_id: int):
    chat, chat_in, _ = await open_websocket(user, f"/ws/chats/{chat_id}/", client=client)
    progress, progress_in, _ = await open_websocket(user, f"/ws/collections/{collection_id}/", client=client)
    assert chat_in and progress_in
    return chat, progress


async def say(chat, text: str) -> list[dict]:
    await chat.send_json_to({"type": "user_message", "content": text})
    return await receive_turn(chat, timeout=EVENT_SECONDS)


async def closed(socket) -> int:
    """The close code the app sent (it sent nothing else first)."""
    output = await socket.receive_output(timeout=EVENT_SECONDS)
    assert output["type"] == "websocket.close", output
    return output["code"]


@pytest.fixture
def preview(owner):
    """The teacher's own preview chat of a prompt without material (no search: the model answers)."""
    prompt = Prompt.objects.create(owner=owner, name="Preview", system_prompt="Be brief.", curation_enabled=False)
    return ChatSession.objects.create(prompt=prompt, user=owner)


async def test_a_password_change_ends_every_open_socket_and_only_the_changing_browser_opens_new_ones(
    owner, collection, preview, ollama
):
    here, elsewhere = await sync_to_async(browser)(owner), await sync_to_async(browser)(owner)
    stolen = Client()  # a copy of this browser's cookie in someone else's hands, with sockets open
    stolen.cookies[settings.SESSION_COOKIE_NAME] = here.cookies[settings.SESSION_COOKIE_NAME].value
    here_chat, here_progress = await sockets(here, owner, preview.pk, collection.pk)
    other_chat, other_progress = await sockets(elsewhere, owner, preview.pk, collection.pk)
    stolen_chat, stolen_progress = await sockets(stolen, owner, preview.pk, collection.pk)

    form = {"change_password": "1", "old_password": PASSWORD, "new_password1": NEW_PASSWORD,
            "new_password2": NEW_PASSWORD}  # fmt: skip
    changed = await sync_to_async(here.post)(reverse("profile"), form)
    assert changed.status_code == 302, "the password change page accepted the new password"
    # The other browser's next page request is signed out, and so is the copied cookie's; this one's is not.
    assert (await sync_to_async(elsewhere.get)(reverse("profile"))).status_code == 302
    assert (await sync_to_async(stolen.get)(reverse("profile"))).status_code == 302
    assert (await sync_to_async(here.get)(reverse("profile"))).status_code == 200

    # Every open chat socket refuses its next message, stores nothing, runs no model call and closes,
    # this browser's own included: it was opened with the session key the change replaced.
    for chat, text in ((other_chat, "Am I still in?"), (stolen_chat, "Still chatting as you"), (here_chat, "Me?")):
        refused = await say(chat, text)
        assert refused[-1]["type"] == "error" and "signed out" in refused[-1]["detail"], refused
        assert refused[-1]["signed_out"] is True  # the page tries once more with its cookie now
        assert await closed(chat) == 4403
        assert not await database_sync_to_async(Message.objects.filter(content=text).exists)()
    assert not ollama.chat_requests()

    # The next progress event closes every open progress socket instead of reaching it.
    await sync_to_async(publish)(collection.pk, EVENT)
    for progress in (here_progress, other_progress, stolen_progress):
        assert await closed(progress) == 4403

    # New sockets: refused with the other browser's cookie and with the copied one ...
    for client in (elsewhere, stolen):
        for path in (f"/ws/chats/{preview.pk}/", f"/ws/collections/{collection.pk}/"):
            _, opened, code = await open_websocket(owner, path, client=client)
            assert not opened and code == 4403, path
    # ... accepted with this browser's cookie as it is now: the page's question, sent again, is answered.
    here_chat, here_progress = await sockets(here, owner, preview.pk, collection.pk)
    ollama.script(Reply(content="Still here."))
    answered = await say(here_chat, "Me?")
    assert answered[-1]["type"] == "message_done", answered
    assert await database_sync_to_async(Message.objects.filter(content="Me?").count)() == 1
    await sync_to_async(publish)(collection.pk, EVENT)
    assert json.loads(await here_progress.receive_from(timeout=EVENT_SECONDS))["progress"] == 50

    for socket in (here_chat, here_progress, other_chat, other_progress, stolen_chat, stolen_progress):
        await socket.disconnect()


async def test_a_rotated_secret_key_keeps_open_sockets(owner, collection, preview, ollama, settings):
    client = await sync_to_async(browser)(owner)
    chat, progress = await sockets(client, owner, preview.pk, collection.pk)
    settings.SECRET_KEY_FALLBACKS = [settings.SECRET_KEY]
    settings.SECRET_KEY = "a-rotated-secret-key-of-enough-length-" + "x" * 20

    await sync_to_async(publish)(collection.pk, EVENT)
    assert json.loads(await progress.receive_from(timeout=EVENT_SECONDS))["status"] == "processing"
    ollama.script(Reply(content="Still here."))
    assert (await say(chat, "After the rotation?"))[-1]["type"] == "message_done"
    # Once the old key is dropped from the fallbacks, the session it signed signs nobody in.
    settings.SECRET_KEY_FALLBACKS = []
    await sync_to_async(publish)(collection.pk, EVENT)
    assert await closed(progress) == 4403
    await chat.disconnect()
    await progress.disconnect()
