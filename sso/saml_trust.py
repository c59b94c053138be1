"""Whom a SAML answer may sign in, and what of it is believed: only what the university's IdP signed.

pysaml2 checks an assertion's signature with the keys that the metadata lists for the issuer the
assertion *itself* names. A federation's metadata lists hundreds of IdPs, and each of them can sign
an assertion naming itself, so a signature that verifies says only "some member of the federation
said this". The trust boundary is here: the signed assertion's issuer must be one the deployment
named (`SAML_IDP_ENTITY_ID`, or `SAML_IDP_ENTITY_IDS`), whatever the metadata holds, and everything
CurreChat reads — issuer, subject, attributes, audience, recipient, the request answered, validity —
comes from that signed assertion. The Response envelope around it is not signed (README: "SAML 2.0")
and only has to agree with it.

Some of these pysaml2 7.5 checks only in part, so they are checked here again from the assertion:
an assertion without Conditions or AudienceRestriction passes its audience check, and the
SubjectConfirmationData's Recipient is not compared with our ACS at all (only when a `conv_info` is
passed); its InResponseTo is compared with the envelope's, skipped when a confirmation has no data.
"""

from __future__ import annotations

import calendar
import logging
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _
from saml2.client import Saml2Client
from saml2.saml import NAMEID_FORMAT_ENTITY, SCM_BEARER
from saml2.time_util import str_to_time

from sso.config import SignInUnavailable

log = logging.getLogger(__name__)


class Unusable(Exception):
    """An answer that is not let in; the detail goes to the log, the user reads `not_verified`."""


def not_set_up() -> SignInUnavailable:
    return SignInUnavailable(_("Campus sign-in is not set up completely. Tell your administrator."))


def allowed_issuers(client: Saml2Client) -> list[str]:
    """The IdPs whose signed assertions may sign someone in. Without a setting, the metadata must
    hold one IdP only: picking one of a federation's many would let any of them in."""
    if settings.SAML_IDP_ENTITY_IDS:
        return list(settings.SAML_IDP_ENTITY_IDS)
    if settings.SAML_IDP_ENTITY_ID:
        return [settings.SAML_IDP_ENTITY_ID]
    idps = list(client.metadata.identity_providers())
    if len(idps) != 1:
        log.error("The SAML metadata holds %s IdPs: set SAML_IDP_ENTITY_ID to the university's", len(idps))
        raise not_set_up()
    return idps


def start_issuer(client: Saml2Client) -> str:
    """Where an AuthnRequest goes: the university's IdP, which is always one of the allowed."""
    return settings.SAML_IDP_ENTITY_ID or allowed_issuers(client)[0]


@dataclass(frozen=True)
class SignedAnswer:
    """What the signed assertion says about the conversation (not who the person is)."""

    issuer: str
    request_id: str  # the AuthnRequest it answers (SubjectConfirmationData InResponseTo)
    expires: int  # Unix time after which no check lets it in any more


def signed_answer(response, *, allowed: list[str], sp_entity_id: str, acs_url: str, outstanding) -> SignedAnswer:
    """Check pysaml2's verified AuthnResponse against what we rely on; `Unusable` if any fails."""
    if len(response.assertions) != 1:
        raise Unusable(f"{len(response.assertions)} assertions in one response")
    assertion = response.assertion
    if not assertion.signature:
        raise Unusable("the assertion is not signed")
    issuer = _issuer(assertion)
    if issuer not in allowed:
        raise Unusable(f"assertion issued by {issuer!r}, not by one of {allowed!r}")
    envelope = response.response.issuer
    if envelope is not None and (envelope.text or "").strip() != issuer:
        raise Unusable(f"the response names issuer {envelope.text!r} around an assertion of {issuer!r}")
    _for_us(assertion, sp_entity_id)
    request_id, confirmed_until = _bearer(assertion, acs_url, outstanding)
    if response.in_response_to != request_id:
        raise Unusable(f"the response answers {response.in_response_to!r}, its assertion {request_id!r}")
    expires = min(filter(None, (confirmed_until, _time(assertion.conditions.not_on_or_after))))
    return SignedAnswer(issuer=issuer, request_id=request_id, expires=expires)


def _issuer(assertion) -> str:
    name = assertion.issuer
    if name is None or not (name.text or "").strip():
        raise Unusable("the assertion names no issuer")
    if name.format not in (None, NAMEID_FORMAT_ENTITY):
        raise Unusable(f"the assertion's issuer has format {name.format!r}")
    return name.text.strip()


def _for_us(assertion, sp_entity_id: str) -> None:
    """Audience: every AudienceRestriction (they are ANDed) names us, and there is one."""
    restrictions = assertion.conditions.audience_restriction if assertion.conditions else []
    if not restrictions:
        raise Unusable("the assertion has no AudienceRestriction")
    for restriction in restrictions:
        if sp_entity_id not in [(audience.text or "").strip() for audience in restriction.audience]:
            raise Unusable(f"the assertion is for {[a.text for a in restriction.audience]!r}, not {sp_entity_id!r}")


def _bearer(assertion, acs_url: str, outstanding) -> tuple[str, int]:
    """A bearer confirmation for our ACS, answering a request this browser made, with an end (the
    Web Browser SSO profile requires all three). Returns the request's ID and that end."""
    for confirmation in assertion.subject.subject_confirmation if assertion.subject else []:
        data = confirmation.subject_confirmation_data
        if confirmation.method != SCM_BEARER or data is None:
            continue
        if data.recipient == acs_url and data.in_response_to in outstanding and data.not_on_or_after:
            return data.in_response_to, _time(data.not_on_or_after)
    raise Unusable(f"no bearer confirmation for {acs_url!r} answering one of {list(outstanding)!r} with an end")


def _time(value: str | None) -> int:
    return calendar.timegm(str_to_time(value)) if value else 0
