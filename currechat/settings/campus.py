"""CurreChat settings for running on a campus: security, rate limits, mail, learning platforms
(LTI 1.3) and campus sign-in (OpenID Connect, SAML 2.0). Every value comes from an environment variable."""

from __future__ import annotations

import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from currechat.settings.base import DEBUG, INSTALLED_APPS, MIDDLEWARE
from kernel.env import (
    env_bool,
    env_float,
    env_int,
    env_list,
    env_rate,
    env_str,
    env_url,
)
from kernel.framing import parse_origins

# --- Security ---------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the pages' scripts send it back as X-CSRFToken
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# HSTS is sent on https responses only; a year by default outside development. Start lower (e.g.
# 300) when first moving a site to https, since browsers remember it.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients), so that
# request.is_secure() holds and join links, redirects and HSTS use https.
TRUST_X_FORWARDED_PROTO = env_bool("TRUST_X_FORWARDED_PROTO", False)
if TRUST_X_FORWARDED_PROTO:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Production must say how https reaches the app: without one of these, a site behind a TLS proxy
# believes every request is plain http (http join links and redirects, no HSTS), and nothing says so.
ALLOW_PLAIN_HTTP = env_bool("ALLOW_PLAIN_HTTP", False)
if not DEBUG and not (TRUST_X_FORWARDED_PROTO or SECURE_SSL_REDIRECT or ALLOW_PLAIN_HTTP):
    raise ImproperlyConfigured(
        "With DEBUG off, say how CurreChat is reached over https: set TRUST_X_FORWARDED_PROTO=1 behind a TLS "
        "proxy that sets X-Forwarded-Proto, or SECURE_SSL_REDIRECT=1 to redirect plain http to https; only on a "
        "closed network without TLS, set ALLOW_PLAIN_HTTP=1 (README: Security settings for production)."
    )
if ALLOW_PLAIN_HTTP and SECURE_SSL_REDIRECT:
    raise ImproperlyConfigured("ALLOW_PLAIN_HTTP=1 and SECURE_SSL_REDIRECT=1 contradict each other: set one of them.")
if not DEBUG:
    # Over plain http a browser never sends back a Secure cookie, so nobody could sign in.
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", not ALLOW_PLAIN_HTTP)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# The header a trusted proxy puts the client's address in (e.g. X-Forwarded-For); empty: the
# socket's peer address. Rate limits by address read it (kernel/ratelimit.py).
CLIENT_IP_HEADER = env_str("CLIENT_IP_HEADER", "")

# Content-Security-Policy: scripts and styles from our own origin only; no inline script anywhere
# (pages pass data in `json_script` blocks and data attributes). Inline style *attributes* stay
# allowed: sanitised Markdown tables align cells with `style="text-align: ..."`.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# The API's interactive docs (/api/v1/docs, /api/v1/openapi.json): signed-in users only unless on.
API_DOCS_PUBLIC = env_bool("API_DOCS_PUBLIC", False)
# API tokens expire after this many days unless created with another expiry; 0: never.
API_TOKEN_DEFAULT_DAYS = env_int("API_TOKEN_DEFAULT_DAYS", 90, minimum=0)

