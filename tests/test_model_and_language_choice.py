"""Choosing models in plain words (issue 29 item 8): the chat model is a choice among the chat
models the servers have; a collection's language that its model for search by meaning does not
know gets the right model offered before the collection exists; students have no API-token section."""

from __future__ import annotations

import json
import re
from html import unescape

from accounts.models import ApiToken, Role, User
from collections_app.models import Collection
from tests.conftest import PASSWORD

MINILM = "local:all-MiniLM-L6-v2"
MULTILINGUAL = "ollama:snowflake-arctic-embed2"  # the test model server's embedder


def _options(page: str, select_id: str) -> list[tuple[str, str, bool]]:
    """The options of a <select>: value, label, selected."""
    select = re.search(rf'<select[^>]*id="{select_id}"[^>]*>(.*?)</select>', page, re.S)
    assert select, f"no select #{select_id}"
    return [
        (value, label.strip(), "selected" in attrs)
        for attrs, value, label in re.findall(r'<option([^>]*value="([^"]*)"[^>]*)>([^<]*)', select.group(1))
    ]


# --- The chat model: a choice among the models the servers serve ---------------------------------


def test_the_chat_model_is_chosen_among_the_servers_chat_models_without_embedders(client_for, owner, ollama):
    ollama.models.append("llama3.2:3b")  # asked of the server, not a fixed list
    page = client_for(owner).get("/prompts/new/").content.decode()
    options = _options(page, "id_chat_model")
    assert [value for value, _, _ in options] == ["qwen3:8b", "qwen3-vl:8b", "llama3.2:3b"]
    assert [value for value, _, selected in options if selected] == ["qwen3:8b"], "the server's default"
    assert "<datalist" not in page and 'name="chat_model" type="text"' not in page, "no free-text box"


def test_a_stored_model_the_server_lacks_stays_chosen_and_saving_keeps_it(client_for, owner, prompt, ollama):
    prompt.chat_model = "llama3.2:3b"  # was on the server when the teacher chose it
    prompt.save(update_fields=["chat_model"])
    client = client_for(owner)
    options = _options(client.get(f"/prompts/{prompt.pk}/").content.decode(), "id_chat_model")
    assert ("llama3.2:3b", "llama3.2:3b (not available now)", True) in options
    saved = client.post(
        f"/prompts/{prompt.pk}/",
        {"name": "Renamed", "system_prompt": prompt.system_prompt, "chat_model": "llama3.2:3b", "active": "on"},
    )
    assert saved.status_code == 302
    prompt.refresh_from_db()
    assert (prompt.name, prompt.chat_model) == ("Renamed", "llama3.2:3b"), "nothing stored is lost"


def test_a_model_no_server_has_is_refused_with_a_sentence(client_for, owner, prompt, ollama):
    page = client_for(owner).post(
        f"/prompts/{prompt.pk}/", {"name": prompt.name, "chat_model": "mistral:7b", "active": "on"}
    )
    text = page.content.decode()
    assert page.status_code == 200 and "The model server has no model “mistral:7b”. Choose one of:" in text
    assert ("mistral:7b", "mistral:7b (not available now)", True) in _options(text, "id_chat_model")
    prompt.refresh_from_db()
    assert prompt.chat_model == "qwen3:8b"


# --- A collection's language and its model for search by meaning ----------------------------------


def _offers(page: str) -> dict:
    found = re.search(r'<script id="language-offers" type="application/json">(.*?)</script>', page, re.S)
    assert found, "the form carries what its script offers"
    return json.loads(found.group(1))


def test_the_form_knows_which_model_to_offer_for_each_language(client_for, owner, ollama):
    page = client_for(owner).get("/collections/new/").content.decode()
    offers = _offers(page)
    assert offers["knows"][MINILM] == ["english"] and offers["knows"][MULTILINGUAL] is None
    assert offers["suggest"]["finnish"] == MULTILINGUAL and offers["suggest"]["russian"] == MULTILINGUAL
    assert "js/language-offer.js" in page
    # The models' names are for the curious: the choice sits behind "Details".
    details = re.search(r'<details class="more field-details">\s*<summary>Details</summary>(.*?)</details>', page, re.S)
    assert details and 'name="embedding_model"' in details.group(1)


def test_without_javascript_a_language_the_model_does_not_know_is_refused_naming_the_model(client_for, owner, ollama):
    client = client_for(owner)
    form = {"name": "Tilastotiede", "description": "", "language": "finnish", "embedding_model": MINILM}
    refused = client.post("/collections/new/", form)
    text = refused.content.decode()
    assert refused.status_code == 200 and not Collection.objects.filter(name="Tilastotiede").exists()
    assert f"does not know Finnish. Choose “{MULTILINGUAL}”" in text
    assert re.search(r'<details class="more field-details" open>', text), "the refused choice is shown open"
    created = client.post("/collections/new/", {**form, "embedding_model": MULTILINGUAL})
    assert created.status_code == 302
    assert Collection.objects.get(name="Tilastotiede").embedding_model == MULTILINGUAL


