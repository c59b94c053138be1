"""Bad input gets a sentence, never a server error: text with a NUL character (PostgreSQL cannot
store one) or half of a surrogate pair (JSON can write one, UTF-8 cannot), ids beyond any key
(SQLite refuses them even as a lookup's parameter), text longer than its column. The walks take
every route there is (the API's OpenAPI schema, the URL resolver), so a new route is held to this
too. Like every database test, these run again on PostgreSQL in make test's second pass."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from channels.db import database_sync_to_async
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from chat.models import AnswerCheck, BudgetOverride, ChatSession, Enrollment
from currechat.api import api
from tests.fixtures_chat import connect_ws
from tests.websockets import EVENT_SECONDS, open_websocket

BEYOND = 2**70  # no key of any database: SQLite's and PostgreSQL's end at 2**63
NUL = "a\x00b"
BAD_VALUES = {
    "string": [NUL, "y" * 300_000, "a\ud800b"],
    "integer": [BEYOND, -BEYOND],
    "array": [[BEYOND], [NUL]],
    # The first and last moments Python can write, in zones that carry them past its years.
    "date-time": ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-02-30T12:00:00Z", NUL],
    "date": ["0001-01-01", "9999-12-31", "2026-02-30"],
}


def _browser(user) -> Client:
    client = Client(raise_request_exception=False)  # a server error is an answer here, not a crash
    client.force_login(user)
    return client


@pytest.fixture
def chat(prompt, owner):
    return ChatSession.objects.create(prompt=prompt, user=owner)


def _operations(ids: dict[str, int]) -> Iterator[tuple[str, str, dict]]:
    """(method, path with the world's ids, operation) of every API operation."""
    for path, operations in api.get_openapi_schema()["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path":
                    path = path.replace(f"{{{parameter['name']}}}", str(ids.get(parameter["name"], 1)))
            yield method, path, operation


def _schema(schema: dict, definitions: dict) -> dict:
    while "$ref" in schema:
        schema = definitions[schema["$ref"].rsplit("/", 1)[-1]]
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            options = [s for s in schema[key] if s.get("type") != "null"]
            return _schema(options[0], definitions) if options else {}
    return schema


def _plain(schema: dict, definitions: dict) -> Any:
    """A body every field of which has a value of its type (its first choice where it has choices)."""
    schema = _schema(schema, definitions)
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "object":
        return {name: _plain(field, definitions) for name, field in schema.get("properties", {}).items()}
    return {"string": "x", "integer": 1, "number": 1.0, "boolean": False, "array": []}.get(schema.get("type"))


def _fields(schema: dict, definitions: dict, path: tuple = ()) -> Iterator[tuple[tuple, str]]:
    schema = _schema(schema, definitions)
    if schema.get("type") == "object":
        for name, field in schema.get("properties", {}).items():
            yield from _fields(field, definitions, (*path, name))
    elif path:
        yield path, schema.get("format", schema.get("type", ""))


def _with(body: Any, path: tuple, value: Any) -> Any:
    body = copy.deepcopy(body)
    place = body
    for name in path[:-1]:
        place = place[name]
    place[path[-1]] = value
    return body


def test_no_api_operation_answers_bad_ids_or_text_in_its_address_with_a_server_error(owner, collection, chat):
    client, failures = _browser(owner), []
    ids = {"collection_id": collection.pk, "prompt_id": chat.prompt_id, "chat_id": chat.pk}
    for method, path, operation in _operations(ids):
        beyond = re.sub(r"/1(?=/|$)", f"/{BEYOND}", path)  # the ids the world does not pin
        query = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
        # A NUL only where there is a query to hold it: the world's own addresses are left alone.
        for url, value in ((beyond, str(BEYOND)), *([(path, NUL)] if query else [])):
            response = getattr(client, method)(f"{url}?{urlencode(dict.fromkeys(query, value))}")
            if response.status_code >= 500:
                failures.append(f"{method.upper()} {url} with {value!r}")
            elif value == NUL:
                assert response.status_code == 400 and "no text here can contain" in response.json()["detail"]
    assert failures == [], "\n".join(failures)


def test_no_api_operation_answers_a_bad_value_in_its_body_with_a_server_error(owner, collection, chat, ollama):
    schema = api.get_openapi_schema()
    definitions = schema.get("components", {}).get("schemas", {})
    client, failures = _browser(owner), []
    ids = {"collection_id": collection.pk, "prompt_id": chat.prompt_id, "chat_id": chat.pk}
    for method, path, operation in _operations(ids):
        body = operation.get("requestBody", {}).get("content", {}).get("application/json")
        if body is None:
            continue
        plain = _plain(body["schema"], definitions)
        for field, kind in _fields(body["schema"], definitions):
            for value in BAD_VALUES.get(kind, []):
                # In a whole body, and alone (a PATCH checks only what it is sent).
                for sent in (_with(plain, field, value), {field[0]: value} if len(field) == 1 else None):
                    if sent is None:
                        continue
                    response = getattr(client, method)(path, json.dumps(sent), content_type="application/json")
                    if response.status_code >= 500:
                        failures.append(f"{method.upper()} {path} with {'.'.join(field)} = {str(value)[:20]!r}")
                    else:
                        assert response.status_code < 300 or response.json()["detail"], (path, field)
    assert failures == [], "\n".join(failures)


def _pages(resolver: URLResolver, prefix: str = "") -> Iterator[str]:
    for entry in resolver.url_patterns:
        pattern = str(entry.pattern)
        if isinstance(entry, URLResolver) and not pattern.startswith(("admin/", "api/")):
            yield from _pages(entry, prefix + pattern)
        elif isinstance(entry, URLPattern) and not pattern.startswith("^") and "logout" not in pattern:
            yield prefix + pattern


def test_no_page_answers_an_id_beyond_any_key_or_a_nul_with_a_server_error(owner, student, prompt):
    ChatSession.objects.create(prompt=prompt, user=student)
    failures = []
    for user in (owner, student):
        client = _browser(user)
        for page in _pages(get_resolver()):
            beyond = "/" + re.sub(r"<[^>]+>", "x", re.sub(r"<int:[^>]+>", str(BEYOND), page))
            with_nul = "/" + re.sub(r"<[^>]+>", "1", re.sub(r"<(str|slug|path):[^>]+>", "a%00b", page))
            for url, data in ((beyond, {}), (with_nul, {}), ("/" + re.sub(r"<[^>]+>", "1", page), {"q": NUL})):
                for method in ("get", "post"):
                    response = getattr(client, method)(url, data)
                    if response.status_code >= 500:
                        failures.append(f"{user.username}: {method.upper()} {url} {data}")
    assert failures == [], "\n".join(failures)


def test_a_nul_is_refused_at_the_door_with_a_sentence_in_the_readers_language(student, prompt):
    page = _browser(student).get(f"/join/{prompt.join_code}/", {"next": NUL})
    assert page.status_code == 400 and "no text here can contain" in page.content.decode()
    student.language = "fi"
    student.save()
    refused = _browser(student).post("/api/v1/prompts/join", {"code": NUL}, content_type="application/json")
    assert refused.status_code == 400 and refused.json()["code"] == "bad_request"
    assert "NUL" in refused.json()["detail"] and "Poista" in refused.json()["detail"]


def test_json_nested_deeper_than_it_can_be_read_is_refused_as_unreadable_even_with_a_nul(owner):
    deep = "[" * 100_000 + '"\\u0000"' + "]" * 100_000
    refused = _browser(owner).post("/api/v1/collections", deep, content_type="application/json")
    assert refused.status_code == 400 and refused.json()["detail"].startswith("The request's body cannot be read.")
    refused = _browser(owner).post("/api/v1/collections", "name: Stats", content_type="application/json")
    assert refused.status_code == 400 and refused.json()["code"] == "bad_request"


def test_half_a_surrogate_pair_is_refused_and_an_emoji_written_as_a_pair_is_kept(owner):
    client = _browser(owner)
    refused = client.post("/api/v1/collections", json.dumps({"name": "Stats \ud800"}), content_type="application/json")
    assert refused.status_code == 400 and "no text here can contain" in refused.json()["detail"]
    sent = json.dumps({"name": "Stats \U0001f600"})  # written as the pair "\ud83d\ude00"
    made = client.post("/api/v1/collections", sent, content_type="application/json")
    assert made.status_code == 201 and made.json()["name"] == "Stats \U0001f600"


@pytest.mark.django_db(transaction=True)  # the socket's consumer writes from threads of its own
async def test_a_chat_message_no_database_can_store_is_refused_and_nothing_is_stored(student, session):
    ws, _, _ = await connect_ws(student, session.id)
    await ws.send_json_to({"type": "user_message", "content": "What is a mean?\x00"})
    event = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.send_to(text_data='{"type": "user_message", "content": "What is a mean?\\ud800"}')
    half_a_pair = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.send_to(text_data="What is a mean?")  # not JSON
    not_json = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert event["type"] == "error" and "no text here can contain" in event["detail"]
    assert half_a_pair["type"] == "error" and "no text here can contain" in half_a_pair["detail"]
    assert not_json["type"] == "error" and not_json["detail"].startswith("Send {'type': 'user_message'")

    def sent_as_a_form():
        return _browser(student).post(f"/api/v1/chats/{session.id}/messages", {"content": NUL})

    form = await database_sync_to_async(sent_as_a_form)()
    assert form.status_code == 400 and "no text here can contain" in form.json()["detail"]
    assert not await database_sync_to_async(session.messages.exists)()


def test_the_answer_checks_page_answers_a_malformed_id_with_a_sentence(owner, prompt):
    AnswerCheck.objects.create(prompt=prompt, question="What is a mean?", expect={})
    client, url = _browser(owner), f"/prompts/{prompt.pk}/answer-checks/"
    for data in ({"action": "start", "kind": "gap", "key": "first"}, {"action": "delete", "check_id": "first"}):
        response = client.post(url, data)
        assert response.status_code in (200, 302, 404), data
    assert AnswerCheck.objects.filter(prompt=prompt).count() == 1


def test_a_budget_beyond_what_the_database_holds_is_refused_naming_the_field(owner, student, prompt):
    number = Enrollment.objects.get(prompt=prompt, student=student).number
    client = _browser(owner)
    refused = client.post(
        f"/api/v1/prompts/{prompt.pk}/students/{number}/budget",
        {"weekly_token_budget": BEYOND},
        content_type="application/json",
    )
    assert refused.status_code == 400 and refused.json()["field"] == "weekly_token_budget"
    assert refused.json()["detail"].startswith("Weekly token budget: Ensure this value is less than or equal to")
    page = client.post(f"/prompts/{prompt.pk}/students/{number}/budget/", {"weekly_token_budget": str(BEYOND)})
    assert page.status_code == 302 and not BudgetOverride.objects.exists()
    refused = client.patch(f"/api/v1/prompts/{prompt.pk}", {"retention_days": BEYOND}, content_type="application/json")
    assert refused.status_code == 400 and refused.json()["field"] == "retention_days"


def test_text_longer_than_its_column_is_refused_naming_the_field_and_nothing_changes(owner, collection):
    before = collection.embedding_model
    refused = _browser(owner).patch(
        f"/api/v1/collections/{collection.pk}", {"embedding_model": "m" * 201}, content_type="application/json"
    )
    assert refused.status_code == 400 and refused.json()["field"] == "embedding_model"
    assert "at most 200 characters (it has 201)" in refused.json()["detail"]
    collection.refresh_from_db()
    assert collection.embedding_model == before


def test_ids_beyond_any_key_in_a_list_find_nothing(owner, prompt, collection):
    refused = _browser(owner).patch(
        f"/api/v1/prompts/{prompt.pk}", {"collection_ids": [collection.pk, BEYOND]}, content_type="application/json"
    )
    assert refused.status_code == 400 and refused.json()["field"] == "collections"
    assert "cannot connect collection(s)" in refused.json()["detail"]


@pytest.mark.django_db(transaction=True)
async def test_a_socket_to_an_id_beyond_any_key_is_refused_as_not_allowed(owner):
    for path in (f"/ws/chats/{BEYOND}/", f"/ws/collections/{BEYOND}/"):
        _, connected, code = await open_websocket(owner, path)
        assert (connected, code) == (False, 4403), path
