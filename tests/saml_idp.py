"""A university's SAML 2.0 Identity Provider for the tests: pysaml2's own IdP (`saml2.server.Server`)
behind a small HTTP server on loopback, with a login page of its own (username and password).

It reads CurreChat's SP metadata from its stable URL, answers AuthnRequests (HTTP-Redirect) with
assertions signed by its key through Debian's xmlsec1, and sends the browser back with the
HTTP-POST binding's form. `spoil_next(mode)` makes the next answer one a hostile or broken IdP or
network would send: unsigned, tampered after signing, expired, for another audience or recipient
(or for our ACS on the unsigned envelope only), for no audience at all, or with another issuer
written on the unsigned Response envelope.

A second instance is another member of the same federation: `federation_metadata()` writes both
entity descriptors into one metadata file, as a national federation's file lists every IdP.
"""

from __future__ import annotations

import datetime
import html
import http.server
import re
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import saml2
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from django.test import Client
from saml2.assertion import Policy
from saml2.authn_context import PASSWORD
from saml2.config import IdPConfig
from saml2.metadata import entities_descriptor, entity_descriptor, sign_entity_descriptor
from saml2.saml import NAME_FORMAT_URI, NAMEID_FORMAT_PERSISTENT, NameID
from saml2.samlp import authn_request_from_string
from saml2.server import Server
from saml2.sigver import security_context

XMLSEC = "/usr/bin/xmlsec1"


def key_pair(directory: Path, name: str) -> tuple[str, str]:
    """A new RSA key and a self-signed certificate for it, as PEM files (key path, cert path)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )
    key_path, cert_path = directory / f"{name}.key", directory / f"{name}.crt"
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(key_path), str(cert_path)


def person(login: str, affiliation: str, **attributes: Any) -> dict[str, Any]:
    """A person in the IdP's directory (password "<login>-pw"), with HAKA-style attributes."""
    first = login.capitalize()
    values = {
        "eduPersonPrincipalName": [f"{login}@uni.example"],
        "displayName": [f"{first} Korhonen"],
        "givenName": [first],
        "sn": ["Korhonen"],
        "mail": [f"{login}@uni.example"],
        "preferredLanguage": ["fi"],
        "eduPersonAffiliation": [affiliation, "member"],
    }
    values.update(attributes)
    return {"password": f"{login}-pw", "attributes": values}


