"""Campus sign-in users by their names (issue 46, item 6): the name and address the university's
provider (npm's oidc-provider on loopback, tests/oidc_op.py) sends are what the header, the roster
and the co-teacher look-up show, never the hashed username ("sso-37cbb14af0c62e33bc41"); a name
changed at the university shows after the next sign-in."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import Role, User
from chat.models import ChatVisibility, Enrollment, Prompt
from collections_app.models import Collection
from sso.config import forget_discovery
from sso.models import SsoIdentity
from tests.oidc_op import OpenIdProvider, account


@pytest.fixture(scope="module")
def provider():
    op = OpenIdProvider().start()
    yield op
    op.stop()


@pytest.fixture
def oidc(provider, settings, db):
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    forget_discovery()
    provider.set_accounts(
        ("tiina", account("tiina", "faculty")),
        ("sami", account("sami", "student")),
        # A directory entry with an address but no name at all.
        ("nn", account("nn", "student", name=None, given_name=None, family_name=None)),
    )
    yield provider
    forget_discovery()


def signed_in(oidc, login: str) -> tuple[Client, User]:
    client = Client()
    assert oidc.sign_in(client, login).response.status_code == 302
    user = SsoIdentity.objects.select_related("user").get(subject=f"{login}-subject-0001").user
    assert user.username.startswith("sso-")
    return client, user


def header(client) -> str:
    page = client.get("/account/").content.decode()
    return page.split('class="who">', 1)[1].split("</span>", 1)[0]


def test_the_header_shows_the_name_the_university_sent_and_a_changed_one_after_the_next_sign_in(oidc):
    client, user = signed_in(oidc, "sami")
    assert header(client).startswith("Sami Virtanen") and "sso-" not in header(client)
    people = dict(oidc.accounts)
    people["sami"]["claims"].update(family_name="Korhonen", name="Sami Korhonen")
    oidc.set_accounts(*people.items())
    client, _user = signed_in(oidc, "sami")
    assert header(client).startswith("Sami Korhonen")


def test_without_a_name_the_header_shows_the_address_the_university_sent(oidc):
    client, _user = signed_in(oidc, "nn")
    assert header(client).startswith("nn@uni.example")


def test_a_colleague_finds_a_campus_teacher_by_name_and_sees_the_name(oidc, client_for, owner):
    _client, tiina = signed_in(oidc, "tiina")
    assert tiina.role == Role.TEACHER
    shown = client_for(owner).get("/api/v1/teachers", {"q": "virt"}).json()
    assert [(t["username"], t["label"]) for t in shown] == [(tiina.username, "Tiina Virtanen")]
    shared = Collection.objects.create(name="Tilastot", language="finnish", owner=tiina)
    shared.co_owners.add(owner)
    assert "owner Tiina Virtanen" in client_for(owner).get(f"/collections/{shared.pk}/").content.decode()


def test_a_named_roster_shows_the_campus_students_name(oidc, client_for, owner):
    _client, sami = signed_in(oidc, "sami")
    prompt = Prompt.objects.create(owner=owner, name="Tilastot", chat_visibility=ChatVisibility.NAMED)
    Enrollment.objects.create(student=sami, prompt=prompt)
    page = client_for(owner).get(f"/prompts/{prompt.pk}/").content.decode()
    assert "Sami Virtanen" in page and sami.username not in page


def test_a_local_user_keeps_their_username_and_a_namesake_is_told_apart(db, owner):
    assert owner.display_name == "olga-owner" and owner.picker_label == "olga-owner"
    named = User.objects.create_user("outi", first_name="Outi", last_name="Opettaja", role=Role.TEACHER)
    assert named.display_name == "Outi Opettaja" and named.picker_label == "Outi Opettaja (outi)"
