"""The HTTP side of the test learning platform (tests/lti_platform.py) on a loopback server: its
OpenID configuration, an OAuth 2 token endpoint that checks the tool's signed client assertion
against the tool's key set (RFC 7523), a Names and Role Provisioning memberships endpoint with
paging and a differences link, and an LTI Dynamic Registration endpoint with single-use tokens.

Its members change through `add`, `update` and `drop`; each change gets a version, which is what
the differences link (`?since=V`) lists from. `mode` makes it answer garbage; `stop()` takes it down.

For a browser it also has the pages an LMS shows (tests/browser/test_lti_journey.py): `/tools`, where
its administrator pastes the tool's registration URL and the platform opens it in a window with its
configuration and a fresh registration token; `/course`, whose link starts a launch at the tool's
login initiation; and `/auth`, its OIDC login endpoint, which auto-posts the id_token that
`launcher(nonce)` signs to the tool's launch URL with the state the tool sent.
"""

from __future__ import annotations

import http.server
import json
import threading
import uuid
from collections.abc import Callable
from html import escape
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt

NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
TOOL_CONFIG = "https://purl.imsglobal.org/spec/lti-tool-configuration"
PLATFORM_CONFIG = "https://purl.imsglobal.org/spec/lti-platform-configuration"


class PlatformServer:
    def __init__(self, client_id: str, *, page_size: int = 2, issuer: str = "") -> None:
        self.client_id = client_id
        self.page_size = page_size
        self.members: dict[str, dict[str, Any]] = {}
        self.changed: dict[str, int] = {}  # user_id -> version of its last change
        self.version = 0
        self.tool_jwks: dict[str, Any] = {"keys": []}  # what the tool registered (its jwks_uri's content)
        self.tokens: set[str] = set()
        self.jtis: set[str] = set()
        self.refused: list[str] = []  # why each refused token request was refused
        self.registration_tokens: set[str] = set()
        self.registrations: list[dict[str, Any]] = []
        self.mode = "ok"  # or "garbage"
        self.platform_jwks: dict[str, Any] = {"keys": []}  # the platform's own public keys (its jwks_uri)
        self.config_issuer = issuer  # what the OpenID configuration claims as issuer ("" = its own origin)
        self.launcher: Callable[[str], str] | None = None  # nonce -> signed id_token (the browser launch)
        self.login_hint = "user-hint"
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    # --- what the tests change ---------------------------------------------------------------
    def add(self, user_id: str, role: str, name: str, **extra: Any) -> None:
        given, _, family = name.partition(" ")
        self.members[user_id] = {
            "user_id": user_id,
            "status": "Active",
            "roles": [role],
            "name": name,
            "given_name": given,
            "family_name": family,
            "email": f"{user_id}@example.test",
            **extra,
        }
        self._touch(user_id)

    def update(self, user_id: str, **fields: Any) -> None:
        self.members[user_id].update(fields)
        self._touch(user_id)

    def drop(self, user_id: str) -> None:
        self.members[user_id]["status"] = "Deleted"
        self._touch(user_id)

    def _touch(self, user_id: str) -> None:
        self.version += 1
        self.changed[user_id] = self.version

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def token_url(self) -> str:
        return f"{self.base}/token"

    def memberships_url(self, context: str = "course-7") -> str:
        return f"{self.base}/nrps/{context}"

    @property
    def openid_configuration(self) -> str:
        return f"{self.base}/.well-known/openid-configuration"

    # --- the pages a browser sees ---------------------------------------------------------------
    @staticmethod
    def _page(title: str, body: str, script: str = "") -> str:
        return (
            f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1"></head>'
            f"<body><main><h1>{escape(title)}</h1>{body}</main><script>{script}</script></body></html>"
        )

    def _tools_page(self) -> str:
        """Moodle's "Manage tools": paste the tool URL, "Add tool" opens it with a fresh token."""
        token = uuid.uuid4().hex
        self.registration_tokens.add(token)
        query = json.dumps(urlencode({"openid_configuration": self.openid_configuration, "registration_token": token}))
        form = (
            '<label for="tool-url">Tool URL</label> <input id="tool-url" type="url">'
            ' <button type="button" id="add">Add tool</button>'
            '<p id="status" role="status"></p><button type="button" id="finish" hidden>Finish</button>'
        )
        script = f"""let opened = null;
            document.getElementById("add").onclick = () => {{
              opened = window.open(document.getElementById("tool-url").value + "?" + {query}, "registration");
            }};
            window.addEventListener("message", (event) => {{
              if (event.data && event.data.subject === "org.imsglobal.lti.close") {{
                document.getElementById("status").textContent = "The tool finished its registration.";
                document.getElementById("finish").hidden = false;
              }}
            }});
            document.getElementById("finish").onclick = () => opened && opened.close();"""
        return self._page("Manage tools", form, script)

    def _course_page(self) -> str:
        """A course with the tool's activity: the link is the platform's login initiation."""
        tool = self.registrations[-1]
        query = {
            "iss": self.config_issuer or self.base,
            "login_hint": self.login_hint,
            "target_link_uri": tool["redirect_uris"][0],
            "lti_message_hint": "activity-1",
            "client_id": self.client_id,
            "lti_deployment_id": "deployment-9",
        }
        link = f'<a href="{escape(tool["initiate_login_uri"] + "?" + urlencode(query))}">Ask the course assistant</a>'
        return self._page("Statistics 101, autumn", f"<p>{link}</p>")

    def _auth_page(self, query: dict[str, str]) -> str:
        """The OIDC login endpoint: the signed id_token, posted to the tool as the browser's form."""
        assert self.launcher is not None and query.get("response_mode") == "form_post", query
        fields = {"id_token": self.launcher(query["nonce"]), "state": query["state"]}
        inputs = "".join(f'<input type="hidden" name="{k}" value="{escape(v)}">' for k, v in fields.items())
        form = f'<form method="post" action="{escape(query["redirect_uri"])}">{inputs}<button>Continue</button></form>'
        return self._page("Signing you in to the tool", form, "document.forms[0].submit();")

    # --- the endpoints ---------------------------------------------------------------------------
    def _config(self) -> dict[str, Any]:
        return {
            "issuer": self.config_issuer or self.base,
            "authorization_endpoint": f"{self.base}/auth",
            "token_endpoint": self.token_url,
            "jwks_uri": f"{self.base}/jwks",
            "registration_endpoint": f"{self.base}/register",
            "token_endpoint_auth_methods_supported": ["private_key_jwt"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "scopes_supported": ["openid", NRPS_SCOPE],
            "claims_supported": ["sub", "iss", "name", "given_name", "family_name", "email"],
            PLATFORM_CONFIG: {
                "product_family_code": "moodle",
                "version": "4.5",
                "messages_supported": [{"type": "LtiResourceLinkRequest"}, {"type": "LtiDeepLinkingRequest"}],
            },
        }

    def _token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        def refuse(why: str) -> tuple[int, dict[str, Any]]:
            self.refused.append(why)
            return 400, {"error": "invalid_client", "error_description": why}

        if form.get("grant_type") != "client_credentials" or form.get("client_assertion_type") != ASSERTION_TYPE:
            return refuse("grant")
        if NRPS_SCOPE not in form.get("scope", "").split():
            return refuse("scope")
        assertion = form.get("client_assertion", "")
        try:
            kid = jwt.get_unverified_header(assertion).get("kid")
            jwk = next(k for k in self.tool_jwks["keys"] if k.get("kid") == kid)
            body = jwt.decode(
                assertion,
                jwt.PyJWK(jwk).key,
                algorithms=["RS256"],
                audience=self.token_url,
                options={"require": ["exp", "iat", "jti"]},
            )
        except (jwt.PyJWTError, StopIteration, ValueError) as exc:
            return refuse(f"assertion: {type(exc).__name__}")
        if body.get("iss") != self.client_id or body.get("sub") != self.client_id:
            return refuse("client")
        if body["jti"] in self.jtis:
            return refuse("replayed")
        self.jtis.add(body["jti"])
        token = uuid.uuid4().hex
        self.tokens.add(token)
        return 200, {"access_token": token, "token_type": "bearer", "expires_in": 3600, "scope": NRPS_SCOPE}

    def _memberships(self, path: str, query: dict[str, str], auth: str) -> tuple[int, Any, dict[str, str]]:
        if auth.removeprefix("Bearer ") not in self.tokens:
            return 401, {"error": "invalid_token"}, {}
        if self.mode == "garbage":
            return 200, "<html><body>Maintenance</body></html>", {}
        base = f"{self.base}{path}"
        if "since" in query:
            since = int(query["since"])
            rows = [self.members[u] for u, v in self.changed.items() if v > since]
        else:
            rows = [m for m in self.members.values() if m["status"] != "Deleted"]
        page = int(query.get("page", "0"))
        chunk = rows[page * self.page_size : (page + 1) * self.page_size]
        links = [f'<{base}?since={self.version}>; rel="differences"']
        if (page + 1) * self.page_size < len(rows):
            extra = f"since={query['since']}&" if "since" in query else ""
            links.append(f'<{base}?{extra}page={page + 1}>; rel="next"')
        body = {"id": base, "context": {"id": path.rsplit("/", 1)[-1]}, "members": chunk}
        return 200, body, {"Link": ", ".join(links)}

    def _register(self, auth: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        token = auth.removeprefix("Bearer ")
        if token not in self.registration_tokens:
            return 401, {"error": "invalid_token"}
        self.registration_tokens.discard(token)  # single use
        needed = ("redirect_uris", "initiate_login_uri", "jwks_uri", "client_name", TOOL_CONFIG)
        if any(not body.get(k) for k in needed) or body.get("token_endpoint_auth_method") != "private_key_jwt":
            return 400, {"error": "invalid_client_metadata"}
        self.registrations.append(body)
        answer = dict(body)
        answer["client_id"] = self.client_id
        answer[TOOL_CONFIG] = {**body[TOOL_CONFIG], "deployment_id": "deployment-9"}
        return 200, answer

    def _handler(self):
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if isinstance(body, str) else "application/json")
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self):  # noqa: N802
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path == "/.well-known/openid-configuration":
                    self._send(200, server._config())
                elif url.path == "/jwks":
                    self._send(200, server.platform_jwks)
                elif url.path.startswith("/nrps/"):
                    self._send(*server._memberships(url.path, query, self.headers.get("Authorization", "")))
                elif url.path in ("/tools", "/course"):
                    self._send(200, server._tools_page() if url.path == "/tools" else server._course_page())
                elif url.path == "/auth":
                    self._send(200, server._auth_page(query))
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0") or 0)).decode()
                auth = self.headers.get("Authorization", "")
                if self.path == "/token":
                    self._send(*server._token({k: v[0] for k, v in parse_qs(raw).items()}))
                elif self.path == "/register":
                    self._send(*server._register(auth, json.loads(raw or "{}")))
                else:
                    self._send(404, {"error": "not found"})

            def log_message(self, *args):
                pass

        return Handler
