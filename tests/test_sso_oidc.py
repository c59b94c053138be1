"""Campus sign-in with OpenID Connect against a real, certified provider (npm's oidc-provider on
loopback, tests/oidc_op.py): first sign-ins make teachers and students from their attributes, a
changed affiliation demotes at the next sign-in (an open websocket included), every spoiled or
replayed answer is refused with a sentence and nothing made, the join link signs in first, and
logging out ends the provider's session too."""

from __future__ import annotations

import html
import re

import pytest
from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from accounts.models import Role, User
from chat.models import ChatSession, Enrollment, Message, Prompt
from sso.config import forget_discovery
from sso.models import SsoIdentity
from tests.conftest import PASSWORD
from tests.oidc_op import account, query_of
from tests.websockets import EVENT_SECONDS

TEACHER = ("tiina", "faculty")
STUDENT = ("sami", "student")


@pytest.fixture
def oidc(provider, settings, db):
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    forget_discovery()  # each module's provider listens on a port of its own
    provider.set_accounts(
        ("tiina", account("tiina", "faculty", locale="fi")),
        ("sami", account("sami", "student", locale="sv")),
        ("alli", account("alli", "alum")),
    )
    yield provider
    forget_discovery()


def continue_url(response) -> str:
    """Where the page a join through the university shows moves on to (a meta refresh)."""
    assert response.status_code == 200 and 'data-testid="sso-continue"' in response.content.decode()
    return html.unescape(re.search(r'url=([^"]+)"', response.content.decode()).group(1))  # type: ignore[union-attr]


def identity_user(login: str) -> User:
    return SsoIdentity.objects.select_related("user").get(subject=f"{login}-subject-0001").user


def signed_in_user(client: Client):
    return client.get("/account/").wsgi_request.user


def assert_refused(response, words: str) -> None:
    assert response.status_code in (403, 503), response.content[:400]
    html = response.content.decode()
    assert 'data-testid="sso-refused"' in html and words in html, html[:1500]


# --- the login page ---------------------------------------------------------------------------------


def test_the_login_page_offers_the_university_first(oidc):
    html = Client().get("/login/").content.decode()
    assert "Sign in with Example University" in html
    assert html.index("Sign in with Example University") < html.index('name="password"')
    assert "Your password is managed by Example University" in html
    assert "Forgot your password?" not in html


def form_action(response) -> str:
    return next(d for d in response["Content-Security-Policy"].split(";") if "form-action" in d).strip()


def test_pages_may_send_forms_on_to_the_provider_and_nowhere_else(oidc):
    # Logging out (a form) is redirected to the provider's end-session endpoint; browsers check that.
    assert form_action(Client().get("/login/")) == f"form-action 'self' {oidc.issuer}"


def test_without_oidc_settings_nothing_of_it_is_there(db, settings):
    settings.OIDC_ISSUER = ""
    assert form_action(Client().get("/login/")) == "form-action 'self'"
    html = Client().get("/login/").content.decode()
    assert "Sign in with" not in html and 'data-testid="join-code-box"' in html
    assert Client().get("/sso/oidc/start/").status_code == 404
    assert Client().get("/sso/oidc/callback/?code=x&state=y").status_code == 404


def test_the_start_sends_the_browser_with_state_nonce_and_pkce(oidc):
    response = Client().get("/sso/oidc/start/?next=/account/")
    params = query_of(response["Location"])
    assert response["Location"].startswith(f"{oidc.issuer}/auth?")
    assert params["response_type"] == "code" and params["client_id"] == "currechat-test"
    assert params["code_challenge_method"] == "S256" and len(params["code_challenge"]) >= 43
    assert len(params["state"]) >= 32 and len(params["nonce"]) >= 32
    assert params["redirect_uri"] == "http://testserver/sso/oidc/callback/"


# --- first sign-ins -----------------------------------------------------------------------------------


