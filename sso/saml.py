"""SAML 2.0 sign-in (Shibboleth, HAKA and other federations) through pysaml2, as a Service Provider.

pysaml2 builds the AuthnRequest (HTTP-Redirect) and checks the answer (HTTP-POST to our assertion
consumer service): the assertion must be signed by a key the metadata lists for the issuer it names
(Debian's `xmlsec1` verifies it), within its time window, and in response to a request this browser
made (InResponseTo against the requests kept in its session; unsolicited answers are refused).
sso/saml_trust.py then lets in only an assertion whose signed issuer is the university's IdP, and
reads the audience, recipient and request answered from the signed assertion, never the envelope.
We add a single use per assertion ID across every web process (kept in Redis until the assertion
expires), so a captured POST cannot be replayed from another browser either.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import saml2
from django.conf import settings
from django.contrib.auth import login
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.metadata import entity_descriptor
from saml2.saml import NAMEID_FORMAT_PERSISTENT

from kernel.errors import CurreChatError
from kernel.redis_client import get_redis
from kernel.ttlcache import TTLCache
from sso.config import SignInUnavailable, saml_enabled
from sso.models import Protocol
from sso.oidc import not_verified, refused
from sso.provision import Person, sign_in, values
from sso.saml_trust import SignedAnswer, Unusable, allowed_issuers, signed_answer, start_issuer

log = logging.getLogger(__name__)

SESSION_REQUESTS = "saml_outstanding"  # {request ID: where to go afterwards}
CONFIG_CACHE_SECONDS = 3600  # remote IdP metadata is fetched again after this
_configs: TTLCache[str, SPConfig] = TTLCache(CONFIG_CACHE_SECONDS)  # by assertion consumer URL


def sp_entity_id(request: HttpRequest) -> str:
    return settings.SAML_SP_ENTITY_ID or request.build_absolute_uri(reverse("sso:saml_metadata"))


def _metadata_source() -> dict[str, Any]:
    source = settings.SAML_IDP_METADATA
    if source.startswith(("https://", "http://")):
        # pysaml2 refuses metadata from the URL unless it is signed by this certificate.
        return {"remote": [{"url": source, "cert": settings.SAML_IDP_METADATA_CERT}]}
    return {"local": [source]}


def sp_config(request: HttpRequest) -> SPConfig:
    """pysaml2's configuration of this SP (per host: the entity ID and ACS URL are absolute)."""
    entity_id = sp_entity_id(request)
    acs = request.build_absolute_uri(reverse("sso:saml_acs"))
    cached = _configs.get(acs)
    if cached is not None:
        return cached
    keypair = {"key_file": settings.SAML_SP_KEY_FILE, "cert_file": settings.SAML_SP_CERT_FILE}
    conf = SPConfig()
    try:
        conf.load(
            {
                "entityid": entity_id,
                "xmlsec_binary": settings.SAML_XMLSEC_BINARY,
                "service": {
                    "sp": {
                        "name": "CurreChat",
                        "endpoints": {"assertion_consumer_service": [(acs, saml2.BINDING_HTTP_POST)]},
                        "want_assertions_signed": True,  # a signed response around it is not enough
                        "want_response_signed": False,
                        "allow_unsolicited": False,
                        "authn_requests_signed": False,
                        "name_id_format": NAMEID_FORMAT_PERSISTENT,
                        "required_attributes": [settings.SAML_ATTRIBUTE_AFFILIATION],
                        "optional_attributes": [
                            name
                            for name in (
                                settings.SAML_ATTRIBUTE_SUBJECT,
                                settings.SAML_ATTRIBUTE_NAME,
                                settings.SAML_ATTRIBUTE_GIVEN_NAME,
                                settings.SAML_ATTRIBUTE_FAMILY_NAME,
                                settings.SAML_ATTRIBUTE_EMAIL,
                                settings.SAML_ATTRIBUTE_LANGUAGE,
                                settings.SAML_ATTRIBUTE_GROUPS,
                                settings.SAML_ATTRIBUTE_PERSON_ID,
                            )
                            if name
                        ],
                    }
                },
                "metadata": _metadata_source(),
                **keypair,
                "encryption_keypairs": [keypair],
                "allow_unknown_attributes": True,
                # pysaml2's default, said aloud: never a certificate sent inside the answer itself.
                "only_use_keys_in_metadata": True,
            }
        )
    except Exception as exc:  # pysaml2 raises many kinds for unreadable metadata or keys
        log.exception("The SAML configuration could not be loaded")
        raise SignInUnavailable(
            _("The sign-in service of %(name)s cannot be reached right now. Try again in a few minutes.")
            % {"name": settings.SSO_NAME}
        ) from exc
    return _configs.put(acs, conf)


def forget_config() -> None:
    _configs.clear()


def _safe_next(request: HttpRequest) -> str:
    wanted = request.GET.get("next", "")
    if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, require_https=request.is_secure()):
        return wanted
    return reverse(settings.LOGIN_REDIRECT_URL)


def _chosen_idp(request: HttpRequest, client: Saml2Client) -> str:
    """The university's IdP, or `?idp=` naming another one the deployment lets in (SAML_IDP_ENTITY_IDS).
    A request to any other IdP would only bring back an answer that is refused."""
    wanted = request.GET.get("idp", "")
    if not wanted:
        return start_issuer(client)
    if wanted not in allowed_issuers(client):
        raise Http404
    return wanted


