"""IMS LTI Dynamic Registration, the tool's side: a platform's administrator pastes one CurreChat
URL into the platform, which opens it with `openid_configuration` and `registration_token`.

CurreChat reads the platform's OpenID configuration (its issuer must be on the host the
configuration came from), posts its own client registration to the platform's registration
endpoint, and stores the platform as *waiting for approval*: it launches nothing until a CurreChat
administrator approves it (`decide`, called by the admin). A registration token is used once.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.templatetags.static import static
from django.urls import reverse
from django.utils.translation import gettext as _

from kernel.errors import CurreChatError
from kernel.redis_client import get_redis
from lti import nrps
from lti.models import Platform, PlatformStatus

log = logging.getLogger(__name__)

TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"
DEEP_LINKING_SCOPE = "https://purl.imsglobal.org/spec/lti-dl/scope/deeplinking"  # Moodle asks for it by name
MAX_PENDING = 20  # registrations waiting for approval at once: an open URL must not fill the admin
TOKEN_DAYS = 30
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class RegistrationRefused(CurreChatError):
    """A registration CurreChat will not make; `str()` is the sentence on the page."""

    status_code = 400
    code = "registration_refused"


def _refuse(sentence: str, detail: str = "") -> RegistrationRefused:
    log.info("LTI registration refused: %s %s", sentence, detail)
    return RegistrationRefused(sentence)


def _secure(url: str) -> bool:
    """https, or http to this machine (a platform under test)."""
    parts = urlsplit(url)
    return bool(parts.hostname) and (
        parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK)
    )


def _claim_token(token: str) -> bool:
    """True the first time a registration token is seen (a replayed one is refused)."""
    key = f"{settings.REDIS_INDEX_PREFIX}:lti:registration-token:{hashlib.sha256(token.encode()).hexdigest()}"
    return bool(get_redis().set(key, "1", nx=True, ex=TOKEN_DAYS * 86400))


def _http(method: str, url: str, what: str, **kwargs: Any) -> dict[str, Any]:
    try:
        response = requests.request(method, url, timeout=settings.LTI_HTTP_TIMEOUT, **kwargs)
    except requests.exceptions.SSLError as exc:
        raise _refuse(
            _(
                "CurreChat could not check the learning platform's certificate at %(host)s, so it did not register. "
                "The platform needs a certificate a browser would trust."
            )
            % {"host": urlsplit(url).netloc},
            str(exc),
        )
    except requests.RequestException as exc:
        raise _refuse(
            _("CurreChat could not reach the learning platform at %(host)s.") % {"host": urlsplit(url).netloc}, str(exc)
        )
    try:
        body = response.json()
    except ValueError:
        body = None
    if not response.ok or not isinstance(body, dict):
        raise _refuse(
            _("The learning platform's %(what)s answered with an error (status %(status)s); nothing was registered.")
            % {"what": what, "status": response.status_code},
            response.text[:300],
        )
    return body


def read_configuration(url: str) -> dict[str, Any]:
    """The platform's OpenID configuration, checked: its issuer is on the host it was read from."""
    if not _secure(url):
        raise _refuse(_("The learning platform's configuration address must start with https://."))
    config = _http("GET", url, _("configuration"))
    issuer = config.get("issuer")
    if not isinstance(issuer, str) or not _secure(issuer) or urlsplit(issuer).hostname != urlsplit(url).hostname:
        raise _refuse(
            _(
                "The learning platform's configuration names an issuer on another host than the one it came from, "
                "so CurreChat did not trust it. Start the registration again from the platform's own administration."
            ),
            f"issuer {issuer!r} from {url}",
        )
    for name in ("authorization_endpoint", "token_endpoint", "jwks_uri", "registration_endpoint"):
        if not isinstance(config.get(name), str) or not _secure(config[name]):
            raise _refuse(_("The learning platform's configuration lacks its %(name)s.") % {"name": name})
    return config


def tool_registration(request: HttpRequest, config: dict[str, Any]) -> dict[str, Any]:
    """What CurreChat tells the platform about itself (OpenID Connect client metadata plus the LTI
    tool configuration): its addresses, key set, the claims and scopes it needs, its name and icon."""
    launch = request.build_absolute_uri(reverse("lti:launch"))
    product = (config.get(PLATFORM_CONFIG) or {}).get("product_family_code", "")
    return {
        "application_type": "web",
        "response_types": ["id_token"],
        "grant_types": ["implicit", "client_credentials"],
        "initiate_login_uri": request.build_absolute_uri(reverse("lti:login")),
        "redirect_uris": [launch],
        "client_name": "CurreChat",
        "jwks_uri": request.build_absolute_uri(reverse("lti:jwks")),
        "logo_uri": request.build_absolute_uri(static("favicon.svg")),
        "token_endpoint_auth_method": "private_key_jwt",
        "scope": " ".join([nrps.SCOPE] + ([DEEP_LINKING_SCOPE] if product == "moodle" else [])),
        TOOL_CONFIG: {
            "domain": urlsplit(launch).netloc,
            "target_link_uri": launch,
            "claims": ["iss", "sub", "name", "given_name", "family_name", "email"],
            "messages": [
                {"type": "LtiResourceLinkRequest", "target_link_uri": launch, "label": "CurreChat"},
                {"type": "LtiDeepLinkingRequest", "target_link_uri": launch, "label": "CurreChat"},
            ],
        },
    }


def register(request: HttpRequest, config_url: str, token: str) -> Platform:
    """The whole registration; the platform stored as waiting for approval, or `RegistrationRefused`."""
    config_url, token = config_url.strip(), token.strip()
    if not config_url:
        raise _refuse(_("This address is for a learning platform's tool registration; open it from the platform."))
    if Platform.objects.filter(status=PlatformStatus.PENDING).count() >= MAX_PENDING:
        raise _refuse(
            _("Too many registrations wait for approval. Ask a CurreChat administrator to decide on them first.")
        )
    if token and not _claim_token(token):
        raise _refuse(_("This registration was already used. Start the registration again in the learning platform."))
    config = read_configuration(config_url)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    answer = _http(
        "POST",
        config["registration_endpoint"],
        _("registration"),
        json=tool_registration(request, config),
        headers=headers,
    )
    client_id = answer.get("client_id")
    deployment = (answer.get(TOOL_CONFIG) or {}).get("deployment_id")
    if not isinstance(client_id, str) or not client_id:
        raise _refuse(_("The learning platform did not give CurreChat a client ID; nothing was registered."))
    product = str((config.get(PLATFORM_CONFIG) or {}).get("product_family_code") or _("learning platform"))
    try:
        with transaction.atomic():
            return Platform.objects.create(
                name=f"{product} ({urlsplit(config['issuer']).hostname})"[:200],
                issuer=config["issuer"],
                client_id=client_id,
                deployment_ids=[str(deployment)] if deployment else [],
                auth_login_url=config["authorization_endpoint"],
                auth_token_url=config["token_endpoint"],
                key_set_url=config["jwks_uri"],
                status=PlatformStatus.PENDING,
                registered_from=config_url[:1000],
            )
    except IntegrityError:
        raise _refuse(_("CurreChat is already registered with this learning platform under the same client ID."))


def decide(platform: Platform, status: str) -> Platform:
    """An administrator approves or refuses a platform (the admin's one way to change it)."""
    platform.status = status
    platform.save(update_fields=["status"])
    return platform