def test_the_api_takes_the_pair_a_program_sends_and_the_page_then_says_why(client_for, owner, ollama):
    """Programs keep the API they were written for: the fit of language and model is the forms' rule;
    the collection's page then tells its teacher which model to choose."""
    api = client_for(owner)
    chosen = api.post(
        "/api/v1/collections",
        {"name": "Kurssi", "language": "finnish", "embedding_model": MINILM},
        content_type="application/json",
    )
    assert chosen.status_code == 201 and chosen.json()["embedding_model"] == MINILM
    left_out = api.post(
        "/api/v1/collections", {"name": "Kurssi 2", "language": "finnish"}, content_type="application/json"
    )
    assert left_out.status_code == 201 and left_out.json()["embedding_model"] == MINILM, "the site's default"
    page = unescape(client_for(owner).get(f"/collections/{chosen.json()['id']}/").content.decode())
    assert "does not know Finnish" in page and "choose it in the collection's settings" in page


def test_without_a_fitting_model_on_the_server_the_collection_is_made_and_the_page_says_why(client_for, owner, ollama):
    ollama.models = ["qwen3:8b"]  # no model that knows Finnish
    client = client_for(owner)
    form = {"name": "Tilastotiede", "description": "", "language": "finnish", "embedding_model": MINILM}
    assert client.post("/collections/new/", form).status_code == 302
    collection = Collection.objects.get(name="Tilastotiede")
    page = client.get(f"/collections/{collection.pk}/").content.decode()
    assert "does not know Finnish" in page and "Ask your administrator to add a model" in page
    assert _offers(client.get(f"/collections/{collection.pk}/settings/").content.decode())["suggest"]["finnish"] is None


def test_a_stored_pair_that_does_not_fit_stays_editable(client_for, owner, ollama):
    collection = Collection.objects.create(name="Old", language="finnish", embedding_model=MINILM, owner=owner)
    client = client_for(owner)
    page = unescape(client.get(f"/collections/{collection.pk}/").content.decode())
    assert "choose it in the collection's settings" in page  # the warning, in words
    form = {"name": "Old, renamed", "description": "", "language": "finnish", "embedding_model": MINILM}
    assert client.post(f"/collections/{collection.pk}/settings/", form).status_code == 302
    collection.refresh_from_db()
    assert collection.name == "Old, renamed" and collection.embedding_model == MINILM
    # Changing the language is a new pair: refused when the model does not know the new one either.
    changed = client.post(f"/collections/{collection.pk}/settings/", {**form, "language": "swedish"})
    assert changed.status_code == 200 and "does not know Swedish" in changed.content.decode()


# --- API tokens: teachers' programs only ----------------------------------------------------------


def test_students_see_no_token_section_and_cannot_make_one(client_for, owner, student):
    assert 'data-testid="api-tokens"' in client_for(owner).get("/account/").content.decode()
    page = client_for(student).get("/account/").content.decode()
    assert 'data-testid="api-tokens"' not in page and "API tokens" not in page and "Bearer" not in page
    refused = client_for(student).post("/account/", {"name": "mine", "days": "1"})
    assert refused.status_code == 403 and "API tokens are for teachers' programs" in unescape(refused.content.decode())
    assert not ApiToken.objects.filter(user=student).exists()


def test_a_token_an_operator_made_for_a_student_acts_with_a_students_rights_only(client, owner, student, prompt):
    """The API contract: a program may act for a student (`manage.py create_api_token`), joining and
    chatting as the student does, never more."""
    _, raw = ApiToken.issue(student)
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    joined = client.post("/api/v1/prompts/join", {"code": prompt.join_code}, content_type="application/json", **bearer)
    assert joined.status_code == 200, joined.json()
    assert client.get("/api/v1/collections", **bearer).status_code == 403


def test_a_teacher_made_a_student_keeps_no_teachers_rights_through_their_tokens(client, owner, db):
    became_student = User.objects.create_user("tilda", password=PASSWORD, role=Role.TEACHER)
    _, theirs = ApiToken.issue(became_student)
    _, owners = ApiToken.issue(owner)
    assert client.get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {theirs}").status_code == 200
    User.objects.filter(pk=became_student.pk).update(role=Role.STUDENT)
    assert client.get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {theirs}").status_code == 403
    assert client.get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {owners}").status_code == 200