# --- Rate limits (sliding windows in Redis, shared by all processes): (events, seconds); 0 events: off.
RATE_LOGIN_ACCOUNT = env_rate("RATE_LOGIN_ACCOUNT", 5, 900)
RATE_LOGIN_ADDRESS = env_rate("RATE_LOGIN_ADDRESS", 20, 900)
RATE_SIGNUP_ADDRESS = env_rate("RATE_SIGNUP_ADDRESS", 10, 3600)
RATE_JOIN_ADDRESS = env_rate("RATE_JOIN_ADDRESS", 20, 600)
RATE_SEARCH_USER = env_rate("RATE_SEARCH_USER", 30, 60)
# Searches without curation ask no model: they cost little and are allowed more. Programs (API
# tokens) have allowances of their own, so they cannot use up their owner's pages' allowance.
RATE_SEARCH_USER_UNCURATED = env_rate("RATE_SEARCH_USER_UNCURATED", 120, 60)
RATE_SEARCH_TOKEN = env_rate("RATE_SEARCH_TOKEN", 30, 60)
RATE_SEARCH_TOKEN_UNCURATED = env_rate("RATE_SEARCH_TOKEN_UNCURATED", 120, 60)
# Reset links asked for on the login page (only with mail configured): per address and per email.
RATE_RESET_ADDRESS = env_rate("RATE_RESET_ADDRESS", 5, 3600)
RATE_RESET_EMAIL = env_rate("RATE_RESET_EMAIL", 3, 3600)
# Links to confirm one's own address (each a mail to an address the user typed), per user.
RATE_ADDRESS_CONFIRMATION = env_rate("RATE_ADDRESS_CONFIRMATION", 3, 3600)
# The co-teacher picker's look-ups of teachers by username or address, per teacher: a few per word
# typed, never enough to walk the list of every teacher.
RATE_TEACHER_LOOKUP = env_rate("RATE_TEACHER_LOOKUP", 60, 60)
# Students (who reach a collection through a prompt) get at most this many results per search:
# curation costs one model call per result.
SEARCH_STUDENT_MAX_LIMIT = env_int("SEARCH_STUDENT_MAX_LIMIT", 15, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}

# WhiteNoise serves from the finders in development; STATIC_ROOT exists only after collectstatic.
warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")

# --- Mail (optional) ---------------------------------------------------------------------------------
# No mail server is assumed. With EMAIL_HOST set, a reset link a teacher or an administrator makes is
# also mailed to the user (when they have an address), and users may ask for one on the login page
# (accounts/resets.py). Without it nothing is mailed and links are only shown to whoever made them.
EMAIL_HOST = env_str("EMAIL_HOST", "").strip()
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)  # STARTTLS (usually port 587)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)  # TLS from the start (usually port 465)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on (STARTTLS or TLS, not both).")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "CurreChat <noreply@localhost>")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.dummy.EmailBackend"
)

# --- Learning platforms: embedding and LTI 1.3 (kernel/framing.py, lti/) ---------------------
# Origins that may frame the chat pages, e.g. "https://moodle.example.edu,https://school.instructure.com".
# Empty: no page may be framed. Outermost middleware: it sets frame-ancestors after any CSP middleware.
EMBED_ALLOWED_ORIGINS = parse_origins(env_list("EMBED_ALLOWED_ORIGINS", []))
MIDDLEWARE.insert(0, "kernel.framing.FrameAncestorsMiddleware")
if EMBED_ALLOWED_ORIGINS:
    # Inside a frame on another site, browsers send only SameSite=None cookies, and those only when Secure.
    SESSION_COOKIE_SAMESITE = "None"
    CSRF_COOKIE_SAMESITE = "None"
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
# How long a launch's nonce, state and data stay valid (the deep-linking picker must be used within it).
LTI_LAUNCH_TTL_SECONDS = env_int("LTI_LAUNCH_TTL_SECONDS", 3600, minimum=60)
LTI_KEY_SET_CACHE_SECONDS = env_int("LTI_KEY_SET_CACHE_SECONDS", 3600, minimum=1)
LTI_HTTP_TIMEOUT = env_float("LTI_HTTP_TIMEOUT", 5.0, minimum=0.1)

# --- Campus sign-in: OpenID Connect and SAML 2.0 (sso/) -------------------------------------------
# Both are off while their variables are unset, and the app is then exactly as without them.
# OpenID Connect: the issuer's discovery document (<OIDC_ISSUER>/.well-known/openid-configuration)
# names every endpoint; the client is registered there with the redirect URI <site>/sso/oidc/callback/.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").strip().rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "").strip()
OIDC_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET", "")
if OIDC_ISSUER:
    env_url("OIDC_ISSUER", OIDC_ISSUER, schemes=("https", "http"))
    if not OIDC_CLIENT_ID or not OIDC_CLIENT_SECRET:
        raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too.")
OIDC_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
if OIDC_ISSUER and "openid" not in OIDC_SCOPES.split():
    raise ImproperlyConfigured(f"OIDC_SCOPES must include openid (got {OIDC_SCOPES!r}).")