def test_first_sign_in_makes_a_teacher_from_a_faculty_affiliation(oidc):
    client = Client()
    signed = oidc.sign_in(client, "tiina")
    assert signed.response.status_code == 302 and signed.response["Location"] == "/"
    user = identity_user("tiina")
    assert user.role == Role.TEACHER and user.get_full_name() == "Tiina Virtanen"
    assert user.email == "tiina@uni.example" and user.language == "fi"
    assert not user.has_usable_password()
    assert signed_in_user(client) == user
    home = client.get("/").content.decode()
    assert "/collections/new/" in home and '<html lang="fi">' in home  # a teacher, in their language


def test_first_sign_in_makes_a_student_and_the_next_reuses_the_account(oidc):
    client = Client()
    assert oidc.sign_in(client, "sami").response.status_code == 302
    user = identity_user("sami")
    assert user.role == Role.STUDENT and user.language == "sv"
    assert oidc.sign_in(Client(), "sami").response.status_code == 302
    assert User.objects.filter(sso_identities__isnull=False).count() == 1
    assert client.get("/collections/new/").status_code in (403, 404)


def test_a_person_who_is_neither_student_nor_teacher_is_refused_and_nothing_is_made(oidc):
    signed = oidc.sign_in(Client(), "alli")
    assert_refused(signed.response, "not one of a student or a teacher")
    assert not User.objects.exists()


def test_a_deactivated_account_stays_out(oidc):
    oidc.sign_in(Client(), "sami")
    User.objects.filter(pk=identity_user("sami").pk).update(is_active=False)
    client = Client()
    assert_refused(oidc.sign_in(client, "sami").response, "deactivated")
    assert not signed_in_user(client).is_authenticated


def test_a_changed_name_and_address_are_taken_at_the_next_sign_in(oidc):
    oidc.sign_in(Client(), "sami")
    people = dict(oidc.accounts)
    people["sami"]["claims"].update(family_name="Korhonen", name="Sami Korhonen", email="sami.k@uni.example")
    oidc.set_accounts(*people.items())
    oidc.sign_in(Client(), "sami")
    user = identity_user("sami")
    assert user.get_full_name() == "Sami Korhonen" and user.email == "sami.k@uni.example"


# --- roles at every sign-in -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_a_changed_affiliation_demotes_at_the_next_sign_in_and_the_open_websocket_stops(oidc, ollama):
    from currechat.asgi import application

    client = Client()
    await sync_to_async(oidc.sign_in)(client, "tiina")
    teacher = await database_sync_to_async(identity_user)("tiina")
    prompt = await database_sync_to_async(Prompt.objects.create)(owner=teacher, name="Preview me")
    preview = await database_sync_to_async(ChatSession.objects.create)(prompt=prompt, user=teacher)
    cookie = f"{django_settings.SESSION_COOKIE_NAME}={client.cookies[django_settings.SESSION_COOKIE_NAME].value}"
    ws = WebsocketCommunicator(
        application,
        f"/ws/chats/{preview.pk}/",
        headers=[(b"origin", b"http://127.0.0.1"), (b"cookie", cookie.encode())],
    )
    connected, _ = await ws.connect(timeout=EVENT_SECONDS)
    assert connected

    people = dict(oidc.accounts)
    people["tiina"]["claims"]["eduperson_affiliation"] = ["student", "member"]
    await sync_to_async(oidc.set_accounts)(*people.items())
    await sync_to_async(oidc.sign_in)(Client(), "tiina")  # on another computer

    assert (await database_sync_to_async(identity_user)("tiina")).role == Role.STUDENT
    await ws.send_json_to({"type": "user_message", "content": "Still a teacher?"})
    event = await ws.receive_json_from(timeout=EVENT_SECONDS)
    await ws.disconnect()
    assert event["type"] == "error" and event["code"] == "not_allowed"
    assert not ollama.chat_requests()
    assert not await database_sync_to_async(Message.objects.filter(content="Still a teacher?").exists)()
    page = await sync_to_async(client.get)(f"/prompts/{prompt.pk}/")
    assert page.status_code in (403, 404)


