"""One write path per resource: the pages, the REST API and the admin refuse the same change with
the same sentence, and accept it with the same effect (collections_app.writes, chat.course.writes)."""

from __future__ import annotations

import html
import json

import pytest

from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from collections_app.models import Collection

MISSING_MODEL = "missing-model:1b"


def _collection_page_form(collection: Collection, **changes) -> dict:
    form = {
        "name": collection.name,
        "description": collection.description,
        "language": collection.language,
        "embedding_model": collection.embedding_model,
        "co_owners": [u.username for u in collection.co_owners.all()],  # the page's ticked boxes
    }
    return {**form, **changes}


def _collection_admin_form(collection: Collection, **changes) -> dict:
    form = {**_collection_page_form(collection), "co_owners": [u.pk for u in collection.co_owners.all()]}
    return {**form, "owner": collection.owner.pk, **_no_inline_files(), **changes}


def _no_inline_files() -> dict:
    return {
        "files-TOTAL_FORMS": "0",
        "files-INITIAL_FORMS": "0",
        "files-MIN_NUM_FORMS": "0",
        "files-MAX_NUM_FORMS": "0",
    }


def _prompt_page_form(prompt: Prompt, **changes) -> dict:
    form = {
        "name": prompt.name,
        "description": prompt.description,
        "system_prompt": prompt.system_prompt,
        "chat_model": prompt.chat_model,
        "collections": [c.pk for c in prompt.collections.all()],
        "curation_enabled": "on",
        "active": "on",
    }
    return {**form, **changes}


def _prompt_admin_form(prompt: Prompt, **changes) -> dict:
    inline = {
        "enrollments-TOTAL_FORMS": "0",
        "enrollments-INITIAL_FORMS": "0",
        "enrollments-MIN_NUM_FORMS": "0",
        "enrollments-MAX_NUM_FORMS": "1000",
    }
    admin_only = {
        "owner": prompt.owner.pk,
        "source_policy": prompt.source_policy,
        "chat_visibility": prompt.chat_visibility,
        "tutor_mode": prompt.tutor_mode,
        "example_questions": "[]",
    }
    return {**_prompt_page_form(prompt), **admin_only, **inline, **changes}


def _page_text(response) -> str:
    return html.unescape(response.content.decode())


def test_unknown_embedding_model_is_refused_alike_by_page_api_and_admin(client_for, owner, admin_user, collection):
    sentence = "There is no local embedding model 'no-such-model'"
    page = client_for(owner).post(
        f"/collections/{collection.pk}/", _collection_page_form(collection, embedding_model="local:no-such-model")
    )
    api = client_for(owner).patch(
        f"/api/v1/collections/{collection.pk}",
        {"embedding_model": "local:no-such-model"},
        content_type="application/json",
    )
    admin = client_for(admin_user).post(
        f"/admin/collections_app/collection/{collection.pk}/change/",
        _collection_admin_form(collection, embedding_model="local:no-such-model"),
    )
    assert page.status_code == 200 and sentence in _page_text(page)
    assert api.status_code == 400 and sentence in api.json()["detail"]
    assert admin.status_code == 200 and sentence in _page_text(admin)
    collection.refresh_from_db()
    assert collection.embedding_model != "local:no-such-model"


def test_chat_model_the_server_lacks_is_refused_alike_by_page_api_and_admin(
    client_for, owner, admin_user, prompt, ollama
):
    sentence = f"The model server has no model “{MISSING_MODEL}”."
    page = client_for(owner).post(f"/prompts/{prompt.pk}/", _prompt_page_form(prompt, chat_model=MISSING_MODEL))
    api = client_for(owner).patch(
        f"/api/v1/prompts/{prompt.pk}", {"model": MISSING_MODEL}, content_type="application/json"
    )
    created = client_for(owner).post(
        "/api/v1/prompts", {"name": "New", "model": MISSING_MODEL}, content_type="application/json"
    )
    admin = client_for(admin_user).post(
        f"/admin/chat/prompt/{prompt.pk}/change/", _prompt_admin_form(prompt, chat_model=MISSING_MODEL)
    )
    assert page.status_code == 200 and sentence in _page_text(page)
    assert api.status_code == 400 and sentence in api.json()["detail"]
    assert created.status_code == 400 and sentence in created.json()["detail"]
    assert admin.status_code == 200 and sentence in _page_text(admin)
    prompt.refresh_from_db()
    assert prompt.chat_model != MISSING_MODEL
    assert not Prompt.objects.filter(name="New").exists()


