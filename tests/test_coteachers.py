"""Co-teachers without the admin (issue 29, item 1): a teacher finds a colleague by the start of a
username or address (never a list of every teacher), adds them by username or address on the
collection and prompt pages, and removes them by unticking; only the owner changes them, and a
teacher just removed loses access at once."""

from __future__ import annotations

import html

import pytest

from accounts.models import Role, User
from chat.models import Prompt
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def lookup(client, q: str):
    return client.get("/api/v1/teachers", {"q": q})


def found(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [t["username"] for t in response.json()]


@pytest.fixture
def colleagues(db):
    """Teachers and others whose username or address begins with "mari"."""
    made = {
        "maria": User.objects.create_user(
            "maria-virtanen",
            password=PASSWORD,
            role=Role.TEACHER,
            email="maria.virtanen@uni.example",
            first_name="Maria",
        ),
        "marianne": User.objects.create_user(
            "mk", password=PASSWORD, role=Role.TEACHER, email="marianne.k@uni.example"
        ),
        "student": User.objects.create_user("mari-student", password=PASSWORD, role=Role.STUDENT),
        "gone": User.objects.create_user("mari-gone", password=PASSWORD, role=Role.TEACHER, is_active=False),
    }
    return made


# --- the look-up ----------------------------------------------------------------------------------------


def test_a_teacher_finds_active_teachers_by_the_start_of_a_username_or_address(client_for, owner, colleagues):
    names = found(lookup(client_for(owner), "MARI"))
    assert names == ["maria-virtanen", "mk"], "teachers only, active only, by username or address"
    shown = lookup(client_for(owner), "mari").json()
    assert shown[0]["name"] == "Maria" and all(t["email"] is None for t in shown), "a beginning shows no address"


def test_an_address_typed_in_full_comes_first_with_the_address(client_for, owner, colleagues):
    shown = lookup(client_for(owner), "Marianne.K@uni.example").json()
    assert [(t["username"], t["email"]) for t in shown] == [("mk", "marianne.k@uni.example")]


def test_the_look_up_never_lists_every_teacher(client_for, owner, db):
    for n in range(8):
        User.objects.create_user(f"teacher-{n}", password=PASSWORD, role=Role.TEACHER)
    client = client_for(owner)
    assert len(found(lookup(client, "teacher-"))) == 5, "at most a few"
    assert found(lookup(client, "___")) == [] and found(lookup(client, "%%%")) == [], "no wildcards"
    short = lookup(client, "te")
    assert short.status_code == 400
    assert short.json()["detail"] == "Type at least 3 characters of a username or an email address."
    assert found(lookup(client, "olga-owner")) == [], "never the one asking"


def test_only_teachers_look_up_teachers(client_for, student, colleagues):
    assert lookup(client_for(student), "maria").status_code == 403
    assert lookup(client_for(None), "maria").status_code == 401


def test_look_ups_are_rate_limited_per_teacher(client_for, owner, other_teacher, colleagues, settings):
    settings.RATE_TEACHER_LOOKUP = (2, 60)
    client = client_for(owner)
    assert found(lookup(client, "mari")) and found(lookup(client, "maria"))
    refused = lookup(client, "marian")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Try again in" in refused.json()["detail"]
    assert found(lookup(client_for(other_teacher), "mari")), "each teacher has an allowance of their own"


# --- the collection's settings page -------------------------------------------------------------------


def settings_form(collection, **changes) -> dict:
    form = {
        "name": collection.name,
        "description": collection.description,
        "language": collection.language,
        "embedding_model": collection.embedding_model,
        "co_owners": [u.username for u in collection.co_owners.all()],  # the ticked boxes
    }
    return {**form, **changes}


def page_text(response) -> str:
    return html.unescape(response.content.decode())


def test_the_settings_page_shows_the_co_owners_and_no_list_of_teachers(
    client_for, owner, co_owner, collection, colleagues
):
    page = client_for(owner).get(f"/collections/{collection.pk}/settings/").content.decode()
    assert f'name="co_owners" value="{co_owner.username}" checked' in page
    assert 'name="co_owners_add"' in page and "/api/v1/teachers" in page and "js/teacher_picker.js" in page
    for name in ("maria-virtanen", "mk", "otto-teacher"):
        assert name not in page, "other teachers are found by typing, not listed"


def test_the_owner_adds_by_username_and_by_address(client_for, owner, co_owner, collection, colleagues):
    url = f"/collections/{collection.pk}/settings/"
    response = client_for(owner).post(url, settings_form(collection, co_owners_add="mk, Maria.Virtanen@uni.example"))
    assert response.status_code == 302
    assert set(collection.co_owners.values_list("username", flat=True)) == {co_owner.username, "mk", "maria-virtanen"}


def test_the_owner_removes_by_unticking_and_the_removed_teacher_loses_access_at_once(
    client_for, owner, co_owner, collection
):
    former = client_for(co_owner)
    assert former.get(f"/collections/{collection.pk}/").status_code == 200
    response = client_for(owner).post(
        f"/collections/{collection.pk}/settings/", settings_form(collection, co_owners=[])
    )
    assert response.status_code == 302 and not collection.co_owners.exists()
    assert former.get(f"/collections/{collection.pk}/").status_code == 404
    assert former.get(f"/collections/{collection.pk}/settings/").status_code == 404
    assert former.get(f"/api/v1/collections/{collection.pk}").status_code == 404
    assert former.get("/api/v1/collections").json() == []


def test_an_address_nobody_has_is_refused_and_offered_for_an_invitation(client_for, owner, co_owner, collection):
    response = client_for(owner).post(
        f"/collections/{collection.pk}/settings/", settings_form(collection, co_owners_add="new.person@uni.example")
    )
    text = page_text(response)
    assert response.status_code == 200
    assert "Nobody has an account with the address new.person@uni.example yet." in text
    assert 'id="invite-email" name="email" value="new.person@uni.example"' in text, "offered for an invitation"
    assert set(collection.co_owners.all()) == {co_owner}, "nothing changed"


def test_an_unknown_username_stays_in_the_box_to_be_mended(client_for, owner, collection):
    response = client_for(owner).post(
        f"/collections/{collection.pk}/settings/", settings_form(collection, co_owners_add="mraia")
    )
    text = page_text(response)
    assert "No such user: mraia." in text and 'name="co_owners_add" value="mraia"' in text


def test_a_co_owner_sees_who_co_owns_but_cannot_change_it(client_for, owner, co_owner, other_teacher, collection):
    client = client_for(co_owner)
    page = page_text(client.get(f"/collections/{collection.pk}/settings/"))
    assert "Only the collection's owner can change its co-owners." in page
    assert 'name="co_owners_add"' not in page and 'data-testid="invitations"' not in page
    response = client.post(
        f"/collections/{collection.pk}/settings/",
        settings_form(collection, co_owners=[], co_owners_add=other_teacher.username, name="Renamed"),
    )
    assert response.status_code == 302, "the rest of a co-owner's change goes through"
    assert set(collection.co_owners.all()) == {co_owner}
    collection.refresh_from_db()
    assert collection.name == "Renamed"


@pytest.mark.parametrize(("who", "status"), [("other_teacher", 404), ("student", 403), (None, 302)])
def test_outsiders_cannot_open_or_change_the_co_owners(request, client_for, collection, prompt, co_owner, who, status):
    user = request.getfixturevalue(who) if who else None
    client = client_for(user)
    url = f"/collections/{collection.pk}/settings/"
    assert client.get(url).status_code == status
    assert client.post(url, settings_form(collection, co_owners=[], co_owners_add="olga-owner")).status_code == status
    assert set(collection.co_owners.all()) == {co_owner}


# --- the prompt's page ------------------------------------------------------------------------------------


def prompt_form(prompt: Prompt, **changes) -> dict:
    form = {
        "name": prompt.name,
        "system_prompt": prompt.system_prompt,
        "chat_model": prompt.chat_model,
        "collections": [c.pk for c in prompt.collections.all()],
        "active": "on",
        "co_teachers": [u.username for u in prompt.co_teachers.all()],
    }
    return {**form, **changes}


def test_the_prompt_owner_adds_a_co_teacher_by_address_who_then_edits(client_for, owner, prompt, colleagues):
    response = client_for(owner).post(
        f"/prompts/{prompt.pk}/", prompt_form(prompt, co_teachers_add="maria.virtanen@uni.example")
    )
    assert response.status_code == 302
    assert list(prompt.co_teachers.values_list("username", flat=True)) == ["maria-virtanen"]
    co = client_for(colleagues["maria"])
    page = page_text(co.get(f"/prompts/{prompt.pk}/"))
    assert "Only the prompt's owner changes its co-teachers." in page and 'name="co_teachers_add"' not in page
    co.post(f"/prompts/{prompt.pk}/", prompt_form(prompt, co_teachers=[], co_teachers_add="mk"))
    assert list(prompt.co_teachers.values_list("username", flat=True)) == ["maria-virtanen"], "only the owner"


def test_a_co_teacher_unticked_by_the_owner_loses_the_prompt_at_once(client_for, owner, prompt, colleagues):
    maria = colleagues["maria"]
    prompt.co_teachers.add(maria)
    co = client_for(maria)
    assert co.get(f"/prompts/{prompt.pk}/").status_code == 200
    assert client_for(owner).post(f"/prompts/{prompt.pk}/", prompt_form(prompt, co_teachers=[])).status_code == 302
    assert not prompt.co_teachers.exists()
    assert co.get(f"/prompts/{prompt.pk}/").status_code == 404
    assert co.get(f"/api/v1/prompts/{prompt.pk}").status_code == 404


def test_the_new_prompt_page_takes_co_teachers_by_typing(client_for, owner, colleagues):
    client = client_for(owner)
    assert 'name="co_teachers_add"' in client.get("/prompts/new/").content.decode()
    response = client.post("/prompts/new/", {"name": "Kurssi", "chat_model": "qwen3:8b", "co_teachers_add": "mk"})
    assert response.status_code == 302
    made = Prompt.objects.get(name="Kurssi")
    assert list(made.co_teachers.values_list("username", flat=True)) == ["mk"]


def test_the_api_takes_co_owners_by_address_too(client_for, owner, collection, colleagues):
    response = client_for(owner).patch(
        f"/api/v1/collections/{collection.pk}",
        {"co_owners": ["maria.virtanen@uni.example"]},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["co_owners"] == ["maria-virtanen"]
    unknown = client_for(owner).patch(
        f"/api/v1/collections/{collection.pk}", {"co_owners": ["nobody@uni.example"]}, content_type="application/json"
    )
    assert (
        unknown.status_code == 400
        and "Nobody has an account with the address nobody@uni.example" in unknown.json()["detail"]
    )
