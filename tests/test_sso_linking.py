"""Linking a campus sign-in to an existing local account by e-mail (SSO_LINK_VERIFIED_EMAIL), only
through an address its owner proved to CurreChat: a link CurreChat mails (the real worker, a real
SMTP server on loopback: tests/fake_smtp.py) and the owner follows, signed in. A typed address
links nothing; once linked, the account's old password, API tokens and sessions open nothing. The
provider is the certified test OpenID provider (tests/oidc_op.py)."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.models import ApiToken, Role, User
from sso.config import forget_discovery
from sso.models import SsoIdentity
from tests.conftest import PASSWORD
from tests.fake_smtp import SmtpServer
from tests.oidc_op import account


@pytest.fixture
def oidc(provider, settings, db):
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    settings.SSO_LINK_VERIFIED_EMAIL = True
    forget_discovery()
    provider.set_accounts(("tiina", account("tiina", "faculty")), ("sami", account("sami", "student")))
    yield provider
    forget_discovery()


@pytest.fixture
def smtp(settings):
    server = SmtpServer().start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = server.port
    yield server.inbox
    server.stop()


@pytest.fixture
def tiina(db) -> User:
    """A teacher's local account from before campus sign-in, with a password and an API token."""
    return User.objects.create_user("tiina-local", password=PASSWORD, role=Role.TEACHER)


def signed_in(user: User) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def save_address(client: Client, address: str) -> None:
    """Type `address` on the profile page (it asks for one only with a mail server configured)."""
    response = client.post("/account/profile/", {"save_name": "1", "first_name": "Tiina", "email": address})
    assert response.status_code == 302, response.content[:500]
    assert response.wsgi_request.user.email == address


def mailed_link(client: Client, smtp, run_worker) -> str:
    """Ask for a confirmation link on the profile page; the worker mails it; returns its path."""
    before = len(smtp.messages)
    page = client.post("/account/profile/confirm-address/", follow=True).content.decode()
    assert "A confirmation link is on its way to" in page
    assert len(smtp.messages) == before, "the worker mails it, not the page"
    run_worker()
    assert len(smtp.messages) == before + 1
    body = smtp.bodies()[-1]
    return re.search(r"http://testserver(/account/confirm-address/\S+/)", body).group(1)  # type: ignore[union-attr]


def confirm_by_mail(client: Client, smtp, run_worker) -> str:
    link = mailed_link(client, smtp, run_worker)
    assert 'data-testid="confirm-address"' in client.get(link).content.decode()
    assert client.post(link).status_code == 302
    return link


def campus_user(login: str) -> User:
    return SsoIdentity.objects.select_related("user").get(subject=f"{login}-subject-0001").user


def api_status(raw: str) -> int:
    return Client().get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code


# --- what links and what does not ------------------------------------------------------------------


def test_a_typed_unconfirmed_address_links_nothing(oidc, tiina, smtp):
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    oidc.sign_in(Client(), "tiina")
    assert campus_user("tiina") != tiina, "a new account of its own"
    assert signed_in(tiina), "the local account is untouched"


def test_an_address_an_administrator_set_links_nothing(oidc, tiina, admin_user, client_for):
    form = {
        "username": tiina.username, "email": "tiina@uni.example", "role": "teacher", "is_active": "on",
        "date_joined_0": "2026-01-01", "date_joined_1": "00:00:00",
    }  # fmt: skip
    assert client_for(admin_user).post(f"/admin/accounts/user/{tiina.pk}/change/", form).status_code == 302
    tiina.refresh_from_db()
    assert tiina.email == "tiina@uni.example" and not tiina.email_confirmed
    oidc.sign_in(Client(), "tiina")
    assert campus_user("tiina") != tiina


def test_a_confirmed_address_links_and_the_old_password_token_and_sessions_open_nothing(oidc, tiina, smtp, run_worker):
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    confirm_by_mail(owner_browser, smtp, run_worker)
    assert 'data-testid="address-confirmed"' in owner_browser.get("/account/profile/").content.decode()
    made = owner_browser.post("/account/", {"name": "grader", "days": "30"}).content.decode()
    raw = re.search(r"cc_[A-Za-z0-9_-]{20,}", made).group(0)  # type: ignore[union-attr]
    assert api_status(raw) == 200

    campus_browser = Client()
    assert oidc.sign_in(campus_browser, "tiina").response.status_code == 302
    assert campus_user("tiina") == tiina, "linked through the confirmed address"
    assert campus_browser.get("/account/").wsgi_request.user == tiina

    assert api_status(raw) == 401 and not ApiToken.objects.filter(user=tiina).exists()
    refused = Client().post("/login/", {"username": tiina.username, "password": PASSWORD})
    assert refused.status_code != 302 and not refused.wsgi_request.user.is_authenticated
    old = owner_browser.get("/account/")
    assert old.status_code == 302 and "/login/" in old["Location"], "the session from before is over"