def test_chat_model_on_the_server_is_accepted_by_the_api(client_for, owner, prompt, ollama):
    response = client_for(owner).patch(
        f"/api/v1/prompts/{prompt.pk}", {"model": ollama.models[0]}, content_type="application/json"
    )
    assert response.status_code == 200 and response.json()["model"] == ollama.models[0]


def test_only_the_owner_changes_co_owners_on_page_and_api(client_for, co_owner, other_teacher, collection):
    page = client_for(co_owner).post(
        f"/collections/{collection.pk}/",
        _collection_page_form(collection, co_owners=[co_owner.username, other_teacher.username]),
    )
    api = client_for(co_owner).patch(
        f"/api/v1/collections/{collection.pk}",
        {"co_owners": [co_owner.username, other_teacher.username]},
        content_type="application/json",
    )
    assert page.status_code in (200, 302)
    assert api.status_code == 403 and api.json()["detail"] == "Only the collection's owner can change its co-owners."
    assert set(collection.co_owners.all()) == {co_owner}, "the co-owner's page form could not add a teacher"
    # The rest of a co-owner's change still goes through.
    renamed = client_for(co_owner).post(f"/collections/{collection.pk}/", _collection_page_form(collection, name="X"))
    assert renamed.status_code == 302
    collection.refresh_from_db()
    assert collection.name == "X"


def test_owner_changes_co_owners_on_page_and_api(client_for, owner, co_owner, other_teacher, collection):
    page = client_for(owner).post(
        f"/collections/{collection.pk}/", _collection_page_form(collection, co_owners=[other_teacher.username])
    )
    assert page.status_code == 302
    assert set(collection.co_owners.all()) == {other_teacher}
    api = client_for(owner).patch(
        f"/api/v1/collections/{collection.pk}", {"co_owners": []}, content_type="application/json"
    )
    assert api.status_code == 200 and api.json()["co_owners"] == []


@pytest.mark.parametrize("who", ["student", "deactivated teacher"])
def test_co_owners_must_be_active_teachers_in_api_and_admin(client_for, owner, admin_user, collection, student, who):
    user = student
    if who == "deactivated teacher":
        user = User.objects.create_user("dora-deactivated", password="x", role=Role.TEACHER, is_active=False)
    sentence = f"Only active teachers can own or co-own a collection: {user.username} is not one."
    api = client_for(owner).patch(
        f"/api/v1/collections/{collection.pk}", {"co_owners": [user.username]}, content_type="application/json"
    )
    admin = client_for(admin_user).post(
        f"/admin/collections_app/collection/{collection.pk}/change/",
        _collection_admin_form(collection, co_owners=[user.pk]),
    )
    assert api.status_code == 400 and api.json()["detail"] == sentence
    assert admin.status_code == 200 and sentence in _page_text(admin)
    assert user not in collection.co_owners.all()
    # The page refuses them with the same sentence.
    page = client_for(owner).post(
        f"/collections/{collection.pk}/settings/", _collection_page_form(collection, co_owners_add=user.username)
    )
    assert page.status_code == 200 and sentence in _page_text(page)


def test_blank_names_are_refused_with_a_sentence_by_the_api(client_for, owner, collection, prompt):
    collection_api = client_for(owner).patch(
        f"/api/v1/collections/{collection.pk}", {"name": "   "}, content_type="application/json"
    )
    prompt_api = client_for(owner).post("/api/v1/prompts", {"name": ""}, content_type="application/json")
    assert collection_api.status_code == 400 and collection_api.json()["detail"] == "Give the collection a name."
    assert prompt_api.status_code == 400 and prompt_api.json()["detail"] == "Give the prompt a name."


