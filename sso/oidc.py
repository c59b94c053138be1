"""OpenID Connect sign-in through mozilla-django-oidc (docs/ARCHITECTURE.md says why this library).

The library does the authorization code flow: `state`, `nonce` and a PKCE verifier kept in the
session per attempt and used once, the code exchanged at the token endpoint, the signing key
picked from the provider's JWKS by `kid` and `alg`. We add what it leaves out: the endpoints come
from the issuer's discovery document (sso/config.py), the ID token must be signed (RS256), name our
issuer and our client as audience and carry an expiry, the userinfo answer must be about the same
subject, and the account is found by issuer and subject (sso/provision.py), never by address.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from kernel.errors import CurreChatError
from sso.config import oidc_enabled, oidc_provider
from sso.models import Protocol
from sso.provision import Person, SignInRefused, sign_in, values

log = logging.getLogger(__name__)

# Public-key signatures only: with HS256 anyone holding the client secret could mint tokens.
SIGNING_ALGORITHM = "RS256"
SESSION_ID_TOKEN = "oidc_id_token"  # noqa: S105 (a session key: the library stores the ID token there)
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def library_setting(attr: str, *default: Any) -> Any:
    """The library's settings, from ours: it reads everything through `get_settings`."""
    ours = {
        "OIDC_RP_CLIENT_ID": settings.OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.OIDC_CLIENT_SECRET,
        "OIDC_RP_SCOPES": settings.OIDC_SCOPES,
        "OIDC_RP_SIGN_ALGO": SIGNING_ALGORITHM,
        "OIDC_USE_NONCE": True,
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_TIMEOUT": settings.OIDC_HTTP_TIMEOUT,
        "OIDC_STORE_ID_TOKEN": True,
        "OIDC_ALLOW_UNSECURED_JWT": False,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "sso:oidc_callback",
    }
    if attr in ours:
        return ours[attr]
    if attr in _ENDPOINTS:
        return getattr(oidc_provider(), _ENDPOINTS[attr])
    return import_from_settings(attr, *default)


def not_verified() -> SignInRefused:
    return SignInRefused(
        _(
            "Your sign-in at %(name)s could not be verified, so you were not signed in. Start again from "
            "the login page; if this keeps happening, tell your IT help desk."
        )
        % {"name": settings.SSO_NAME}
    )


def refused(request: HttpRequest, error: CurreChatError) -> HttpResponse:
    status = 503 if error.retryable else error.status_code
    context = {"title": _("You were not signed in"), "message": str(error), "code": error.code}
    return render(request, "sso/refused.html", context, status=status)