def test_a_group_names_staff_and_losing_it_takes_the_admin_away(oidc, settings):
    settings.SSO_STAFF_GROUPS = ["currechat-admins"]
    people = dict(oidc.accounts)
    people["tiina"]["claims"]["groups"] = ["currechat-admins"]
    oidc.set_accounts(*people.items())
    oidc.sign_in(Client(), "tiina")
    assert identity_user("tiina").is_staff
    people["tiina"]["claims"]["groups"] = []
    oidc.set_accounts(*people.items())
    oidc.sign_in(Client(), "tiina")
    assert not identity_user("tiina").is_staff


# --- answers that are refused ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["tamper", "unsigned", "expired", "audience", "issuer"])
def test_a_spoiled_id_token_is_refused_with_a_sentence_and_nothing_is_made(oidc, mode):
    oidc.spoil_next_token(mode)
    client = Client()
    signed = oidc.sign_in(client, "sami")
    assert_refused(signed.response, "could not be verified")
    assert not User.objects.exists() and not SsoIdentity.objects.exists()
    assert not signed_in_user(client).is_authenticated


def test_a_replayed_callback_is_refused_and_makes_nothing_new(oidc):
    first = oidc.sign_in(Client(), "sami")
    assert first.response.status_code == 302
    path = first.callback.removeprefix(oidc.app_url)
    stranger = Client()
    assert_refused(stranger.get(path), "could not be verified")
    assert not signed_in_user(stranger).is_authenticated
    assert User.objects.count() == 1


def test_a_callback_this_browser_never_started_is_refused(oidc):
    client = Client()
    client.get("/sso/oidc/start/")  # a sign-in of its own, whose state differs
    assert_refused(client.get("/sso/oidc/callback/?code=made-up&state=made-up"), "could not be verified")
    assert not User.objects.exists()


def test_cancelling_at_the_provider_says_so(oidc):
    client = Client()
    state = query_of(client.get("/sso/oidc/start/")["Location"])["state"]
    response = client.get(f"/sso/oidc/callback/?error=access_denied&state={state}")
    assert_refused(response, "cancelled or refused there")


def test_an_error_answer_this_browser_never_asked_for_signs_nobody_out(oidc):
    client = Client()
    oidc.sign_in(client, "sami")
    response = client.get("/sso/oidc/callback/?error=access_denied&state=from-elsewhere")
    assert response.status_code == 403
    assert signed_in_user(client).is_authenticated


def test_an_sso_account_is_told_where_its_password_is_managed(oidc):
    client = Client()
    oidc.sign_in(client, "sami")
    html = client.get("/account/profile/").content.decode()
    assert 'data-testid="passwords-managed"' in html and 'name="old_password"' not in html


def test_an_unreachable_provider_is_a_sentence_not_an_error_page(oidc, settings):
    settings.OIDC_ISSUER = "http://127.0.0.1:9"  # nothing listens on the discard port
    forget_discovery()
    response = Client().get("/sso/oidc/start/")
    assert_refused(response, "cannot be reached right now")
    assert response.status_code == 503


# --- local accounts ----------------------------------------------------------------------------------


def confirmed_local(username: str, address: str) -> User:
    """A local account whose owner confirmed its address (tests/test_sso_linking.py follows the mail)."""
    return User.objects.create_user(username, email=address, email_confirmed=address, password=PASSWORD)


def test_a_local_account_is_linked_only_by_a_verified_address_and_only_when_allowed(oidc, settings):
    local = confirmed_local("sami-local", "SAMI@uni.example")
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") != local  # not allowed: a new account

    User.objects.filter(sso_identities__isnull=False).delete()
    settings.SSO_LINK_VERIFIED_EMAIL = True
    people = dict(oidc.accounts)
    people["sami"]["claims"]["email_verified"] = False
    oidc.set_accounts(*people.items())
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") != local  # an unverified address links nothing

    User.objects.filter(sso_identities__isnull=False).delete()
    people["sami"]["claims"]["email_verified"] = True
    oidc.set_accounts(*people.items())
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") == local


