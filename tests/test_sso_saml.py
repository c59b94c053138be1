"""Campus sign-in with SAML 2.0 against a real IdP (pysaml2's, on loopback: tests/saml_idp.py): the
SP's metadata at its stable URL, first sign-ins from HAKA-style attributes, roles read again at
every sign-in, and every unsigned, tampered, expired, misaddressed or replayed assertion refused
with a sentence and nothing made."""

from __future__ import annotations

import html
import re

import pytest
from django.test import Client

from accounts.models import Role, User
from chat.models import Enrollment, Prompt
from sso.models import Protocol, SsoIdentity
from sso.saml import forget_config
from tests.saml_idp import IdentityProvider, person
from tests.websockets import EVENT_SECONDS


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    provider = IdentityProvider(tmp_path_factory.mktemp("idp")).start()
    yield provider
    provider.stop()


@pytest.fixture
def saml(idp, settings, db):
    for name, value in idp.settings().items():
        setattr(settings, name, value)
    settings.OIDC_ISSUER = ""
    forget_config()
    idp.set_accounts(
        ("tuomas", person("tuomas", "faculty")),
        ("siiri", person("siiri", "student", preferredLanguage=["sv"])),
    )
    idp.trust(Client())
    yield idp
    forget_config()


def continue_url(response) -> str:
    """Where the page a join through the university shows moves on to (a meta refresh)."""
    assert response.status_code == 200 and 'data-testid="sso-continue"' in response.content.decode()
    return html.unescape(re.search(r'url=([^"]+)"', response.content.decode()).group(1))  # type: ignore[union-attr]


def identity_user(login: str) -> User:
    return SsoIdentity.objects.select_related("user").get(subject=f"{login}@uni.example").user


def assert_refused(response, words: str) -> None:
    assert response.status_code == 403, response.content[:400]
    html = response.content.decode()
    assert 'data-testid="sso-refused"' in html and words in html, html[:1500]


def test_the_sp_metadata_is_served_at_its_stable_url(saml):
    response = Client().get("/sso/saml/metadata/")
    xml = response.content.decode()
    assert response["Content-Type"] == "application/samlmetadata+xml"
    assert 'entityID="http://testserver/sso/saml/metadata/"' in xml
    assert 'Location="http://testserver/sso/saml/acs/"' in xml
    assert 'WantAssertionsSigned="true"' in xml and "X509Certificate" in xml


def test_without_saml_settings_its_routes_are_not_there(db, settings):
    settings.SAML_IDP_METADATA = ""
    for path in ("/sso/saml/metadata/", "/sso/saml/start/"):
        assert Client().get(path).status_code == 404
    assert Client().post("/sso/saml/acs/", {"SAMLResponse": "x"}).status_code == 404


def test_the_login_page_offers_the_university(saml):
    html = Client().get("/login/").content.decode()
    assert 'data-testid="sso-saml"' in html and "Sign in with Example University" in html


def test_first_sign_in_makes_a_teacher_and_a_student_from_their_attributes(saml):
    client = Client()
    signed = saml.sign_in(client, "tuomas")
    assert signed.response.status_code == 302 and signed.response["Location"] == "/"
    teacher = identity_user("tuomas")
    assert teacher.role == Role.TEACHER and teacher.get_full_name() == "Tuomas Korhonen"
    assert teacher.email == "tuomas@uni.example" and teacher.language == "fi"
    assert not teacher.has_usable_password()
    assert SsoIdentity.objects.get(user=teacher).protocol == Protocol.SAML
    assert client.get("/account/").wsgi_request.user == teacher

    saml.sign_in(Client(), "siiri")
    student = identity_user("siiri")
    assert student.role == Role.STUDENT and student.language == "sv"


def test_the_idp_metadata_may_come_from_a_url_signed_by_the_publisher(saml, settings):
    settings.SAML_IDP_METADATA = saml.entity_id  # served at its entity ID
    settings.SAML_IDP_METADATA_CERT = saml.cert
    forget_config()
    signed = saml.sign_in(Client(), "siiri")
    assert signed.response.status_code == 302 and identity_user("siiri").role == Role.STUDENT


def test_metadata_from_a_url_signed_by_someone_else_is_not_trusted(saml, settings):
    settings.SAML_IDP_METADATA = saml.entity_id
    settings.SAML_IDP_METADATA_CERT = saml.sp_cert  # not the key that signed it
    forget_config()
    response = Client().get("/sso/saml/start/")
    assert response.status_code == 503 and 'data-testid="sso-refused"' in response.content.decode()
    assert not User.objects.exists()


