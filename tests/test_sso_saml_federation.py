"""SAML sign-in with a federation's metadata: two real pysaml2 IdPs (tests/saml_idp.py) in one metadata
file, the university's and another member's. Only the university's IdP signs its people in: the other
member's assertion — with its own name on the Response envelope or the university's forged there —
signs nobody in and makes nothing, and the federation's file is only where keys come from."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.models import Role, User
from sso.models import SsoIdentity
from sso.saml import forget_config
from tests.saml_idp import IdentityProvider, federation_metadata, person

NOT_VERIFIED = "Your sign-in at Example University could not be verified, so you were not signed in."
NOT_SET_UP = "Campus sign-in is not set up completely. Tell your administrator."


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    directory = tmp_path_factory.mktemp("federation")
    university = IdentityProvider(directory, name="university").start()
    other = IdentityProvider(directory, name="other", answers_others_requests=True).start()
    yield university, other, federation_metadata(directory / "federation.xml", university, other)
    university.stop()
    other.stop()


@pytest.fixture
def federation(members, settings, db):
    """CurreChat as the README's example sets it up: the federation's file, the university named."""
    university, other, metadata = members
    for name, value in university.settings().items():
        setattr(settings, name, value)
    settings.SAML_IDP_METADATA = str(metadata)
    settings.SAML_IDP_ENTITY_ID = university.entity_id
    settings.SAML_IDP_ENTITY_IDS = []
    settings.OIDC_ISSUER = ""
    forget_config()
    university.set_accounts(("tuomas", person("tuomas", "faculty")), ("siiri", person("siiri", "student")))
    # The other member's directory holds whoever its operator likes, with the university's names.
    other.set_accounts(("tuomas", person("tuomas", "faculty")), ("olli", person("olli", "faculty")))
    for idp in (university, other):
        idp.trust(Client())
    yield university, other
    forget_config()


def counts() -> tuple[int, int]:
    return User.objects.count(), SsoIdentity.objects.count()


def assert_refused(response, sentence: str, status: int = 403) -> None:
    assert response.status_code == status, response.content[:400]
    page = response.content.decode()
    assert 'data-testid="sso-refused"' in page and sentence in page, page[:1500]


def test_the_university_idps_people_sign_in_through_the_federation_file(federation):
    university, _other = federation
    client = Client()
    signed = university.sign_in(client, "tuomas")
    assert signed.response.status_code == 302 and signed.response["Location"] == "/"
    identity = SsoIdentity.objects.select_related("user").get(subject="tuomas@uni.example")
    assert identity.issuer == university.entity_id and identity.user.role == Role.TEACHER
    assert client.get("/account/").wsgi_request.user == identity.user


@pytest.mark.parametrize("envelope", ["its own", "forged as the university"])
def test_another_federation_idps_assertion_signs_nobody_in(federation, envelope):
    university, other = federation
    university.sign_in(Client(), "tuomas")  # the real Tuomas has an account
    before = counts()
    if envelope == "forged as the university":
        other.spoil_next("envelope", envelope_issuer=university.entity_id)
    attacker = Client()
    signed = university.sign_in(attacker, "tuomas", answered_by=other)
    assert_refused(signed.response, NOT_VERIFIED)
    assert counts() == before
    assert not attacker.get("/account/").wsgi_request.user.is_authenticated
    assert not SsoIdentity.objects.filter(issuer=other.entity_id).exists()


def test_another_federation_idp_makes_no_teacher_for_someone_new(federation):
    university, other = federation
    signed = university.sign_in(Client(), "olli", answered_by=other)
    assert_refused(signed.response, NOT_VERIFIED)
    assert counts() == (0, 0)


def test_the_university_signing_around_another_idps_name_on_the_envelope_is_refused(federation):
    """Defence in depth: the envelope is unsigned, but one that disagrees with its assertion is not let in."""
    university, other = federation
    university.spoil_next("envelope", envelope_issuer=other.entity_id)
    signed = university.sign_in(Client(), "siiri")
    assert_refused(signed.response, NOT_VERIFIED)
    assert counts() == (0, 0)


@pytest.mark.parametrize("mode", ["signed-recipient", "no-audience"])
def test_an_assertion_not_addressed_to_us_is_refused_though_pysaml2_lets_it_through(federation, mode):
    """pysaml2 compares only the unsigned envelope's Destination, and passes an assertion that names
    no Audience; the signed Recipient and Audience are ours to check."""
    university, _other = federation
    university.spoil_next(mode)
    signed = university.sign_in(Client(), "siiri")
    assert_refused(signed.response, NOT_VERIFIED)
    assert counts() == (0, 0)


def test_an_allow_list_of_two_lets_both_idps_people_in(federation, settings):
    university, other = federation
    settings.SAML_IDP_ENTITY_IDS = [university.entity_id, other.entity_id]
    university.sign_in(Client(), "tuomas")
    client = Client()
    signed = other.sign_in(client, "olli", start=f"/sso/saml/start/?idp={other.entity_id}")
    assert signed.response.status_code == 302, signed.response.content[:400]
    olli = SsoIdentity.objects.select_related("user").get(issuer=other.entity_id, subject="olli@uni.example")
    assert client.get("/account/").wsgi_request.user == olli.user
    assert SsoIdentity.objects.filter(issuer=university.entity_id, subject="tuomas@uni.example").exists()


def test_sign_in_does_not_start_at_an_idp_that_is_not_let_in(federation):
    _university, other = federation
    assert Client().get(f"/sso/saml/start/?idp={other.entity_id}").status_code == 404


def test_with_several_idps_in_the_file_and_none_named_sign_in_is_unavailable(federation, settings):
    university, _other = federation
    client = Client()
    answer = university.answer_for(client, "siiri")  # started while the university was still named
    settings.SAML_IDP_ENTITY_ID = ""
    assert_refused(client.get("/sso/saml/start/"), NOT_SET_UP, status=503)
    assert_refused(client.post(answer.acs, answer.post), NOT_SET_UP, status=503)
    assert counts() == (0, 0)