# Which claim holds what (the ID token's `sub` is always the stable subject).
OIDC_CLAIM_NAME = env_str("OIDC_CLAIM_NAME", "name")
OIDC_CLAIM_GIVEN_NAME = env_str("OIDC_CLAIM_GIVEN_NAME", "given_name")
OIDC_CLAIM_FAMILY_NAME = env_str("OIDC_CLAIM_FAMILY_NAME", "family_name")
OIDC_CLAIM_EMAIL = env_str("OIDC_CLAIM_EMAIL", "email")
OIDC_CLAIM_LANGUAGE = env_str("OIDC_CLAIM_LANGUAGE", "locale")
OIDC_CLAIM_AFFILIATION = env_str("OIDC_CLAIM_AFFILIATION", "eduperson_affiliation")
OIDC_CLAIM_GROUPS = env_str("OIDC_CLAIM_GROUPS", "groups")
OIDC_CLAIM_PERSON_ID = env_str("OIDC_CLAIM_PERSON_ID", "")
OIDC_HTTP_TIMEOUT = env_float("OIDC_HTTP_TIMEOUT", 5.0, minimum=0.1)
OIDC_DISCOVERY_CACHE_SECONDS = env_int("OIDC_DISCOVERY_CACHE_SECONDS", 3600, minimum=0)
# SAML 2.0: the IdP's (or federation's) metadata, a file path or an https URL. The SP's metadata is
# served at <site>/sso/saml/metadata/; its key and certificate sign requests and decrypt assertions.
SAML_IDP_METADATA = env_str("SAML_IDP_METADATA", "").strip()
# Who may sign people in: the issuer of every assertion must be one of these, whatever the metadata
# holds (a federation's file lists hundreds of IdPs; it is only where their keys come from).
# SAML_IDP_ENTITY_ID is the university's IdP (sign-in starts there); SAML_IDP_ENTITY_IDS, when a
# deployment trusts several, lists them all. With neither, the metadata must hold exactly one IdP.
SAML_IDP_ENTITY_ID = env_str("SAML_IDP_ENTITY_ID", "").strip()
SAML_IDP_ENTITY_IDS = env_list("SAML_IDP_ENTITY_IDS", [])
if SAML_IDP_ENTITY_ID and SAML_IDP_ENTITY_IDS and SAML_IDP_ENTITY_ID not in SAML_IDP_ENTITY_IDS:
    raise ImproperlyConfigured(
        f"SAML_IDP_ENTITY_ID ({SAML_IDP_ENTITY_ID!r}) must be one of SAML_IDP_ENTITY_IDS ({SAML_IDP_ENTITY_IDS!r}): "
        "sign-in starts at an IdP whose answers are let in."
    )
SAML_SP_ENTITY_ID = env_str("SAML_SP_ENTITY_ID", "").strip()  # default: <site>/sso/saml/metadata/
SAML_SP_KEY_FILE = env_str("SAML_SP_KEY_FILE", "").strip()
SAML_SP_CERT_FILE = env_str("SAML_SP_CERT_FILE", "").strip()
if SAML_IDP_METADATA:
    for _name, _path in (("SAML_SP_KEY_FILE", SAML_SP_KEY_FILE), ("SAML_SP_CERT_FILE", SAML_SP_CERT_FILE)):
        if not _path or not Path(_path).is_file():
            raise ImproperlyConfigured(
                f"SAML_IDP_METADATA is set: {_name} must name the SP's PEM file (got {_path!r})."
            )
    if not SAML_IDP_METADATA.startswith(("https://", "http://")) and not Path(SAML_IDP_METADATA).is_file():
        raise ImproperlyConfigured(
            f"SAML_IDP_METADATA must be a metadata file or an http(s) URL (got {SAML_IDP_METADATA!r})."
        )
