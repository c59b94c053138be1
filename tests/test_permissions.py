"""Who may see and change collections and prompts, through pages and the API alike.

The cast: the owner, a co-owner, another teacher, an enrolled student, another student and an
anonymous visitor.
"""

from __future__ import annotations

import json

import pytest

from chat.models import Prompt
from collections_app.models import Collection

CAST = ["owner", "co_owner", "other_teacher", "student", "other_student", "anonymous"]


@pytest.fixture
def as_(request, client_for, owner, co_owner, other_teacher, student, other_student, prompt):
    """A client logged in as one member of the cast (the prompt links student and collection)."""

    def make(who: str):
        user = None if who == "anonymous" else request.getfixturevalue(who)
        return client_for(user)

    return make


COLLECTION_PAGE = {"owner": 200, "co_owner": 200, "other_teacher": 404, "student": 403, "other_student": 404}


@pytest.mark.parametrize("who", CAST)
def test_collection_page_is_for_owners_only(as_, who, collection):
    response = as_(who).get(f"/collections/{collection.id}/")
    if who == "anonymous":
        assert response.status_code == 302 and "/login/" in response["Location"]
    else:
        assert response.status_code == COLLECTION_PAGE[who]


COLLECTION_API = {
    "owner": 200,
    "co_owner": 200,
    "other_teacher": 404,
    "student": 403,
    "other_student": 404,
    "anonymous": 401,
}


@pytest.mark.parametrize("who", CAST)
def test_collection_api_read_is_for_owners_only(as_, who, collection):
    assert as_(who).get(f"/api/v1/collections/{collection.id}").status_code == COLLECTION_API[who]


@pytest.mark.parametrize("who", CAST)
def test_collection_api_change_is_for_owners_only(as_, who, collection):
    response = as_(who).patch(
        f"/api/v1/collections/{collection.id}", json.dumps({"name": "Renamed"}), content_type="application/json"
    )
    assert response.status_code == COLLECTION_API[who]
    collection.refresh_from_db()
    assert (collection.name == "Renamed") == (who in ("owner", "co_owner"))


@pytest.mark.parametrize("who", CAST)
def test_only_owners_can_delete_a_collection(as_, who, collection):
    response = as_(who).delete(f"/api/v1/collections/{collection.id}")
    deleted = not Collection.objects.filter(pk=collection.pk).exists()
    assert deleted == (who in ("owner", "co_owner"))
    assert response.status_code == (204 if deleted else COLLECTION_API[who])


@pytest.mark.parametrize("who", CAST)
def test_collection_lists_show_only_own_collections(as_, who, collection):
    response = as_(who).get("/api/v1/collections")
    if who in ("owner", "co_owner"):
        assert [c["name"] for c in response.json()] == ["Statistics 101"]
    elif who == "other_teacher":
        assert response.json() == []
    else:
        assert response.status_code == {"anonymous": 401}.get(who, 403)


PROMPT_PAGE = {"owner": 200, "co_owner": 404, "other_teacher": 404, "student": 403, "other_student": 404}


@pytest.mark.parametrize("who", CAST)
def test_prompt_settings_are_for_its_teacher_only(as_, who, prompt):
    page = as_(who).get(f"/prompts/{prompt.id}/")
    api = as_(who).get(f"/api/v1/prompts/{prompt.id}")
    if who == "anonymous":
        assert page.status_code == 302 and api.status_code == 401
    else:
        assert page.status_code == PROMPT_PAGE[who]
        assert api.status_code == PROMPT_PAGE[who]
    if who == "owner":
        assert prompt.join_code in page.content.decode()
    else:
        assert prompt.system_prompt not in api.content.decode()


@pytest.mark.parametrize("who", CAST)
def test_only_the_teacher_can_change_a_prompt(as_, who, prompt):
    as_(who).patch(
        f"/api/v1/prompts/{prompt.id}", json.dumps({"system_prompt": "Leak!"}), content_type="application/json"
    )
    prompt.refresh_from_db()
    assert (prompt.system_prompt == "Leak!") == (who == "owner")


def test_teacher_cannot_connect_someone_elses_collection(client_for, other_teacher, collection):
    response = client_for(other_teacher).post(
        "/api/v1/prompts",
        json.dumps({"name": "Sneaky", "collection_ids": [collection.id]}),
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "aren't yours" in response.json()["detail"]
    assert not Prompt.objects.filter(name="Sneaky").exists()


@pytest.mark.parametrize("who", ["student", "other_student", "anonymous"])
def test_students_and_visitors_cannot_create_collections(as_, who):
    response = as_(who).post("/api/v1/collections", json.dumps({"name": "Mine"}), content_type="application/json")
    assert response.status_code in (401, 403)
    assert not Collection.objects.filter(name="Mine").exists()
    page = as_(who).get("/collections/new/")
    assert page.status_code in (302, 403)


def test_student_home_lists_only_joined_prompts(client_for, student, other_student, prompt):
    assert prompt.name in client_for(student).get("/").content.decode()
    assert prompt.name not in client_for(other_student).get("/").content.decode()


def test_switched_off_prompt_says_so_on_the_student_home(client_for, student, prompt):
    prompt.active = False
    prompt.save()
    page = client_for(student).get("/").content.decode()
    assert prompt.name in page and "switched off by its teacher; your chats stay readable" in page


def test_teacher_home_shows_collections_and_prompts_with_counts(client_for, owner, prompt, collection):
    page = client_for(owner).get("/").content.decode()
    assert collection.name in page and prompt.name in page and prompt.join_code in page


def test_prompt_form_refuses_a_model_the_server_lacks(client_for, owner, ollama):
    response = client_for(owner).post(
        "/prompts/new/", {"name": "Typo", "chat_model": "qwen3:8x", "curation_enabled": "on", "active": "on"}
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "has no model “qwen3:8x”" in body and "qwen3:8b" in body
    assert not Prompt.objects.filter(name="Typo").exists()