@dataclass
class IdentityProvider:
    directory: Path
    name: str = "idp"  # its files' names: two IdPs may share a directory
    accounts: dict[str, Any] = field(default_factory=dict)
    url: str = ""
    mischief: str = ""
    envelope_issuer: str = ""
    # A member run by someone hostile answers a request CurreChat sent to another IdP, as if to it.
    answers_others_requests: bool = False
    pending: dict[str, tuple[Any, str]] = field(default_factory=dict)
    servers: dict[str, Server] = field(default_factory=dict)

    def start(self) -> IdentityProvider:
        self.key, self.cert = key_pair(self.directory, self.name)
        self.sp_key, self.sp_cert = key_pair(self.directory, f"{self.name}-sp")
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.entity_id = f"{self.url}/idp/metadata"
        self.metadata_file = self.directory / f"{self.name}-metadata.xml"
        self.metadata_file.write_text(str(self.descriptor()))
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def settings(self) -> dict[str, Any]:
        return {
            "SAML_IDP_METADATA": str(self.metadata_file),
            "SAML_SP_KEY_FILE": self.sp_key,
            "SAML_SP_CERT_FILE": self.sp_cert,
            "SSO_NAME": "Example University",
        }

    def _config(self, metadata: Path | None, lifetime_minutes: int = 15) -> IdPConfig:
        config = IdPConfig()
        config.load(
            {
                "entityid": self.entity_id,
                "xmlsec_binary": XMLSEC,
                "key_file": self.key,
                "cert_file": self.cert,
                "service": {
                    "idp": {
                        "name": "Example University IdP",
                        "endpoints": {
                            "single_sign_on_service": [(f"{self.url}/sso/redirect", saml2.BINDING_HTTP_REDIRECT)]
                        },
                        "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                        "policy": _policy(lifetime_minutes),
                    }
                },
                "metadata": {"local": [str(metadata)]} if metadata else {},
            }
        )
        return config

    def descriptor(self):
        return entity_descriptor(self._config(metadata=None))

    def signed_metadata(self) -> str:
        """The IdP's metadata signed with its own key (a federation signs with its own)."""
        config = self._config(metadata=None)
        _descriptor, xml = sign_entity_descriptor(entity_descriptor(config), None, security_context(config))
        return xml

    def trust(self, client: Client) -> None:
        """Read CurreChat's SP metadata from its stable URL, as a federation's registry would."""
        response = client.get("/sso/saml/metadata/")
        assert response.status_code == 200, response.content[:300]
        sp_metadata = self.directory / f"{self.name}-sp-metadata.xml"
        sp_metadata.write_bytes(response.content)
        self.servers = {
            "": Server(config=self._config(sp_metadata)),
            "expired": Server(config=self._config(sp_metadata, lifetime_minutes=-10)),
        }

    def set_accounts(self, *people: tuple[str, dict[str, Any]]) -> None:
        self.accounts = dict(people)

    def spoil_next(self, mode: str, *, envelope_issuer: str = "") -> None:
        """`envelope`: write `envelope_issuer` on the Response around the assertion this IdP signs."""
        self.mischief, self.envelope_issuer = mode, envelope_issuer

    # --- the IdP's side ---------------------------------------------------------------------------
    def login_page(self, query: dict[str, str]) -> str:
        server = self.servers[""]
        if self.answers_others_requests:  # read without checking that it was sent here
            xml = server.unravel(query["SAMLRequest"], saml2.BINDING_HTTP_REDIRECT, "authn_request")
            message = authn_request_from_string(xml)
        else:
            message = server.parse_authn_request(query["SAMLRequest"], saml2.BINDING_HTTP_REDIRECT).message
        key = secrets.token_urlsafe(16)
        self.pending[key] = (message, query.get("RelayState", ""))
        return _page(
            "University sign-in",
            f'<form method="post" action="/login"><input type="hidden" name="key" value="{key}">'
            '<label for="login">Username</label><input id="login" name="login" autocomplete="username" required>'
            '<label for="password">Password</label><input id="password" name="password" type="password" required>'
            '<button type="submit">Sign in</button></form>',
        )

    def answer(self, form: dict[str, str]) -> tuple[int, str]:
        account = self.accounts.get(form.get("login", ""))
        if account is None or account["password"] != form.get("password"):
            return 401, _page("University sign-in", '<p role="alert">Wrong username or password.</p>')
        message, relay_state = self.pending.pop(form["key"])
        mode, self.mischief = self.mischief, ""
        server = self.servers["expired" if mode == "expired" else ""]
        args = server.response_args(message, [saml2.BINDING_HTTP_POST])
        destination = args["destination"]
        if mode == "audience":
            args["sp_entity_id"] = "https://another-service.example/sp"
        if mode in ("recipient", "signed-recipient"):
            args["destination"] = "https://another-service.example/acs"
        if mode == "no-audience":
            args["release_policy"] = _NoAudience(_policy(15), server.metadata)
        response = server.create_authn_response(
            identity=account["attributes"],
            userid=form["login"],
            name_id=NameID(format=NAMEID_FORMAT_PERSISTENT, text=f"{form['login']}-persistent-id"),
            authn={"class_ref": PASSWORD, "authn_auth": self.entity_id},
            sign_assertion=mode != "unsigned",
            sign_response=False,
            **args,
        )
        xml = str(response)
        if mode == "tamper":  # a student makes themself faculty after the IdP signed the assertion
            xml = xml.replace(">student<", ">faculty<")
        if mode == "signed-recipient":  # the unsigned envelope names our ACS again, the assertion not
            xml = xml.replace('Destination="https://another-service.example/acs"', f'Destination="{destination}"', 1)
        if mode == "envelope":  # the Response's own Issuer comes first and is not signed
            xml = re.sub(r"(<(?:\w+:)?Issuer\b[^>]*>)[^<]*(<)", rf"\g<1>{self.envelope_issuer}\g<2>", xml, count=1)
        http_args = server.apply_binding(saml2.BINDING_HTTP_POST, xml, destination, relay_state, response=True)
        return 200, http_args["data"]

    # --- a person's browser ------------------------------------------------------------------------
    def sign_in(
        self,
        client: Client,
        login: str,
        *,
        start: str = "/sso/saml/start/",
        password: str = "",
        answered_by: IdentityProvider | None = None,
    ) -> SamlSignIn:
        """From CurreChat's start through the IdP's login page back to the ACS, as a browser would."""
        answer = self.answer_for(client, login, start=start, password=password, answered_by=answered_by)
        return SamlSignIn(client.post(answer.acs, answer.post), answer.acs, answer.post)

    def answer_for(
        self,
        client: Client,
        login: str,
        *,
        start: str = "/sso/saml/start/",
        password: str = "",
        answered_by: IdentityProvider | None = None,
    ) -> SamlAnswer:
        """The IdP's answer as the browser would post it to the ACS, not posted yet. `answered_by`:
        the AuthnRequest CurreChat sent to this IdP is taken to another IdP of the federation, as
        someone who runs that one (or signed in there) would."""
        import requests

        response = client.get(start)
        assert response.status_code == 302 and response["Location"].startswith(self.url), response.content[:300]
        browser = requests.Session()
        idp = answered_by or self
        page = browser.get(response["Location"].replace(self.url, idp.url, 1), timeout=10)
        assert page.status_code == 200 and "University sign-in" in page.text, page.text[:300]
        key = re.search(r'name="key" value="([^"]+)"', page.text)
        assert key is not None
        answer = browser.post(
            f"{idp.url}/login",
            data={"key": key.group(1), "login": login, "password": password or f"{login}-pw"},
            timeout=10,
        )
        assert answer.status_code == 200, answer.text[:300]
        fields = dict(re.findall(r'name="(SAMLResponse|RelayState)" value="([^"]*)"', answer.text))
        action = html.unescape(re.search(r'action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
        return SamlAnswer(urlsplit(action).path, {k: html.unescape(v) for k, v in fields.items()})


@dataclass
class SamlAnswer:
    acs: str
    post: dict[str, str]


@dataclass
class SamlSignIn:
    response: Any
    acs: str
    post: dict[str, str]


def federation_metadata(path: Path, *idps: IdentityProvider) -> Path:
    """One metadata file listing every IdP given, as a federation publishes its members."""
    entities, _xml = entities_descriptor(
        [idp.descriptor() for idp in idps], None, "urn:test:federation", None, False, None
    )
    path.write_text(str(entities))
    return path


def _policy(lifetime_minutes: int) -> dict[str, Any]:
    return {
        "default": {
            "lifetime": {"minutes": lifetime_minutes},
            "attribute_restrictions": None,
            "name_form": NAME_FORMAT_URI,
        }
    }


class _NoAudience(Policy):
    """An IdP that says for whom its assertions are through nothing: Conditions without an Audience."""

    def conditions(self, sp_entity_id):
        conditions = super().conditions(sp_entity_id)
        conditions.audience_restriction = []
        return conditions


def _page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>'
        f"<body><main><h1>{title}</h1>{body}</main></body></html>"
    )


def _handler(idp: IdentityProvider):
    class Handler(http.server.BaseHTTPRequestHandler):
        def _send(self, status: int, body: str) -> None:
            data = body.encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):  # noqa: N802 (the standard library's name)
            url = urlsplit(self.path)
            if url.path == "/sso/redirect":
                self._send(200, idp.login_page({k: v[0] for k, v in parse_qs(url.query).items()}))
            elif url.path == "/idp/metadata":  # signed, at its entity ID, as federations publish it
                self._send(200, idp.signed_metadata())
            else:
                self._send(404, "not found")

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            self._send(*idp.answer(form))

        def log_message(self, *args):
            pass

    return Handler