@pytest.mark.parametrize(
    ("mode", "student", "teacher", "superuser"),
    [("all", True, True, True), ("staff", False, True, True), ("off", False, False, True)],
)
def test_local_login_decides_who_may_still_use_a_password(oidc, settings, mode, student, teacher, superuser):
    settings.LOCAL_LOGIN = mode
    User.objects.create_user("stu", password=PASSWORD, role=Role.STUDENT)
    User.objects.create_user("tea", password=PASSWORD, role=Role.TEACHER)
    User.objects.create_superuser("root", password=PASSWORD)
    for name, allowed in (("stu", student), ("tea", teacher), ("root", superuser)):
        client = Client()
        response = client.post("/login/", {"username": name, "password": PASSWORD})
        assert (response.status_code == 302) == allowed, name
        if not allowed:
            assert "Sign in with Example University instead" in response.content.decode()


def test_with_local_login_off_the_password_form_is_for_administrators(oidc, settings):
    settings.LOCAL_LOGIN = "off"
    html = Client().get("/login/").content.decode()
    assert "Administrators: log in with a CurreChat password" in html
    # The admin site's own password form holds to it too.
    User.objects.create_user("staffer", password=PASSWORD, role=Role.TEACHER, is_staff=True)
    refused = Client().post("/admin/login/", {"username": "staffer", "password": PASSWORD, "next": "/admin/"})
    assert refused.status_code == 200 and "Sign in with Example University instead" in refused.content.decode()
    User.objects.create_superuser("root", password=PASSWORD)
    assert Client().post("/admin/login/", {"username": "root", "password": PASSWORD}).status_code == 302


def test_with_sso_on_the_password_pages_say_where_passwords_are_managed(oidc, settings):
    settings.SSO_PASSWORD_URL = "https://password.uni.example/"
    html = Client().get("/password-reset/").content.decode()
    assert "managed by Example University" in html and "https://password.uni.example/" in html
    assert 'name="email"' not in html


# --- the join link and logging out ----------------------------------------------------------------


def test_the_join_link_signs_the_student_in_through_the_provider_then_enrolls(oidc, owner):
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    client = Client()
    page = client.get(f"/join/{prompt.join_code}/").content.decode()
    assert "Sign in with Example University and join" in page
    assert page.index("and join") < page.index('name="password1"')  # LOCAL_LOGIN=all: sign-up stays below
    start = continue_url(client.post(f"/join/{prompt.join_code}/", {"sso": "oidc", "privacy_confirmed": "1"}))
    assert start.startswith("/sso/oidc/start/?next=")
    signed = oidc.sign_in(client, "sami", start=start)
    assert signed.response.status_code == 302 and signed.response["Location"] == f"/join/{prompt.join_code}/"
    landed = client.get(signed.response["Location"])
    assert landed.status_code == 302 and landed["Location"] == f"/prompts/{prompt.pk}/chat/"
    joined = Enrollment.objects.get(prompt=prompt, student=identity_user("sami"))
    assert joined.privacy_confirmed_level == prompt.chat_visibility, "confirmed before leaving for the provider"


def test_with_local_login_staff_the_join_link_makes_no_local_accounts(oidc, owner, settings):
    settings.LOCAL_LOGIN = "staff"
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    client = Client()
    page = client.get(f"/join/{prompt.join_code}/").content.decode()
    assert "Sign in with Example University and join" in page and 'name="password1"' not in page
    post = {
        "username": "newbie",
        "password1": "a-long-pass-123",
        "password2": "a-long-pass-123",
        "privacy_confirmed": "1",
    }
    client.post(f"/join/{prompt.join_code}/", post)
    assert not User.objects.filter(username="newbie").exists()


def test_following_the_join_link_after_an_ordinary_sign_in_does_not_enroll(oidc, owner):
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    client = Client()
    oidc.sign_in(client, "sami")
    assert client.get(f"/join/{prompt.join_code}/").status_code == 200
    assert not Enrollment.objects.filter(prompt=prompt).exists()