def test_collections_a_teacher_may_not_use_are_refused_by_page_and_api(
    client_for, other_teacher, owner, collection, prompt
):
    theirs = Prompt.objects.create(owner=other_teacher, name="Otto's")
    api = client_for(other_teacher).patch(
        f"/api/v1/prompts/{theirs.pk}", {"collection_ids": [collection.pk]}, content_type="application/json"
    )
    page = client_for(other_teacher).post(
        f"/prompts/{theirs.pk}/", _prompt_page_form(theirs, collections=[collection.pk])
    )
    assert api.status_code == 400 and "they don't exist or aren't yours" in api.json()["detail"]
    assert page.status_code == 200
    assert not theirs.collections.exists()


def test_admin_creates_a_collection_through_the_write_path(client_for, admin_user, owner, co_owner, ollama):
    form = {
        "name": "  Made in the admin  ",
        "description": "",
        "language": "finnish",
        "embedding_model": "local:all-MiniLM-L6-v2",
        "owner": owner.pk,
        "co_owners": [co_owner.pk, owner.pk],
        **_no_inline_files(),
    }
    # A model that does not know the language, while the server has one that does: refused as on the page.
    refused = client_for(admin_user).post("/admin/collections_app/collection/add/", form)
    assert refused.status_code == 200 and "Choose “ollama:snowflake-arctic-embed2”" in _page_text(refused)
    form["embedding_model"] = "ollama:snowflake-arctic-embed2"
    response = client_for(admin_user).post("/admin/collections_app/collection/add/", form)
    assert response.status_code == 302, _page_text(response)[:3000]
    made = Collection.objects.get(name="Made in the admin")
    assert made.owner == owner and set(made.co_owners.all()) == {co_owner}, "the owner is not their own co-owner"


def test_admin_cannot_enroll_a_prompts_own_teacher(client_for, admin_user, owner, prompt):
    response = client_for(admin_user).post("/admin/chat/enrollment/add/", {"student": owner.pk, "prompt": prompt.pk})
    assert response.status_code == 200
    assert "teachers don't need to join their own prompts" in _page_text(response)
    assert not Enrollment.objects.filter(student=owner).exists()


def test_the_embedding_model_is_chosen_from_the_models_that_exist(client_for, owner, collection, ollama):
    page = client_for(owner).get("/collections/new/").content.decode()
    assert "<select" in page and "local:all-MiniLM-L6-v2 — knows English only" in page
    assert "ollama:snowflake-arctic-embed2 — knows every language" in page, "the model server's embedder is offered"
    assert "qwen3:8b" not in page.split('name="embedding_model"')[1].split("</select>")[0], "chat models are not"


def test_a_student_model_the_server_lacks_is_refused_alike_by_page_api_and_admin(
    client_for, owner, admin_user, prompt, ollama
):
    sentence = f"The model server has no model “{MISSING_MODEL}”."
    page = client_for(owner).post(
        f"/prompts/{prompt.pk}/", _prompt_page_form(prompt, student_models=["qwen3-vl:8b", MISSING_MODEL])
    )
    api = client_for(owner).patch(
        f"/api/v1/prompts/{prompt.pk}", {"student_models": [MISSING_MODEL]}, content_type="application/json"
    )
    created = client_for(owner).post(
        "/api/v1/prompts", {"name": "New", "student_models": [MISSING_MODEL]}, content_type="application/json"
    )
    admin = client_for(admin_user).post(
        f"/admin/chat/prompt/{prompt.pk}/change/",
        _prompt_admin_form(prompt, student_models=f'["{MISSING_MODEL}"]'),
    )
    assert page.status_code == 200 and sentence in _page_text(page)
    assert api.status_code == 400 and sentence in api.json()["detail"]
    assert created.status_code == 400 and sentence in created.json()["detail"]
    assert admin.status_code == 200 and sentence in _page_text(admin)
    prompt.refresh_from_db()
    assert prompt.student_models == []
    assert not Prompt.objects.filter(name="New").exists()


