"""LTI Dynamic Registration against the test platform's real HTTP endpoints: the one URL an
administrator pastes into the platform, the pending platform that launches nothing, the approval in
CurreChat's admin, and every registration CurreChat must refuse."""

from __future__ import annotations

import http.server
import threading

import pytest
from django.contrib.auth.models import Permission
from django.test import Client

from accounts.models import Role, User
from lti.models import Platform, PlatformStatus
from lti.provision import CUSTOM_CODE
from tests.lti_platform import TestPlatform, new_private_key
from tests.lti_platform_http import NRPS_SCOPE, TOOL_CONFIG, PlatformServer
from tests.tls_certs import campus_ca

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def platform_key():
    return new_private_key()


@pytest.fixture
def server():
    lms = PlatformServer("dyn-client-1")
    lms.registration_tokens = {"reg-token-1"}
    yield lms
    lms.stop()


def register(server: PlatformServer, token: str = "reg-token-1", config: str | None = None):  # noqa: S107
    query = {"openid_configuration": config or server.openid_configuration, "registration_token": token}
    return Client().get("/lti/register/", query)


def error_of(response) -> str:
    assert response.status_code == 400, response.content[:300]
    html = response.content.decode()
    assert 'data-testid="registration-error"' in html and "lti-registered.js" not in html
    return html


def the_platform(server: PlatformServer, key) -> TestPlatform:
    """The same platform as the tests' launcher, at the server's issuer and with the registered client."""
    lms = TestPlatform(
        issuer=server.base,
        client_id="dyn-client-1",
        deployment_id="deployment-9",
        auth_login_url=f"{server.base}/auth",
        key=key,
    )
    server.platform_jwks = lms.jwks()
    return lms


def test_one_url_registers_a_pending_platform_that_launches_nothing_until_approved(
    server, platform_key, prompt, admin_user, client_for
):
    page = register(server)
    html = page.content.decode()
    assert page.status_code == 200 and "must approve the registration" in html
    assert "js/lti-registered.js" in html  # posts org.imsglobal.lti.close to the platform's page
    assert page["Cross-Origin-Opener-Policy"] == "unsafe-none"  # opened in a window, it can reach its opener

    [sent] = server.registrations
    assert sent["redirect_uris"] == ["http://testserver/lti/launch/"]
    assert sent["initiate_login_uri"] == "http://testserver/lti/login/"
    assert sent["jwks_uri"] == "http://testserver/lti/jwks/" and sent["client_name"] == "CurreChat"
    assert NRPS_SCOPE in sent["scope"].split() and sent["logo_uri"].endswith("favicon.svg")
    assert {m["type"] for m in sent[TOOL_CONFIG]["messages"]} == {"LtiResourceLinkRequest", "LtiDeepLinkingRequest"}
    platform = Platform.objects.get()
    assert (platform.status, platform.issuer, platform.client_id) == (
        PlatformStatus.PENDING,
        server.base,
        "dyn-client-1",
    )
    assert platform.deployment_ids == ["deployment-9"] and platform.key_set_url == f"{server.base}/jwks"
    assert platform.auth_token_url == server.token_url

    lms = the_platform(server, platform_key)
    refused = lms.login(Client())
    assert refused.status_code == 403 and 'data-reason="not_approved"' in refused.content.decode()
    assert "has not approved" in refused.content.decode()

    admin = client_for(admin_user)
    answer = admin.post("/admin/lti/platform/", {"action": "approve", "_selected_action": [platform.pk]}, follow=True)
    assert "1 platform approved" in answer.content.decode()
    launched = lms.launch(Client(), custom={CUSTOM_CODE: prompt.join_code})
    assert launched.status_code == 302 and launched["Location"] == f"/prompts/{prompt.pk}/chat/"

    admin.post("/admin/lti/platform/", {"action": "refuse", "_selected_action": [platform.pk]})
    assert 'data-reason="not_approved"' in lms.login(Client()).content.decode()


def test_staff_without_the_platform_permission_cannot_approve(server, client_for):
    register(server)
    staff = User.objects.create_user("staff", password="x", role=Role.TEACHER, is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_platform"))
    platform = Platform.objects.get()
    client_for(staff).post("/admin/lti/platform/", {"action": "approve", "_selected_action": [platform.pk]})
    assert Platform.objects.get().status == PlatformStatus.PENDING
    staff.user_permissions.add(Permission.objects.get(codename="change_platform"))
    client_for(staff).post("/admin/lti/platform/", {"action": "approve", "_selected_action": [platform.pk]})
    assert Platform.objects.get().status == PlatformStatus.APPROVED


def test_a_replayed_registration_token_is_refused(server):
    assert register(server).status_code == 200
    server.registration_tokens.add("reg-token-1")  # even were the platform to accept it again
    assert "already used" in error_of(register(server))
    assert len(server.registrations) == 1 and Platform.objects.count() == 1


def test_a_configuration_naming_an_issuer_on_another_host_is_refused(server):
    server.config_issuer = "https://moodle.other-university.example"
    assert "issuer on another host" in error_of(register(server))
    assert not server.registrations and not Platform.objects.exists()


@pytest.mark.parametrize(
    "config, sentence",
    [
        ("http://lms.example.test/.well-known/openid-configuration", "must start with https://"),
        ("{base}/nrps/not-a-configuration", "answered with an error"),
        ("", "open it from the platform"),
    ],
)
def test_forged_registrations_are_refused(server, config, sentence):
    response = register(server, config=config.format(base=server.base) or " ")
    assert sentence in error_of(response)
    assert not Platform.objects.exists()


def test_a_token_the_platform_did_not_issue_registers_nothing(server):
    assert "answered with an error (status 401)" in error_of(register(server, token="made-up"))
    assert not Platform.objects.exists()


def test_a_platform_whose_certificate_is_not_trusted_gets_a_clear_error(tmp_path):
    ca = campus_ca(tmp_path)  # a certificate authority nobody trusts

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    https = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    https.socket = ca.server.wrap_socket(https.socket, server_side=True)
    threading.Thread(target=https.serve_forever, daemon=True).start()
    try:
        url = f"https://127.0.0.1:{https.server_address[1]}/.well-known/openid-configuration"
        html = error_of(Client().get("/lti/register/", {"openid_configuration": url, "registration_token": "t"}))
    finally:
        https.shutdown()
        https.server_close()
    assert "could not check the learning platform&#x27;s certificate" in html
    assert not Platform.objects.exists()