def test_logging_out_ends_the_providers_session_too(oidc):
    client = Client()
    signed = oidc.sign_in(client, "sami")
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"].startswith(f"{oidc.issuer}/session/end?")
    params = query_of(out["Location"])
    assert params["post_logout_redirect_uri"] == "http://testserver/login/" and params["id_token_hint"]
    assert not signed_in_user(client).is_authenticated
    back = oidc.end_session(out["Location"], signed.browser)
    assert back == "http://testserver/login/"
    # The same browser signing in again is asked for its password: the provider's session is gone.
    login_page, _browser = oidc.authorize(client, browser=signed.browser)
    assert login_page.startswith(f"{oidc.issuer}/interaction/")


def test_a_local_session_logs_out_as_before(oidc, student):
    client = Client()
    client.force_login(student)
    out = client.post("/logout/")
    assert out.status_code == 302 and out["Location"] == "/login/"


# --- the same person through a learning platform ---------------------------------------------------


@pytest.fixture
def lms(settings):
    from tests.lti_platform import TestPlatform

    platform = TestPlatform()
    platform.register(share_person_id=True)  # off by default (tests/test_lti_sharing.py)
    return platform


def _launch_with_person_id(lms, prompt: Prompt, person_id: str):
    from lti.provision import CUSTOM_CODE
    from tests.lti_platform import LTI

    client = Client()
    extra = {f"{LTI}lis": {"person_sourcedid": person_id}}
    response = lms.launch(client, custom={CUSTOM_CODE: prompt.join_code}, **extra)
    assert response.status_code == 302, response.content[:300]
    return response.wsgi_request.user


def _with_person_id(oidc, person_id: str) -> None:
    people = dict(oidc.accounts)
    people["sami"]["claims"]["person_id"] = person_id
    oidc.set_accounts(*people.items())


def test_a_launch_and_a_sign_in_agreeing_on_the_person_identifier_are_one_account(oidc, lms, owner, settings):
    settings.OIDC_CLAIM_PERSON_ID = "person_id"
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    launched = _launch_with_person_id(lms, prompt, "S12345")
    _with_person_id(oidc, "S12345")
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") == launched
    assert User.objects.filter(role=Role.STUDENT).count() == 1


def test_a_sign_in_first_then_a_launch_reach_the_same_account(oidc, lms, owner, settings):
    settings.OIDC_CLAIM_PERSON_ID = "person_id"
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    _with_person_id(oidc, "S12345")
    oidc.sign_in(Client(), "sami")
    assert _launch_with_person_id(lms, prompt, "S12345") == identity_user("sami")


def test_without_a_named_person_identifier_launch_and_sign_in_stay_apart(oidc, lms, owner):
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    launched = _launch_with_person_id(lms, prompt, "S12345")
    _with_person_id(oidc, "S12345")
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") != launched


def test_an_address_a_learning_platform_gave_never_links_a_sign_in_to_that_account(oidc, lms, owner, settings):
    """A student types the teacher's address into their LMS profile and launches: their CurreChat
    account gets that address from the platform, which nobody verified. The teacher's first campus
    sign-in, with linking by verified address on, must not land in the student's account."""
    from lti.provision import CUSTOM_CODE

    settings.SSO_LINK_VERIFIED_EMAIL = True
    prompt = Prompt.objects.create(owner=owner, name="Stats helper")
    response = lms.launch(Client(), custom={CUSTOM_CODE: prompt.join_code}, email="sami@uni.example")
    assert response.status_code == 302
    launched = response.wsgi_request.user
    assert launched.email == "sami@uni.example"
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") != launched, "a new account of Sami's own"
    # A local account with the same address is still linked (and the launch's is not counted).
    User.objects.filter(sso_identities__isnull=False).delete()
    local = confirmed_local("sami-local", "sami@uni.example")
    oidc.sign_in(Client(), "sami")
    assert identity_user("sami") == local