class Backend(OIDCAuthenticationBackend):
    """Answers only the callback's code exchange (it is listed in AUTHENTICATION_BACKENDS always)."""

    def __init__(self, *args, **kwargs):
        # Not the library's __init__: it reads the endpoints when constructed, and Django constructs
        # every listed backend for every password login too. Ours are discovered when used.
        self.UserModel = get_user_model()

    get_settings = staticmethod(library_setting)

    def authenticate(self, request, **kwargs):
        if not oidc_enabled() or "nonce" not in kwargs:
            return None
        provider = oidc_provider()
        self.OIDC_OP_TOKEN_ENDPOINT = provider.token_endpoint
        self.OIDC_OP_USER_ENDPOINT = provider.userinfo_endpoint
        self.OIDC_OP_JWKS_ENDPOINT = provider.jwks_uri
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = SIGNING_ALGORITHM
        self.OIDC_RP_IDP_SIGN_KEY = None
        return super().authenticate(request, **kwargs)

    def verify_token(self, token, **kwargs):
        """Signature (by the provider's key, RS256 only), issuer, audience, expiry and nonce."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise SuspiciousOperation(f"unreadable ID token: {exc}") from exc
        if header.get("alg") != SIGNING_ALGORITHM:  # "none" (unsigned) or an algorithm we do not accept
            raise SuspiciousOperation(f"ID token signed with {header.get('alg')!r}")
        key = self.retrieve_matching_jwk(token)
        payload = jwt.decode(
            token,
            key,
            algorithms=[SIGNING_ALGORITHM],
            audience=settings.OIDC_CLIENT_ID,
            issuer=oidc_provider().issuer,
            options={"require": ["iss", "aud", "exp", "iat", "sub"]},
        )
        if payload.get("nonce") != kwargs.get("nonce"):
            raise SuspiciousOperation("ID token nonce is not this sign-in's")
        return payload

    def get_or_create_user(self, access_token, id_token, payload):
        claims = dict(payload)
        if self.OIDC_OP_USER_ENDPOINT:
            info = self.get_userinfo(access_token, id_token, payload)
            # OpenID Connect Core 5.3.2: userinfo about another subject must not be used.
            if str(info.get("sub")) != str(payload["sub"]):
                raise SuspiciousOperation("userinfo names another subject")
            claims.update({k: v for k, v in info.items() if k not in ("iss", "aud", "sub")})
        return sign_in(person_from_claims(claims))


def _claim(claims: dict[str, Any], name: str) -> str:
    value = claims.get(name) if name else None
    if isinstance(value, list):
        value = value[0] if value else ""
    return str(value or "").strip()


def person_from_claims(claims: dict[str, Any]) -> Person:
    """The verified claims, read by the names the deployment configured (README: "OpenID Connect")."""
    verified = claims.get("email_verified")
    return Person(
        protocol=Protocol.OIDC,
        issuer=str(claims["iss"]),
        subject=str(claims["sub"]),
        name=_claim(claims, settings.OIDC_CLAIM_NAME),
        given_name=_claim(claims, settings.OIDC_CLAIM_GIVEN_NAME),
        family_name=_claim(claims, settings.OIDC_CLAIM_FAMILY_NAME),
        email=_claim(claims, settings.OIDC_CLAIM_EMAIL),
        email_verified=verified is True or str(verified).lower() == "true",
        language=_claim(claims, settings.OIDC_CLAIM_LANGUAGE),
        affiliations=values(claims.get(settings.OIDC_CLAIM_AFFILIATION)),
        groups=values(claims.get(settings.OIDC_CLAIM_GROUPS)),
        person_id=_claim(claims, settings.OIDC_CLAIM_PERSON_ID),
    )


class StartView(OIDCAuthenticationRequestView):
    """`/sso/oidc/start/?next=…`: to the provider's authorization endpoint (state, nonce, PKCE)."""

    get_settings = staticmethod(library_setting)

    def __init__(self, *args, **kwargs):
        View.__init__(self, *args, **kwargs)  # the library's reads the endpoint at construction

    def get(self, request):
        if not oidc_enabled():
            raise Http404
        try:
            self.OIDC_OP_AUTH_ENDPOINT = oidc_provider().authorization_endpoint
        except CurreChatError as exc:
            return refused(request, exc)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_CLIENT_ID
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """`/sso/oidc/callback/`: the provider's answer. Every refusal is a page with a sentence."""

    get_settings = staticmethod(library_setting)

    def get(self, request):
        if not oidc_enabled():
            raise Http404
        if request.GET.get("error") and request.GET.get("state") not in request.session.get("oidc_states", {}):
            # The library signs the user out on any error answer; one this browser never asked for
            # (a link from elsewhere) must not.
            return self.login_failure()
        try:
            return super().get(request)
        except CurreChatError as exc:
            return refused(request, exc)
        except (SuspiciousOperation, jwt.InvalidTokenError, requests.RequestException, KeyError, ValueError) as exc:
            # A tampered, unsigned, expired, foreign or replayed answer: the detail is for the log.
            log.warning("OpenID Connect sign-in refused: %s: %s", type(exc).__name__, exc)
            return refused(request, not_verified())

    def login_failure(self):
        if self.request.GET.get("error"):
            message = _("Signing in at %(name)s was cancelled or refused there. Start again from the login page.")
            return refused(self.request, SignInRefused(message % {"name": settings.SSO_NAME}))
        return refused(self.request, not_verified())

    def login_success(self):
        response = super().login_success()
        self.request.session["sso_protocol"] = Protocol.OIDC.value
        return response


def provider_logout_url(request: HttpRequest, id_token: str) -> str:
    """RP-initiated logout: the provider's end-session endpoint, back to our login page afterwards.
    Empty when the provider offers none (then only CurreChat's session ends)."""
    try:
        endpoint = oidc_provider().end_session_endpoint
    except CurreChatError:
        return ""
    if not endpoint:
        return ""
    query = {
        "id_token_hint": id_token,
        "client_id": settings.OIDC_CLIENT_ID,
        "post_logout_redirect_uri": request.build_absolute_uri(reverse(settings.LOGOUT_REDIRECT_URL)),
    }
    return f"{endpoint}?{urlencode(query)}"
