"""A colleague without an account co-teaches without an administrator (issue 46, items 2 and 3).

Creating a prompt with an address nobody has shows what to fix at the top, linked to its field, and
offers the invitation right there; ticked, the invitation is mailed (through a real SMTP server on
loopback) when the prompt is saved. The colleague signs up from the mail's link and co-teaches that
one prompt, and nothing else a teacher may: no prompts or collections of their own, no other
teacher's pages. The one invitation writer (accounts.invitations.CoTeaching) serves prompts and
collections alike."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from accounts.models import Role, User
from chat.course.writes import PROMPT_INVITATIONS
from chat.models import Prompt, PromptInvitation
from collections_app.models import Collection, CollectionInvitation
from collections_app.writes import COLLECTION_INVITATIONS
from kernel.errors import Forbidden, NotFound
from tests.test_password_reset_mail import smtp  # noqa: F401 — fixture
from tests.test_sso_oidc import continue_url, identity_user, oidc  # noqa: F401 — fixtures

pytestmark = pytest.mark.django_db
ADDRESS = "kaisa.kollega@uni.example"
SIGN_UP = {
    "username": "kaisa",
    "first_name": "Kaisa",
    "last_name": "Kollega",
    "password1": "a-long-pass-12345",
    "password2": "a-long-pass-12345",
}


def text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", response.content.decode()))


def mailed_link(inbox, address: str = ADDRESS) -> str:
    [mail] = [m for m in inbox.messages if m["To"] == address]
    body = mail.get_body(preferencelist=("plain",)).get_content()
    return re.search(r"http://testserver(/invitations/[^/\s]+/)", body).group(1)


def create_with_unknown_co_teacher(client, **extra):
    form = {"name": "Tilastot", "chat_model": "qwen3:8b", "co_teachers_add": ADDRESS, **extra}
    return client.post("/prompts/new/", form)


# --- the form's refusal, and the action it names --------------------------------------------------------


def test_an_unknown_co_teacher_is_summarised_at_the_top_linked_to_its_field_and_offered_an_invitation(
    client_for, owner
):
    response = create_with_unknown_co_teacher(client_for(owner))
    page = response.content.decode()
    assert response.status_code == 200 and not Prompt.objects.filter(name="Tilastot").exists()
    summary = page.index('data-testid="error-summary"')
    assert summary < page.index('name="name"'), "the summary comes before the form's first field"
    assert 'role="alert" tabindex="-1" data-error-summary' in page, "focusable, and announced"
    assert 'href="#id_co_teachers_add"' in page and 'id="id_co_teachers_add"' in page, "linked to the box"
    assert "Nobody has an account with the address kaisa.kollega@uni.example yet." in text(response)
    assert f'name="co_teachers_invite" value="{ADDRESS}"' in page, "the invitation it names, right there"
    assert "js/form-errors.js" in page
    assert "invitation link below" not in text(response), "no pointer to a section the form has not"


def test_ticking_the_invitation_creates_the_prompt_and_mails_the_link(client_for, owner, smtp):  # noqa: F811
    client = client_for(owner)
    response = create_with_unknown_co_teacher(client, co_teachers_invite=ADDRESS)
    made = Prompt.objects.get(name="Tilastot")
    assert response.status_code == 302 and response["Location"] == f"/prompts/{made.pk}/"
    assert not made.co_teachers.exists(), "not a co-teacher until they accept"
    invitation = PromptInvitation.objects.get()
    assert invitation.prompt == made and invitation.email == ADDRESS
    assert f"An invitation to co-teach was mailed to {ADDRESS}." in text(client.get(response["Location"]))
    [mail] = smtp.messages
    assert mail["To"] == ADDRESS and "invites you to co-teach on CurreChat" in mail["Subject"]
    body = smtp.bodies()[0]
    assert "“Tilastot”" in body and "it gives you no other teacher rights" in body
    assert mailed_link(smtp)


def test_without_a_mail_server_the_owner_is_given_the_link_to_send(client_for, owner, settings):
    settings.EMAIL_HOST = ""
    client = client_for(owner)
    response = create_with_unknown_co_teacher(client, co_teachers_invite=ADDRESS)
    landed = text(client.get(response["Location"]))
    assert f"Send {ADDRESS} this invitation link yourself: http://testserver/invitations/" in landed


def test_every_form_page_summarises_its_errors(client_for, owner, collection):
    """The shared include (templates/includes/form_errors.html) on the other forms too."""
    client = client_for(owner)
    made = client.post("/collections/new/", {"name": "", "language": "english"})
    assert 'data-testid="error-summary"' in made.content.decode() and 'href="#id_name"' in made.content.decode()
    login = Client().post("/login/", {"username": "olga-owner", "password": "wrong"})
    assert 'data-testid="error-summary"' in login.content.decode()


# --- signing up from the mail, and what that gives ------------------------------------------------------------


@pytest.fixture
def guest(client_for, owner, prompt, smtp):  # noqa: F811
    """Kaisa, who signed up from the mailed link to co-teach `prompt`, and her browser."""
    client_for(owner).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS})
    visitor = Client()
    page = text(visitor.get(mailed_link(smtp)))
    assert "The invitation lets you co-teach this one prompt. It gives you no other teacher rights" in page
    response = visitor.post(mailed_link(smtp), SIGN_UP)
    assert response.status_code == 302 and response["Location"] == f"/prompts/{prompt.pk}/"
    return User.objects.get(username="kaisa"), visitor


def test_the_colleague_signs_up_without_an_administrator_and_co_teaches_that_prompt_only(
    guest, owner, prompt, collection
):
    user, browser = guest
    assert user.role == Role.GUEST and user.email == ADDRESS and not user.is_teacher
    assert list(prompt.co_teachers.all()) == [user]
    assert browser.get(f"/prompts/{prompt.pk}/").status_code == 200
    other = Prompt.objects.create(owner=owner, name="Olga's other", system_prompt="x")
    assert browser.get(f"/prompts/{other.pk}/").status_code == 404
    assert browser.get(f"/collections/{collection.pk}/").status_code == 404, "invited to the prompt, not this"
    assert browser.get("/prompts/new/").status_code == 403
    assert browser.get("/collections/new/").status_code == 403
    assert browser.post("/prompts/new/", {"name": "Mine", "chat_model": "qwen3:8b"}).status_code == 403
    assert not Prompt.objects.filter(name="Mine").exists()
    home = browser.get("/")
    assert 'data-testid="guest-prompts"' in home.content.decode() and "Stats helper" in text(home)
    assert "Olga's other" not in text(home) and "/prompts/new/" not in home.content.decode()
    assert browser.get("/api/v1/teachers", {"q": "olga"}).status_code == 403, "no list of the site's teachers"


def test_the_owner_keeps_the_co_teacher_when_saving_and_removing_them_revokes_at_once(guest, client_for, owner, prompt):
    user, browser = guest
    form = {
        "name": prompt.name,
        "system_prompt": prompt.system_prompt,
        "chat_model": prompt.chat_model,
        "collections": [c.pk for c in prompt.collections.all()],
        "active": "on",
        "co_teachers": [user.username],
    }
    owner_client = client_for(owner)
    assert owner_client.post(f"/prompts/{prompt.pk}/", form).status_code == 302
    assert list(prompt.co_teachers.all()) == [user], "a co-teacher by invitation stays where invited"
    assert owner_client.post(f"/prompts/{prompt.pk}/", {**form, "co_teachers": []}).status_code == 302
    assert browser.get(f"/prompts/{prompt.pk}/").status_code == 404, "removed: no access at once"


def test_nobody_else_can_add_a_co_teacher_by_invitation_to_their_own_prompt(guest, client_for, other_teacher):
    user, _browser = guest
    theirs = Prompt.objects.create(owner=other_teacher, name="Otto's", system_prompt="x")
    response = client_for(other_teacher).post(
        f"/prompts/{theirs.pk}/",
        {"name": "Otto's", "system_prompt": "x", "chat_model": theirs.chat_model, "active": "on",
         "co_teachers_add": user.username},
    )  # fmt: skip
    assert "Only active teachers can teach a prompt: kaisa is not one." in text(response)
    assert not theirs.co_teachers.exists()


def test_a_withdrawn_invitation_stops_working_at_once(client_for, owner, prompt, smtp):  # noqa: F811
    client_for(owner).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS})
    link = mailed_link(smtp)
    invitation = PromptInvitation.objects.get()
    client_for(owner).post(f"/prompts/{prompt.pk}/invitations/{invitation.pk}/withdraw/")
    visitor = Client()
    assert visitor.get(link).status_code == 410
    visitor.post(link, SIGN_UP)
    assert not User.objects.filter(username="kaisa").exists() and not prompt.co_teachers.exists()


def test_through_campus_sign_in_a_student_of_the_university_co_teaches_that_one_only(
    oidc,  # noqa: F811
    client_for,
    owner,
    collection,
):
    made = client_for(owner).post(f"/collections/{collection.pk}/invitations/", {"email": "sami@uni.example"})
    path = re.search(r'id="invitation-url" readonly value="http://testserver(/invitations/[^"]+/)"', text(made))[1]
    visitor = Client()
    start = continue_url(visitor.post(path, {"sso": "oidc"}))
    oidc.sign_in(visitor, "sami", start=start)
    landed = visitor.get(path)
    assert landed.status_code == 302 and landed["Location"] == f"/collections/{collection.pk}/"
    sami = identity_user("sami")
    assert sami.role == Role.GUEST and collection.co_owners.filter(pk=sami.pk).exists()
    assert visitor.get("/collections/new/").status_code == 403
    again = Client()  # the next sign-in: the university still calls Sami a student
    oidc.sign_in(again, "sami")
    assert User.objects.get(pk=sami.pk).role == Role.GUEST
    assert again.get(f"/collections/{collection.pk}/").status_code == 200


# --- the one writer, for both kinds ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["prompt", "collection"])
def test_the_one_writer_invites_withdraws_and_accepts_for_both_kinds(kind, owner, co_owner, prompt, collection):
    writer, target, relation = {
        "prompt": (PROMPT_INVITATIONS, prompt, "co_teachers"),
        "collection": (COLLECTION_INVITATIONS, collection, "co_owners"),
    }[kind]
    prompt.co_teachers.add(co_owner)
    with pytest.raises(Forbidden):
        writer.invite(co_owner, target, ADDRESS)  # a co-teacher does not choose the co-teachers
    invitation, _raw = writer.invite(owner, target, ADDRESS)
    other = Collection.objects.create(name="Other", owner=owner) if kind == "prompt" else prompt
    other_writer = COLLECTION_INVITATIONS if kind == "prompt" else PROMPT_INVITATIONS
    with pytest.raises(NotFound):
        other_writer.withdraw(owner, other, invitation.pk)  # an id of the other kind finds nothing
    with pytest.raises(Forbidden):
        writer.accept(invitation, owner)  # the owner has nothing to accept
    newcomer = User.objects.create_user("newcomer", role=Role.GUEST, email=ADDRESS)
    assert writer.accept(invitation, newcomer) == target
    assert getattr(target, relation).filter(pk=newcomer.pk).exists()
    assert type(invitation).objects.get(pk=invitation.pk).used_by == newcomer
    assert {PromptInvitation, CollectionInvitation} >= {type(invitation)}


def test_a_student_account_accepts_only_with_the_invited_address_confirmed(client_for, owner, prompt, student):
    """A forwarded link makes no student a teacher of their course; the person invited, with the
    address proven by a confirmation mail, co-teaches by invitation."""
    made = client_for(owner).post(f"/prompts/{prompt.pk}/invitations/", {"email": ADDRESS})
    path = re.search(r'id="invitation-url" readonly value="http://testserver(/invitations/[^"]+/)"', text(made))[1]
    User.objects.filter(pk=student.pk).update(email=ADDRESS)  # typed on the profile: proves nothing
    refused = client_for(User.objects.get(pk=student.pk)).post(path)
    assert refused.status_code == 403 and not prompt.co_teachers.exists()
    User.objects.filter(pk=student.pk).update(email_confirmed=ADDRESS)  # as accounts/confirmation.py sets it
    accepted = client_for(User.objects.get(pk=student.pk)).post(path)
    assert accepted.status_code == 302 and list(prompt.co_teachers.all()) == [student]
    assert User.objects.get(pk=student.pk).role == Role.GUEST


def test_the_collection_settings_offer_the_same_invitation(client_for, owner, co_owner, collection, smtp):  # noqa: F811
    form = {
        "name": collection.name,
        "description": "",
        "language": collection.language,
        "embedding_model": collection.embedding_model,
        "co_owners": [co_owner.username],
        "co_owners_add": ADDRESS,
    }
    client = client_for(owner)
    refused = client.post(f"/collections/{collection.pk}/settings/", form)
    assert 'href="#id_co_owners_add"' in refused.content.decode()
    assert f'name="co_owners_invite" value="{ADDRESS}"' in refused.content.decode()
    saved = client.post(f"/collections/{collection.pk}/settings/", {**form, "co_owners_invite": ADDRESS})
    assert saved.status_code == 302 and list(collection.co_owners.all()) == [co_owner]
    assert CollectionInvitation.objects.get().email == ADDRESS
    assert "invites you to co-own the material collection “Statistics 101”" in smtp.bodies()[0]
