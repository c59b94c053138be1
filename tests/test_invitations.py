"""Invitations to co-teach for someone without an account (issue 29, item 1): the owner makes a link
for an address nobody has, sees it pending and may withdraw it; opening it makes a teacher account
when an administrator allows it (TEACHER_INVITATIONS; else a co-teacher by invitation,
tests/test_guest_coteachers.py) or through campus sign-in; a used,
withdrawn or expired link says so, and an invitation reaches nobody but the person who accepts."""

from __future__ import annotations

import html
import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.utils import timezone

from accounts.invitations import hash_token
from accounts.models import Role, User
from chat.models import PromptInvitation
from collections_app.models import Collection, CollectionInvitation
from tests.test_sso_oidc import continue_url, identity_user, oidc  # noqa: F401 — fixtures

pytestmark = pytest.mark.django_db
ADDRESS = "new.teacher@uni.example"
SIGN_UP = {
    "username": "newteacher",
    "first_name": "Nea",
    "last_name": "Opettaja",
    "password1": "a-long-pass-12345",
    "password2": "a-long-pass-12345",
}


def text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def invite(client, collection, address: str = ADDRESS):
    return client.post(f"/collections/{collection.pk}/invitations/", {"email": address})


def link_in(response) -> str:
    """The path of the link the owner was shown (once)."""
    assert response.status_code == 200, response.content[:500]
    match = re.search(r'id="invitation-url" readonly value="http://testserver(/invitations/[^"]+/)"', text(response))
    assert match, "the new link is shown"
    return match.group(1)


@pytest.fixture
def link(client_for, owner, collection) -> str:
    return link_in(invite(client_for(owner), collection))


@pytest.fixture
def allowed(settings):
    settings.TEACHER_INVITATIONS = True


# --- the owner's side ----------------------------------------------------------------------------------


def test_the_owner_makes_a_link_shown_once_and_stored_only_as_a_hash(client_for, owner, collection):
    client = client_for(owner)
    path = link_in(invite(client, collection))
    raw = path.split("/")[2]
    stored = CollectionInvitation.objects.get()
    assert stored.token_hash == hash_token(raw) and raw not in str(vars(stored))
    assert stored.collection == collection and stored.email == ADDRESS
    assert timezone.now() + timedelta(days=13) < stored.expires <= timezone.now() + timedelta(days=14)
    again = text(client.get(f"/collections/{collection.pk}/settings/"))
    assert raw not in again, "never shown again"
    assert f"{ADDRESS}, valid until" in again, "pending invitations are listed"


def test_a_second_link_for_the_same_address_replaces_the_first(client_for, owner, collection):
    first = link_in(invite(client_for(owner), collection))
    second = link_in(invite(client_for(owner), collection))
    assert "withdrawn" in text(Client().get(first)) and Client().get(second).status_code == 200
    assert CollectionInvitation.objects.pending().count() == 1


@pytest.mark.parametrize(
    ("address", "sentence"),
    [
        ("not-an-address", "Enter the person's email address, e.g. name@university.fi."),
        (
            "otto@uni.example",
            "otto@uni.example already has a teacher account: add them as a co-teacher by this address",
        ),
    ],
)
def test_an_address_that_needs_no_invitation_is_refused_with_why(
    client_for, owner, collection, other_teacher, student, address, sentence
):
    User.objects.filter(pk=other_teacher.pk).update(email="Otto@uni.example")
    User.objects.filter(pk=student.pk).update(email="sam@uni.example")
    response = invite(client_for(owner), collection, address)
    assert response.status_code == 400 and sentence in text(response)
    assert not CollectionInvitation.objects.exists()


def test_the_owner_withdraws_and_the_link_says_so(client_for, owner, collection, link):
    invitation = CollectionInvitation.objects.get()
    response = client_for(owner).post(f"/collections/{collection.pk}/invitations/{invitation.pk}/withdraw/")
    assert response.status_code == 302
    assert ADDRESS not in text(client_for(owner).get(f"/collections/{collection.pk}/settings/"))
    page = Client().get(link)
    assert page.status_code == 410
    assert "The teacher who sent this invitation has withdrawn it." in text(page)