@never_cache
@require_GET
def start(request: HttpRequest) -> HttpResponse:
    """`/sso/saml/start/?next=…[&idp=…]`: an AuthnRequest to the IdP over HTTP-Redirect."""
    if not saml_enabled():
        raise Http404
    try:
        client = Saml2Client(sp_config(request))
        request_id, info = client.prepare_for_authenticate(
            entityid=_chosen_idp(request, client), binding=saml2.BINDING_HTTP_REDIRECT
        )
    except CurreChatError as exc:
        return refused(request, exc)
    outstanding = dict(request.session.get(SESSION_REQUESTS, {}))
    outstanding[request_id] = _safe_next(request)
    # A few tabs may sign in at once; older unanswered requests give way.
    request.session[SESSION_REQUESTS] = dict(list(outstanding.items())[-5:])
    location = dict(info["headers"])["Location"]
    return HttpResponseRedirect(location)


@csrf_exempt  # the IdP posts cross-site; the signed assertion answering our own request is the proof
@never_cache
@require_POST
def acs(request: HttpRequest) -> HttpResponse:
    """The assertion consumer service: the IdP's signed answer, posted by the browser."""
    if not saml_enabled():
        raise Http404
    encoded = request.POST.get("SAMLResponse", "")
    outstanding: dict[str, str] = dict(request.session.get(SESSION_REQUESTS, {}))
    try:
        client = Saml2Client(sp_config(request))
        allowed = allowed_issuers(client)  # before reading the answer: a deployment without one refuses all
        response = client.parse_authn_request_response(encoded, saml2.BINDING_HTTP_POST, outstanding)
        if response is None or response.assertion is None:
            raise Unusable("no assertion")
        answer = signed_answer(
            response,
            allowed=allowed,
            sp_entity_id=sp_entity_id(request),
            acs_url=request.build_absolute_uri(reverse("sso:saml_acs")),
            outstanding=outstanding,
        )
        _use_once(response.assertion.id, answer.expires)
        user = sign_in(_person(response, answer))
    except CurreChatError as exc:
        return refused(request, exc)
    # pysaml2 refuses with many classes, and with a bare Exception for a foreign audience: every one of
    # them (and Unusable) means this answer is not let in.
    except Exception as exc:  # noqa: BLE001
        log.warning("SAML sign-in refused: %s: %s", type(exc).__name__, exc)
        return refused(request, not_verified())
    came_from = outstanding.pop(answer.request_id, "") or reverse(settings.LOGIN_REDIRECT_URL)
    login(request, user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SESSION_REQUESTS] = outstanding
    request.session["sso_protocol"] = Protocol.SAML.value
    return HttpResponseRedirect(came_from)


def _use_once(assertion_id: str, expires: int) -> None:
    """Refuse an assertion seen before, in any web process, until it would have expired anyway."""
    ttl = max(int(expires - time.time()), 0) + 300  # and a margin for the IdP's clock
    key = f"{settings.REDIS_INDEX_PREFIX}:saml:assertion:{assertion_id}"
    if not get_redis().set(key, "1", nx=True, ex=ttl):
        raise Unusable(f"assertion {assertion_id} replayed")


def _first(ava: dict[str, list], name: str) -> str:
    found = ava.get(name) if name else None
    return str(found[0]).strip() if found else ""


def _person(response, answer: SignedAnswer) -> Person:
    """The signed assertion's attributes, by the names the deployment configured (README: "SAML 2.0").
    pysaml2 reads `ava` and `name_id` from the assertions only, and `signed_answer` allowed one."""
    ava: dict[str, list] = response.ava or {}
    subject = _first(ava, settings.SAML_ATTRIBUTE_SUBJECT)
    if not subject and response.name_id is not None and response.name_id.format == NAMEID_FORMAT_PERSISTENT:
        subject = str(response.name_id.text or "")
    return Person(
        protocol=Protocol.SAML,
        issuer=answer.issuer,  # the signed assertion's, never the envelope's (`response.issuer()`)
        subject=subject,
        name=_first(ava, settings.SAML_ATTRIBUTE_NAME),
        given_name=_first(ava, settings.SAML_ATTRIBUTE_GIVEN_NAME),
        family_name=_first(ava, settings.SAML_ATTRIBUTE_FAMILY_NAME),
        email=_first(ava, settings.SAML_ATTRIBUTE_EMAIL),
        # The university's directory asserts the address in a signed assertion: it counts as verified.
        email_verified=True,
        language=_first(ava, settings.SAML_ATTRIBUTE_LANGUAGE),
        affiliations=values(ava.get(settings.SAML_ATTRIBUTE_AFFILIATION)),
        groups=values(ava.get(settings.SAML_ATTRIBUTE_GROUPS)),
        person_id=_first(ava, settings.SAML_ATTRIBUTE_PERSON_ID),
    )


@require_GET
def metadata(request: HttpRequest) -> HttpResponse:
    """The SP's metadata at a stable URL (`/sso/saml/metadata/`, also the default entity ID), for
    the IdP or the federation's registry."""
    if not saml_enabled():
        raise Http404
    try:
        conf = sp_config(request)
    except CurreChatError as exc:
        return refused(request, exc)
    return HttpResponse(str(entity_descriptor(conf)).encode(), content_type="application/samlmetadata+xml")
