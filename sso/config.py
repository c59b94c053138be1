"""Whether campus sign-in is on, and what the OpenID Connect provider's discovery document says.

Settings are read per call (not at import), so a deployment's values and a test's overrides are
both seen. The discovery document is fetched from the issuer itself and kept per process for
OIDC_DISCOVERY_CACHE_SECONDS.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import requests
from django.conf import settings
from django.utils.translation import gettext as _

from kernel.errors import CurreChatError
from kernel.ttlcache import TTLCache

log = logging.getLogger(__name__)


class SignInUnavailable(CurreChatError):
    """The identity provider cannot be reached or is misconfigured: nothing the user can fix."""

    status_code = 503
    code = "unavailable"
    retryable = True


def oidc_enabled() -> bool:
    return bool(settings.OIDC_ISSUER)


def saml_enabled() -> bool:
    return bool(settings.SAML_IDP_METADATA)


def sso_enabled() -> bool:
    return oidc_enabled() or saml_enabled()


@dataclass(frozen=True)
class OidcProvider:
    """The endpoints an issuer publishes in its discovery document."""

    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    end_session_endpoint: str  # empty: the provider offers no RP-initiated logout


# Issuer -> its endpoints, looked up again after OIDC_DISCOVERY_CACHE_SECONDS.
_cache: TTLCache[str, OidcProvider] = TTLCache(lambda: settings.OIDC_DISCOVERY_CACHE_SECONDS)


def unavailable() -> SignInUnavailable:
    return SignInUnavailable(
        _("The sign-in service of %(name)s cannot be reached right now. Try again in a few minutes.")
        % {"name": settings.SSO_NAME}
    )


def cached_oidc_provider() -> OidcProvider | None:
    """The endpoints if discovery has already run in this process (never fetches)."""
    return _cache.peek(settings.OIDC_ISSUER)


def oidc_provider() -> OidcProvider:
    """The configured issuer's endpoints (discovery), checked to belong to that issuer."""
    issuer = settings.OIDC_ISSUER
    return _cache.get_or_make(issuer, lambda: _discover(issuer))


def _discover(issuer: str) -> OidcProvider:
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=settings.OIDC_HTTP_TIMEOUT)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        log.warning("OpenID Connect discovery at %s failed: %s", url, exc)
        raise unavailable() from exc
    # OpenID Connect Discovery 1.0, section 4.3: the document's issuer must be the one asked.
    if not isinstance(document, dict) or str(document.get("issuer", "")).rstrip("/") != issuer:
        log.error("The discovery document at %s names issuer %r", url, document.get("issuer"))
        raise unavailable()
    try:
        provider = OidcProvider(
            issuer=str(document["issuer"]),
            authorization_endpoint=str(document["authorization_endpoint"]),
            token_endpoint=str(document["token_endpoint"]),
            userinfo_endpoint=str(document.get("userinfo_endpoint") or ""),
            jwks_uri=str(document["jwks_uri"]),
            end_session_endpoint=str(document.get("end_session_endpoint") or ""),
        )
    except KeyError as exc:
        log.error("The discovery document at %s lacks %s", url, exc)
        raise unavailable() from exc
    return provider


def forget_discovery() -> None:
    """Drop the cached documents (tests start providers on new ports)."""
    _cache.clear()


def local_password_allowed(user) -> bool:
    """LOCAL_LOGIN: `all` lets everyone use a CurreChat password, `staff` everyone but students,
    `off` only superusers (a way in while the identity provider is down)."""
    mode = settings.LOCAL_LOGIN
    if mode == "all" or user.is_superuser:
        return True
    return mode == "staff" and (user.is_teacher or user.is_staff)


def invitation_sign_up_allowed() -> bool:
    """Whether opening an invitation to co-teach may make an account with a CurreChat password:
    whenever LOCAL_LOGIN lets that account use one. It is a co-teacher by invitation (everyone may
    have a password with `all`), or a teacher when an administrator allowed that (TEACHER_INVITATIONS;
    teachers may have one with `staff` too)."""
    if settings.TEACHER_INVITATIONS:
        return settings.LOCAL_LOGIN in ("all", "staff")
    return settings.LOCAL_LOGIN == "all"


def invitations_make_accounts() -> bool:
    """Whether someone without an account can become a teacher through an invitation here: by
    signing up on it, or by campus sign-in (the university then says whether they are a teacher)."""
    return invitation_sign_up_allowed() or sso_enabled()


def local_password_sentence() -> str:
    return _("Sign in with %(name)s instead: CurreChat passwords are not used for your account.") % {
        "name": settings.SSO_NAME
    }


@dataclass(frozen=True)
class SignInOption:
    label: str
    url: str
    protocol: str


def sign_in_options(next_url: str = "") -> list[SignInOption]:
    """The login page's "Sign in with <university>" buttons, in order (OpenID Connect first)."""
    from urllib.parse import urlencode

    from django.urls import reverse

    query = f"?{urlencode({'next': next_url})}" if next_url else ""
    options = []
    label = _("Sign in with %(name)s") % {"name": settings.SSO_NAME}
    if oidc_enabled():
        options.append(SignInOption(label, reverse("sso:oidc_start") + query, "oidc"))
    if saml_enabled():
        saml_label = label if not options else _("Sign in with %(name)s (SAML)") % {"name": settings.SSO_NAME}
        options.append(SignInOption(saml_label, reverse("sso:saml_start") + query, "saml"))
    return options