@pytest.mark.parametrize(("who", "status"), [("co_owner", 403), ("other_teacher", 404), ("student", 403)])
def test_only_the_owner_invites_and_withdraws(request, client_for, collection, prompt, link, who, status):
    client = client_for(request.getfixturevalue(who))
    invitation = CollectionInvitation.objects.get()
    assert invite(client, collection, "someone.else@uni.example").status_code == status
    withdraw = client.post(f"/collections/{collection.pk}/invitations/{invitation.pk}/withdraw/")
    assert withdraw.status_code == status
    assert CollectionInvitation.objects.pending().count() == 1
    if who == "co_owner":
        assert 'data-testid="invitations"' not in client.get(f"/collections/{collection.pk}/settings/").content.decode()


# --- opening the link -------------------------------------------------------------------------------------


def test_when_passwords_are_for_staff_only_the_page_says_to_ask_the_administrator_and_makes_nothing(link, settings):
    settings.LOCAL_LOGIN = "staff"  # a co-teacher by invitation could not use a password here
    visitor = Client()
    page = text(visitor.get(link))
    assert "invites you to co-own the material collection “Statistics 101”" in page
    assert (
        "On this site only an administrator can make a teacher account. Ask the site's administrator to make one "
        f"for you with the address {ADDRESS}; then log in and open this link again to accept." in page
    )
    assert 'name="password1"' not in page
    visitor.post(link, SIGN_UP)
    assert not User.objects.filter(username="newteacher").exists()
    assert CollectionInvitation.objects.pending().count() == 1


def test_when_allowed_the_person_makes_a_teacher_account_and_co_owns_at_once(allowed, link, collection):
    visitor = Client()
    assert 'name="password1"' in visitor.get(link).content.decode()
    response = visitor.post(link, SIGN_UP)
    assert response.status_code == 302 and response["Location"] == f"/collections/{collection.pk}/"
    made = User.objects.get(username="newteacher")
    assert made.role == Role.TEACHER and made.email == ADDRESS and made.get_full_name() == "Nea Opettaja"
    assert made in collection.co_owners.all()
    assert "You are now a co-owner of the collection “Statistics 101”." in text(visitor.get(response["Location"]))
    invitation = CollectionInvitation.objects.get()
    assert invitation.used_by == made and invitation.used_at is not None


def test_a_used_link_says_so_and_reaches_nobody_else(allowed, link, collection, owner):
    Client().post(link, SIGN_UP)
    other_visitor = Client()
    page = other_visitor.get(link)
    assert page.status_code == 410 and "This invitation has already been used." in text(page)
    other_visitor.post(link, {**SIGN_UP, "username": "someone-else"})
    assert not User.objects.filter(username="someone-else").exists()
    # The new teacher reaches this collection, not the owner's others.
    theirs = Collection.objects.create(name="Olga's other", owner=owner)
    newcomer = Client()
    newcomer.force_login(User.objects.get(username="newteacher"))
    assert newcomer.get(f"/collections/{collection.pk}/").status_code == 200
    assert newcomer.get(f"/collections/{theirs.pk}/").status_code == 404


def test_an_expired_link_says_when_it_expired(allowed, link):
    CollectionInvitation.objects.update(expires=timezone.now() - timedelta(minutes=1))
    visitor = Client()
    page = visitor.get(link)
    assert page.status_code == 410 and "This invitation expired on" in text(page)
    assert "Ask the teacher who sent it for a new one." in text(page)
    visitor.post(link, SIGN_UP)
    assert not User.objects.filter(username="newteacher").exists()


def test_an_unknown_link_says_it_is_not_valid(db):
    page = Client().get("/invitations/not-a-real-token/")
    assert page.status_code == 404 and "This invitation link is not valid." in text(page)


def test_a_signed_in_teacher_accepts_with_one_button(client_for, other_teacher, link, collection):
    client = client_for(other_teacher)
    page = text(client.get(link))
    assert "Accept as otto-teacher" in page and 'name="password1"' not in page
    assert other_teacher not in collection.co_owners.all(), "opening the link changes nothing"
    response = client.post(link)
    assert response.status_code == 302 and other_teacher in collection.co_owners.all()


def test_a_signed_in_student_is_told_why_and_nothing_changes(allowed, client_for, student, link, collection):
    client = client_for(student)
    page = text(client.get(link))
    assert "You are signed in with a student account, which cannot co-teach." in page and "Accept as" not in page
    refused = client.post(link)
    assert refused.status_code == 403 and student not in collection.co_owners.all()
    assert User.objects.get(pk=student.pk).role == Role.STUDENT
    assert CollectionInvitation.objects.pending().count() == 1