def test_a_changed_affiliation_demotes_at_the_next_sign_in(saml):
    client = Client()
    saml.sign_in(client, "tuomas")
    prompt = Prompt.objects.create(owner=identity_user("tuomas"), name="Mine")
    assert client.get(f"/prompts/{prompt.pk}/").status_code == 200
    saml.set_accounts(("tuomas", person("tuomas", "student")))
    saml.sign_in(Client(), "tuomas")
    assert identity_user("tuomas").role == Role.STUDENT
    assert client.get(f"/prompts/{prompt.pk}/").status_code in (403, 404)  # the old session too


@pytest.mark.django_db(transaction=True)
async def test_a_demotion_at_the_next_sign_in_stops_the_open_websocket(saml, ollama):
    from asgiref.sync import sync_to_async
    from channels.db import database_sync_to_async
    from channels.testing import WebsocketCommunicator
    from django.conf import settings as django_settings

    from chat.models import ChatSession
    from currechat.asgi import application

    client = Client()
    await sync_to_async(saml.sign_in)(client, "tuomas")
    teacher = await database_sync_to_async(identity_user)("tuomas")
    prompt = await database_sync_to_async(Prompt.objects.create)(owner=teacher, name="Preview me")
    preview = await database_sync_to_async(ChatSession.objects.create)(prompt=prompt, user=teacher)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={client.cookies[django_settings.SESSION_COOKIE_NAME].value}"
    headers = [(b"origin", b"http://127.0.0.1"), (b"cookie", cookie.encode())]
    ws = WebsocketCommunicator(application, f"/ws/chats/{preview.pk}/", headers=headers)
    assert (await ws.connect(timeout=EVENT_SECONDS))[0]

    saml.set_accounts(("tuomas", person("tuomas", "student")))
    await sync_to_async(saml.sign_in)(Client(), "tuomas")
    await ws.send_json_to({"type": "user_message", "content": "Still a teacher?"})
    event = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert event["type"] == "error" and event["code"] == "not_allowed"
    assert not ollama.chat_requests()


@pytest.mark.parametrize("mode", ["unsigned", "tamper", "expired", "audience", "recipient"])
def test_a_spoiled_assertion_is_refused_with_a_sentence_and_nothing_is_made(saml, mode):
    saml.spoil_next(mode)
    client = Client()
    signed = saml.sign_in(client, "siiri")
    assert_refused(signed.response, "could not be verified")
    assert not User.objects.exists() and not SsoIdentity.objects.exists()
    assert not client.get("/account/").wsgi_request.user.is_authenticated


def test_a_replayed_assertion_is_refused_in_the_same_and_in_another_browser(saml):
    client = Client()
    signed = saml.sign_in(client, "siiri")
    assert signed.response.status_code == 302
    again = client.post(signed.acs, signed.post)  # this browser now shows Siiri's language, Swedish
    assert_refused(again, "kunde inte verifieras")
    assert_refused(Client().post(signed.acs, signed.post), "could not be verified")
    assert User.objects.count() == 1


def test_an_unsolicited_assertion_is_refused(saml):
    signed = saml.sign_in(Client(), "siiri")
    User.objects.all().delete()
    other = Client()
    other.get("/sso/saml/start/")  # a request of its own, which this answer does not answer
    assert_refused(other.post(signed.acs, signed.post), "could not be verified")
    assert not User.objects.exists()


def test_the_join_link_signs_in_through_the_idp_then_enrolls(saml, owner):
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    client = Client()
    start = continue_url(client.post(f"/join/{prompt.join_code}/", {"sso": "saml", "privacy_confirmed": "1"}))
    assert start.startswith("/sso/saml/start/?next=")
    signed = saml.sign_in(client, "siiri", start=start)
    assert signed.response.status_code == 302 and signed.response["Location"] == f"/join/{prompt.join_code}/"
    landed = client.get(signed.response["Location"])
    assert landed["Location"] == f"/prompts/{prompt.pk}/chat/"
    assert Enrollment.objects.filter(prompt=prompt, student=identity_user("siiri")).exists()


def test_logging_out_ends_the_saml_session_in_currechat(saml):
    client = Client()
    saml.sign_in(client, "siiri")
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"] == "/login/"
    assert not client.get("/account/").wsgi_request.user.is_authenticated
