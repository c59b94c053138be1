"""The university's OpenID Provider for the tests: npm's certified `oidc-provider`, run by Node on a
loopback port (tests/oidc_provider.mjs), and a person's browser going through its login page.

The browser's part is played by two HTTP clients: Django's test client for CurreChat's pages and a
`requests` session (with its own cookies) for the provider's. Everything between CurreChat and the
provider (discovery, the key set, the code exchange, userinfo) is real HTTP on loopback.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
from django.test import Client

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "oidc_provider.mjs"
CLIENT_ID = "currechat-test"
CLIENT_SECRET = "test-secret-of-currechat-client"


def account(login: str, affiliation: str, **claims: Any) -> dict[str, Any]:
    """A person in the provider's directory (password: "<login>-pw")."""
    first = login.capitalize()
    values = {
        "sub": f"{login}-subject-0001",
        "name": f"{first} Virtanen",
        "given_name": first,
        "family_name": "Virtanen",
        "email": f"{login}@uni.example",
        "email_verified": True,
        "eduperson_affiliation": [affiliation, "member"],
    }
    values.update(claims)
    return {"password": f"{login}-pw", "claims": values}


@dataclass
class SignIn:
    response: Any
    callback: str
    browser: requests.Session


@dataclass
class OpenIdProvider:
    """One provider process; `stop()` ends it."""

    app_url: str = "http://testserver"
    issuer: str = ""
    process: subprocess.Popen | None = None
    accounts: dict[str, Any] = field(default_factory=dict)

    def start(self) -> OpenIdProvider:
        node = shutil.which("node")
        if node is None or not (ROOT / "node_modules" / "oidc-provider").is_dir():
            raise RuntimeError(
                "The OpenID Connect tests need Node and npm's oidc-provider: run `npm ci` (make test does)."
            )
        client = {
            "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET,
            "redirect_uris": [f"{self.app_url}/sso/oidc/callback/"],
            "post_logout_redirect_uris": [f"{self.app_url}/login/"],
        }
        self.process = subprocess.Popen(
            [node, str(SCRIPT), json.dumps(client)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # printed once it listens: no waiting on the clock
        if not line:
            raise RuntimeError(f"the OpenID Provider exited with {self.process.wait()}")
        self.issuer = json.loads(line)["issuer"]
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def settings(self) -> dict[str, Any]:
        """The environment's settings for CurreChat to use this provider."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_CLIENT_ID": CLIENT_ID,
            "OIDC_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_SCOPES": "openid email profile affiliation",
            "SSO_NAME": "Example University",
        }

    # --- the test's hands on the provider ---------------------------------------------------------
    def set_accounts(self, *people: tuple[str, dict[str, Any]]) -> None:
        self.accounts = dict(people)
        requests.post(f"{self.issuer}/__test/accounts", json=self.accounts, timeout=5).raise_for_status()

    def spoil_next_token(self, mode: str) -> None:
        requests.post(f"{self.issuer}/__test/mischief", json={"mode": mode}, timeout=5).raise_for_status()

    # --- a person's browser ------------------------------------------------------------------------
    def authorize(
        self, client: Client, start: str = "/sso/oidc/start/", browser: requests.Session | None = None
    ) -> tuple[str, requests.Session]:
        """Follow CurreChat's start URL to the provider's login page; returns that page's address."""
        response = client.get(start)
        assert response.status_code == 302, response.content[:500]
        browser = browser or requests.Session()
        location = response["Location"]
        assert location.startswith(self.issuer), location
        while True:
            answer = browser.get(location, allow_redirects=False, timeout=10)
            if answer.status_code not in (302, 303):
                assert answer.status_code == 200 and "University sign-in" in answer.text, answer.text[:500]
                return location, browser
            location = _absolute(self.issuer, answer.headers["Location"])

    def log_in_at_provider(self, login_page: str, browser: requests.Session, login: str, password: str) -> str:
        """Submit the provider's login form; returns CurreChat's callback address it sends back to."""
        location = _absolute(self.issuer, urlsplit(login_page).path + "/login")
        answer = browser.post(location, data={"login": login, "password": password}, allow_redirects=False, timeout=10)
        while answer.status_code in (302, 303):
            location = _absolute(self.issuer, answer.headers["Location"])
            if location.startswith(self.app_url):
                return location
            answer = browser.get(location, allow_redirects=False, timeout=10)
        raise AssertionError(f"the provider did not send the browser back: {answer.status_code} {answer.text[:300]}")

    def sign_in(self, client: Client, login: str, *, start: str = "/sso/oidc/start/", password: str = "") -> SignIn:
        """The whole sign-in: CurreChat's answer to the callback, the callback's address, and the
        provider's side of the browser (its session cookie)."""
        login_page, browser = self.authorize(client, start)
        callback = self.log_in_at_provider(login_page, browser, login, password or f"{login}-pw")
        return SignIn(client.get(callback.removeprefix(self.app_url)), callback, browser)

    def end_session(self, location: str, browser: requests.Session) -> str:
        """RP-initiated logout at the provider: confirm on its page; returns where it sends back to."""
        page = browser.get(location, timeout=10)
        assert page.status_code == 200 and "Sign out of the university?" in page.text, page.text[:300]
        action = page.text.split('action="', 1)[1].split('"', 1)[0]
        xsrf = page.text.split('name="xsrf" value="', 1)[1].split('"', 1)[0]
        answer = browser.post(
            _absolute(self.issuer, action), data={"xsrf": xsrf, "logout": "yes"}, allow_redirects=False, timeout=10
        )
        assert answer.status_code in (302, 303), answer.text[:300]
        return answer.headers["Location"]


def _absolute(base: str, location: str) -> str:
    return location if "://" in location else base + location


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