def test_a_link_whose_sender_is_no_longer_the_owner_no_longer_works(
    allowed, link, collection, other_teacher, client_for
):
    Collection.objects.filter(pk=collection.pk).update(owner=other_teacher)  # an administrator gave it away
    response = Client().post(link, SIGN_UP)
    assert response.status_code == 403 and "its sender can no longer change who teaches here" in text(response)
    assert not User.objects.filter(username="newteacher").exists(), "no account without the co-ownership"


def test_a_prompt_invitation_makes_a_co_teacher(allowed, client_for, owner, prompt):
    made = client_for(owner).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS})
    path = link_in(made)
    assert PromptInvitation.objects.get().prompt == prompt
    visitor = Client()
    assert "invites you to co-teach “Stats helper”" in text(visitor.get(path))
    response = visitor.post(path, SIGN_UP)
    assert response.status_code == 302 and response["Location"] == f"/prompts/{prompt.pk}/"
    assert list(prompt.co_teachers.values_list("username", flat=True)) == ["newteacher"]
    assert visitor.get(f"/prompts/{prompt.pk}/").status_code == 200


def test_only_the_prompt_owner_invites(client_for, prompt, co_owner, other_teacher, student):
    prompt.co_teachers.add(co_owner)
    assert client_for(co_owner).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS}).status_code == 403
    assert client_for(other_teacher).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS}).status_code == 404
    assert client_for(student).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS}).status_code == 403
    assert not PromptInvitation.objects.exists()
    assert 'data-testid="invitations"' not in client_for(co_owner).get(f"/prompts/{prompt.pk}/").content.decode()


# --- through campus sign-in ---------------------------------------------------------------------------------


def test_with_sso_the_person_signs_in_at_the_university_and_co_owns(oidc, client_for, owner, collection):  # noqa: F811
    path = link_in(invite(client_for(owner), collection, "tiina@uni.example"))
    visitor = Client()
    page = text(visitor.get(path))
    assert "Sign in with Example University and accept" in page
    start = continue_url(visitor.post(path, {"sso": "oidc"}))
    signed = oidc.sign_in(visitor, "tiina", start=start)
    assert signed.response.status_code == 302 and signed.response["Location"] == path
    landed = visitor.get(path)
    assert landed.status_code == 302 and landed["Location"] == f"/collections/{collection.pk}/"
    assert identity_user("tiina") in collection.co_owners.all()


def test_with_sso_a_student_of_the_university_with_another_address_is_told_why(
    oidc,  # noqa: F811
    client_for,
    owner,
    collection,
):
    """A forwarded link makes no student a teacher: Sami's university address is not the invited one."""
    path = link_in(invite(client_for(owner), collection, "someone.else@uni.example"))
    visitor = Client()
    start = continue_url(visitor.post(path, {"sso": "oidc"}))
    oidc.sign_in(visitor, "sami", start=start)
    refused = visitor.get(path)
    assert refused.status_code == 403
    # In Sami's own language (the provider's locale claim): Swedish.
    assert "Ditt konto hos Example University är inte en lärares" in text(refused)
    assert not collection.co_owners.filter(pk=identity_user("sami").pk).exists()
    assert CollectionInvitation.objects.pending().count() == 1, "still there for the right person"


def test_a_sign_in_that_did_not_start_on_the_link_does_not_accept(oidc, client_for, owner, collection):  # noqa: F811
    path = link_in(invite(client_for(owner), collection, "tiina@uni.example"))
    visitor = Client()
    oidc.sign_in(visitor, "tiina")
    page = visitor.get(path)
    assert page.status_code == 200 and "Hyväksy käyttäjänä Tiina Virtanen" in text(page)  # Tiina reads Finnish
    assert not collection.co_owners.filter(pk=identity_user("tiina").pk).exists()


def test_a_superuser_withdraws_in_the_admin_and_staff_cannot(client_for, admin_user, link, collection, db):
    invitation = CollectionInvitation.objects.get()
    action = {"action": "withdraw", "_selected_action": [invitation.pk]}
    staff = User.objects.create_user("stina-staff", password="x", role=Role.TEACHER, is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename="view_collectioninvitation"))
    client_for(staff).post("/admin/collections_app/collectioninvitation/", action)
    assert CollectionInvitation.objects.pending().count() == 1, "the owner's right, not every staff member's"
    client_for(admin_user).post("/admin/collections_app/collectioninvitation/", action)
    assert "has withdrawn it" in text(Client().get(link))