def test_the_confirmation_link_works_once(oidc, tiina, smtp, run_worker):
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    link = confirm_by_mail(owner_browser, smtp, run_worker)
    for method in (owner_browser.get, owner_browser.post):
        again = method(link)
        assert again.status_code == 400 and 'data-testid="confirm-invalid"' in again.content.decode()


def test_an_expired_link_confirms_nothing(oidc, tiina, smtp, run_worker, settings):
    from accounts.confirmation import address_tokens

    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    mailed_link(owner_browser, smtp, run_worker)
    tiina.refresh_from_db()
    # The link a mail of a few days ago carries: made with a timestamp past PASSWORD_RESET_TIMEOUT.
    then = address_tokens._num_seconds(address_tokens._now()) - settings.PASSWORD_RESET_TIMEOUT - 60
    token = address_tokens._make_token_with_timestamp(tiina, then, address_tokens.secret)
    old = f"/account/confirm-address/{urlsafe_base64_encode(force_bytes(tiina.pk))}/{token}/"
    assert owner_browser.post(old).status_code == 400
    tiina.refresh_from_db()
    assert not tiina.email_confirmed
    oidc.sign_in(Client(), "tiina")
    assert campus_user("tiina") != tiina


def test_changing_the_address_drops_the_confirmation_and_spends_the_links(oidc, tiina, smtp, run_worker):
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    confirm_by_mail(owner_browser, smtp, run_worker)
    save_address(owner_browser, "tiina.v@uni.example")
    pending = mailed_link(owner_browser, smtp, run_worker)
    save_address(owner_browser, "tiina@uni.example")  # back to the address confirmed before
    tiina.refresh_from_db()
    assert tiina.email_confirmed == ""
    assert "is not confirmed yet" in owner_browser.get("/account/profile/").content.decode()
    assert owner_browser.post(pending).status_code == 400, "made for another address"
    oidc.sign_in(Client(), "tiina")
    assert campus_user("tiina") != tiina


def test_a_link_opened_in_another_account_confirms_nothing(oidc, tiina, other_teacher, smtp, run_worker):
    """Someone types another person's address on their own profile and asks for a link: the mail
    goes to that person, whose click, signed in as themselves, must not confirm it."""
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "sami@uni.example")
    link = mailed_link(owner_browser, smtp, run_worker)
    mailbox_owner = signed_in(other_teacher)
    assert mailbox_owner.get(link).status_code == 403
    assert mailbox_owner.post(link).status_code == 403
    anonymous = Client().post(link)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    tiina.refresh_from_db()
    assert not tiina.email_confirmed


def test_a_link_asked_for_an_address_changed_before_the_worker_ran_is_not_mailed(tiina, smtp, run_worker):
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    owner_browser.post("/account/profile/confirm-address/")
    save_address(owner_browser, "tiina.v@uni.example")
    run_worker()
    assert smtp.messages == []


def test_asking_for_links_is_limited(tiina, smtp, settings, run_worker):
    settings.RATE_ADDRESS_CONFIRMATION = (2, 3600)
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "someone@example.org")
    for _ in range(2):
        assert owner_browser.post("/account/profile/confirm-address/").status_code == 302
    refused = owner_browser.post("/account/profile/confirm-address/")
    assert refused.status_code == 429 and "Too many confirmation links" in refused.content.decode()
    run_worker()
    assert len(smtp.messages) == 2


def test_a_link_of_an_account_deactivated_since_confirms_nothing(tiina, smtp, run_worker):
    owner_browser = signed_in(tiina)
    save_address(owner_browser, "tiina@uni.example")
    link = mailed_link(owner_browser, smtp, run_worker)
    User.objects.filter(pk=tiina.pk).update(is_active=False)
    refused = owner_browser.post(link)
    assert refused.status_code == 302 and "/login/" in refused["Location"]
    tiina.refresh_from_db()
    assert not tiina.email_confirmed