def test_a_student_model_listed_twice_is_refused_alike_by_page_api_and_admin(client_for, owner, admin_user, prompt):
    sentence = "“qwen3-vl:8b” is listed twice; list each model once."
    twice = ["qwen3-vl:8b", "qwen3:8b", "qwen3-vl:8b"]
    page = client_for(owner).post(f"/prompts/{prompt.pk}/", _prompt_page_form(prompt, student_models=twice))
    api = client_for(owner).patch(
        f"/api/v1/prompts/{prompt.pk}", {"student_models": twice}, content_type="application/json"
    )
    admin = client_for(admin_user).post(
        f"/admin/chat/prompt/{prompt.pk}/change/", _prompt_admin_form(prompt, student_models=json.dumps(twice))
    )
    assert page.status_code == 200 and sentence in _page_text(page)
    assert api.status_code == 400 and api.json()["detail"] == sentence
    assert admin.status_code == 200 and sentence in _page_text(admin)
    prompt.refresh_from_db()
    assert prompt.student_models == []


def test_the_prompts_own_model_is_always_a_students_choice(client_for, owner, admin_user, prompt, ollama):
    ollama.models.append("llama3.2:3b")
    client = client_for(owner)
    listed = client.patch(
        f"/api/v1/prompts/{prompt.pk}", {"student_models": ["qwen3-vl:8b"]}, content_type="application/json"
    )
    assert listed.status_code == 200 and listed.json()["student_models"] == ["qwen3:8b", "qwen3-vl:8b"]
    # A new chat model joins the students' choices; the one before stays offered.
    changed = client.patch(f"/api/v1/prompts/{prompt.pk}", {"model": "llama3.2:3b"}, content_type="application/json")
    assert changed.json()["student_models"] == ["llama3.2:3b", "qwen3:8b", "qwen3-vl:8b"]
    # The page: the teacher ticks models; the admin: a JSON list. Both keep the chat model in it.
    page = client.post(
        f"/prompts/{prompt.pk}/", _prompt_page_form(prompt, chat_model="qwen3:8b", student_models=["qwen3-vl:8b"])
    )
    assert page.status_code == 302
    prompt.refresh_from_db()
    assert prompt.student_models == ["qwen3:8b", "qwen3-vl:8b"]
    admin = client_for(admin_user).post(
        f"/admin/chat/prompt/{prompt.pk}/change/", _prompt_admin_form(prompt, student_models='["llama3.2:3b"]')
    )
    assert admin.status_code == 302
    prompt.refresh_from_db()
    assert prompt.student_models == ["qwen3:8b", "llama3.2:3b"]
    # Nothing ticked: students get the chat model only.
    client.post(f"/prompts/{prompt.pk}/", _prompt_page_form(prompt))
    prompt.refresh_from_db()
    assert prompt.student_models == []


def test_a_listed_model_gone_from_the_server_does_not_block_other_changes(client_for, owner, prompt, ollama):
    ollama.models.append("llama3.2:3b")
    client = client_for(owner)
    client.patch(f"/api/v1/prompts/{prompt.pk}", {"student_models": ["llama3.2:3b"]}, content_type="application/json")
    ollama.models.remove("llama3.2:3b")
    renamed = client.post(
        f"/prompts/{prompt.pk}/", _prompt_page_form(prompt, name="Renamed", student_models=["llama3.2:3b"])
    )
    assert renamed.status_code == 302
    prompt.refresh_from_db()
    assert prompt.name == "Renamed" and prompt.student_models == ["qwen3:8b", "llama3.2:3b"]
    # The settings page says which listed model the server lacks, so the teacher can untick it.
    assert "llama3.2:3b (not on the server now)" in _page_text(client.get(f"/prompts/{prompt.pk}/"))


def test_the_students_models_are_ticked_among_the_chat_models_that_exist(client_for, owner, prompt, ollama):
    page = _page_text(client_for(owner).get(f"/prompts/{prompt.pk}/"))
    choices = page.split('id="id_student_models"')[1].split('<small class="help">')[0]
    assert 'value="qwen3:8b"' in choices and 'value="qwen3-vl:8b"' in choices
    assert "snowflake-arctic-embed2" not in choices, "embedding models are not offered for chatting"