# Metadata fetched from a URL is trusted only when signed by this certificate (the federation's).
SAML_IDP_METADATA_CERT = env_str("SAML_IDP_METADATA_CERT", "").strip()
if SAML_IDP_METADATA.startswith(("https://", "http://")) and not Path(SAML_IDP_METADATA_CERT or "-").is_file():
    raise ImproperlyConfigured(
        "SAML_IDP_METADATA is a URL: set SAML_IDP_METADATA_CERT to the PEM certificate its publisher signs it "
        f"with (got {SAML_IDP_METADATA_CERT!r})."
    )
SAML_XMLSEC_BINARY = env_str("SAML_XMLSEC_BINARY", "/usr/bin/xmlsec1")
# The attributes read (by their SAML names, urn:oid or friendly names as the IdP sends them).
SAML_ATTRIBUTE_SUBJECT = env_str("SAML_ATTRIBUTE_SUBJECT", "eduPersonPrincipalName")
SAML_ATTRIBUTE_NAME = env_str("SAML_ATTRIBUTE_NAME", "displayName")
SAML_ATTRIBUTE_GIVEN_NAME = env_str("SAML_ATTRIBUTE_GIVEN_NAME", "givenName")
SAML_ATTRIBUTE_FAMILY_NAME = env_str("SAML_ATTRIBUTE_FAMILY_NAME", "sn")
SAML_ATTRIBUTE_EMAIL = env_str("SAML_ATTRIBUTE_EMAIL", "mail")
SAML_ATTRIBUTE_LANGUAGE = env_str("SAML_ATTRIBUTE_LANGUAGE", "preferredLanguage")
SAML_ATTRIBUTE_AFFILIATION = env_str("SAML_ATTRIBUTE_AFFILIATION", "eduPersonAffiliation")
SAML_ATTRIBUTE_GROUPS = env_str("SAML_ATTRIBUTE_GROUPS", "isMemberOf")
SAML_ATTRIBUTE_PERSON_ID = env_str("SAML_ATTRIBUTE_PERSON_ID", "")
# Both protocols: the button's name, the role mapping (affiliation or group values; a scoped value
# such as faculty@uni.fi counts as faculty), and whether a local account may be linked by address.
SSO_NAME = env_str("SSO_NAME", "your university").strip()
SSO_TEACHER_VALUES = env_list("SSO_TEACHER_VALUES", ["faculty", "staff", "teacher"])
SSO_STUDENT_VALUES = env_list("SSO_STUDENT_VALUES", ["student"])  # empty: everyone else is a student
SSO_STAFF_GROUPS = env_list("SSO_STAFF_GROUPS", [])  # empty: the admin flag is never changed by sign-in
SSO_LINK_VERIFIED_EMAIL = env_bool("SSO_LINK_VERIFIED_EMAIL", False)
SSO_PASSWORD_URL = env_str("SSO_PASSWORD_URL", "").strip()  # where the university's passwords are changed
# Who may still sign in with a CurreChat password: all, staff (everyone but students) or off
# (superusers only, as a way in when the identity provider is down).
LOCAL_LOGIN = env_str("LOCAL_LOGIN", "all").strip().lower()
if LOCAL_LOGIN not in ("all", "staff", "off"):
    raise ImproperlyConfigured(f"LOCAL_LOGIN must be all, staff or off (got {LOCAL_LOGIN!r}).")
if LOCAL_LOGIN != "all" and not (OIDC_ISSUER or SAML_IDP_METADATA):
    raise ImproperlyConfigured(
        f"LOCAL_LOGIN={LOCAL_LOGIN} needs campus sign-in: set OIDC_ISSUER or SAML_IDP_METADATA, or LOCAL_LOGIN=all."
    )
# Invitations to co-teach (accounts/invitations.py): whether an account made on one is a full teacher's
# (off: a co-teacher of that one prompt or collection, Role.GUEST), and how many days a link stays valid.
TEACHER_INVITATIONS = env_bool("TEACHER_INVITATIONS", False)
TEACHER_INVITATION_DAYS = env_int("TEACHER_INVITATION_DAYS", 14, minimum=1)
# The OpenID Connect backend is always listed: it answers only the callback's code exchange, and
# while OIDC_ISSUER is unset it authenticates nobody.
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "sso.oidc.Backend"]
INSTALLED_APPS.append("sso")
