"""A learning platform for the tests: its own RSA key, signing id_tokens the way Moodle or Canvas do.

It drives the tool through the real OIDC flow with a Django test client: login initiation at the
tool, the redirect to the platform's auth endpoint (whose state and nonce it reads back), then the
form post of the signed id_token to the tool's launch URL. No network: the key set is registered
inline, or served from a loopback HTTP server (`serve_jwks`).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.test import Client
from jwcrypto.jwk import JWK

from lti.models import Platform

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def new_private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


@dataclass
class Login:
    """What the tool sent the browser to the platform with."""

    state: str
    nonce: str
    redirect_uri: str
    params: dict[str, str]


@dataclass
class TestPlatform:
    __test__ = False  # a helper, not a test class

    issuer: str = "https://lms.example.test"
    client_id: str = "currechat-client-1"
    deployment_id: str = "deployment-1"
    auth_login_url: str = "https://lms.example.test/mod/lti/auth.php"
    kid: str = "platform-key-1"
    key: rsa.RSAPrivateKey = field(default_factory=new_private_key)

    def jwks(self) -> dict[str, Any]:
        jwk = json.loads(
            JWK.from_pem(
                self.key.public_key().public_bytes(
                    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
                )
            ).export_public()
        )
        jwk.update({"kid": self.kid, "alg": "RS256", "use": "sig"})
        return {"keys": [jwk]}

    def register(self, *, inline_keys: bool = True, key_set_url: str = "", **fields: Any) -> Platform:
        """The administrator's registration of this platform in CurreChat's admin."""
        values = {
            "name": "Test LMS",
            "issuer": self.issuer,
            "client_id": self.client_id,
            "deployment_ids": [self.deployment_id],
            "auth_login_url": self.auth_login_url,
            "auth_token_url": "https://lms.example.test/mod/lti/token.php",
            "key_set": json.dumps(self.jwks()) if inline_keys else "",
            "key_set_url": key_set_url,
        }
        values.update(fields)
        return Platform.objects.create(**values)

    # --- the OIDC flow ------------------------------------------------------------------------
    def login(self, client: Client, *, issuer: str | None = None, message_hint: str = "hint-1"):
        """Login initiation, as a platform starts it (a GET in the user's browser)."""
        return client.get(
            "/lti/login/",
            {
                "iss": issuer or self.issuer,
                "login_hint": "user-hint",
                "target_link_uri": "http://testserver/lti/launch/",
                "lti_message_hint": message_hint,
                "client_id": self.client_id,
                "lti_deployment_id": self.deployment_id,
            },
        )

    def read_login(self, response) -> Login:
        assert response.status_code == 302, response.content[:500]
        location = urlsplit(response["Location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == self.auth_login_url
        params = {k: v[0] for k, v in parse_qs(location.query).items()}
        assert params["response_type"] == "id_token" and params["scope"] == "openid"
        assert params["client_id"] == self.client_id and params["prompt"] == "none"
        return Login(params["state"], params["nonce"], params["redirect_uri"], params)

    def claims(
        self,
        nonce: str,
        *,
        sub: str = "learner-1",
        roles: tuple[str, ...] = (LEARNER,),
        link_id: str = "link-1",
        custom: dict[str, str] | None = None,
        message_type: str = "LtiResourceLinkRequest",
        lifetime: int = 300,
        **extra: Any,
    ) -> dict[str, Any]:
        now = int(time.time())
        body: dict[str, Any] = {
            "iss": self.issuer,
            "aud": [self.client_id],
            "sub": sub,
            "iat": now,
            "exp": now + lifetime,
            "nonce": nonce,
            "name": "Liisa Learner" if sub.startswith("learner") else "Ilmari Instructor",
            "given_name": "Liisa" if sub.startswith("learner") else "Ilmari",
            "family_name": "Learner" if sub.startswith("learner") else "Instructor",
            "email": f"{sub}@example.test",
            f"{LTI}message_type": message_type,
            f"{LTI}version": "1.3.0",
            f"{LTI}deployment_id": self.deployment_id,
            f"{LTI}roles": list(roles),
            f"{LTI}context": {"id": "course-7", "label": "STAT101", "title": "Statistics 101, autumn"},
            f"{LTI}target_link_uri": "http://testserver/lti/launch/",
        }
        if message_type == "LtiResourceLinkRequest":
            body[f"{LTI}resource_link"] = {"id": link_id, "title": "Ask the course assistant"}
            if custom:
                body[f"{LTI}custom"] = custom
        else:
            body[f"{DL}deep_linking_settings"] = {
                "deep_link_return_url": "https://lms.example.test/mod/lti/contentitem_return.php",
                "accept_types": ["ltiResourceLink"],
                "accept_presentation_document_targets": ["iframe", "window"],
                "data": "opaque-platform-data",
            }
        body.update(extra)
        return body

    def sign(self, body: dict[str, Any], *, key: rsa.RSAPrivateKey | None = None, kid: str | None = None) -> str:
        return jwt.encode(body, _pem(key or self.key), algorithm="RS256", headers={"kid": kid or self.kid})

    def post_id_token(self, client: Client, login: Login, id_token: str):
        return client.post(
            login.redirect_uri.replace("http://testserver", ""), {"id_token": id_token, "state": login.state}
        )

    def launch(self, client: Client, **claim_args: Any):
        """A whole launch: login initiation, then the signed id_token posted back. Returns the response."""
        login = self.read_login(self.login(client))
        return self.post_id_token(client, login, self.sign(self.claims(login.nonce, **claim_args)))


@contextlib.contextmanager
def serve_jwks(platform: TestPlatform) -> Iterator[str]:
    """The platform's key set URL on a loopback HTTP server (yields the URL)."""
    body = json.dumps(platform.jwks()).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/jwks/{uuid.uuid4().hex}"
    finally:
        server.shutdown()
        server.server_close()
