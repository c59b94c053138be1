"""LTI 1.3: full launches from a test platform (tests/lti_platform.py) for learners and instructors,
deep linking, and each refusal with its page. The platform signs like a real one; no network."""

from __future__ import annotations

import json

import jwt
import pytest
from django.test import Client

from accounts.models import Role, User
from chat.course.enrollment import remove_student
from chat.models import Enrollment, EnrollmentStatus, Prompt
from lti.models import LtiIdentity, ResourceLink, ToolKey
from lti.provision import CUSTOM_CODE
from tests.lti_platform import DL, INSTRUCTOR, LTI, TestPlatform, new_private_key, serve_jwks

ORIGIN = "https://lms.example.test"
pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def platform_key():
    return new_private_key()  # 2048-bit keys take a moment: one per module


@pytest.fixture
def lms(platform_key, settings):
    settings.EMBED_ALLOWED_ORIGINS = [ORIGIN]
    platform = TestPlatform(key=platform_key)
    platform.register()
    return platform


def learner_launch(lms: TestPlatform, prompt: Prompt, client: Client | None = None, **args):
    client = client or Client()
    response = lms.launch(client, custom={CUSTOM_CODE: prompt.join_code}, **args)
    return client, response


def refusal(response, reason: str, status: int = 403) -> str:
    assert response.status_code == status, response.content[:300]
    assert f'data-reason="{reason}"' in response.content.decode()
    assert "_auth_user_id" not in response.wsgi_request.session  # nobody was signed in
    return response.content.decode()


def frame_ancestors(response) -> str:
    policy = response["Content-Security-Policy"]
    return next(d for d in policy.split(";") if d.strip().startswith("frame-ancestors")).strip()


# --- learners -----------------------------------------------------------------------------------


def test_learner_launch_creates_enrolled_student_and_lands_in_the_chat_inside_the_frame(lms, prompt):
    client, response = learner_launch(lms, prompt)
    assert response.status_code == 302 and response["Location"] == f"/prompts/{prompt.pk}/chat/"

    user = User.objects.get(lti_identities__subject="learner-1")
    assert user.role == Role.STUDENT and user.get_full_name() == "Liisa Learner"
    assert not user.has_usable_password()
    assert Enrollment.objects.get(prompt=prompt, student=user).status == EnrollmentStatus.ENROLLED

    page = client.get(response["Location"], follow=True)
    assert page.status_code == 200 and page.wsgi_request.user == user
    html = page.content.decode()
    assert "Statistics 101, autumn" in html and "Liisa Learner" in html  # the course band
    assert 'data-testid="course-band"' in html
    assert frame_ancestors(page) == f"frame-ancestors {ORIGIN}"
    assert "X-Frame-Options" not in page


def test_second_launch_of_the_same_learner_reuses_the_account_and_link(lms, prompt):
    learner_launch(lms, prompt)
    _, again = learner_launch(lms, prompt)
    assert again.status_code == 302
    assert User.objects.filter(lti_identities__subject="learner-1").count() == 1
    link = ResourceLink.objects.get(resource_link_id="link-1")
    assert link.prompt == prompt and link.context_title == "Statistics 101, autumn"


def test_pages_outside_the_chat_stay_unframable_for_a_launched_learner(lms, prompt):
    client, _ = learner_launch(lms, prompt)
    home = client.get("/")
    assert home["X-Frame-Options"] == "DENY"
    assert frame_ancestors(home) == "frame-ancestors 'none'"


def test_without_allowed_origins_the_chat_is_not_framable(lms, prompt, settings):
    client, response = learner_launch(lms, prompt)
    settings.EMBED_ALLOWED_ORIGINS = []
    page = client.get(response["Location"], follow=True)
    assert page.status_code == 200
    assert page["X-Frame-Options"] == "DENY" and frame_ancestors(page) == "frame-ancestors 'none'"


def test_a_blocked_student_stays_blocked_when_launching(lms, prompt):
    client, _ = learner_launch(lms, prompt)
    user = User.objects.get(lti_identities__subject="learner-1")
    remove_student(Enrollment.objects.get(prompt=prompt, student=user), block=True)
    client.logout()
    _, response = learner_launch(lms, prompt, client)
    assert "cannot join it again" in refusal(response, "not_allowed")
    assert Enrollment.objects.get(prompt=prompt, student=user).status == EnrollmentStatus.BLOCKED


def test_a_link_without_a_known_join_code_is_refused_clearly(lms, prompt):
    response = lms.launch(Client(), custom={CUSTOM_CODE: "NOPE1234"})
    assert "points to no CurreChat assistant" in refusal(response, "no_prompt")
    assert not Enrollment.objects.filter(student__lti_identities__isnull=False).exists()


def test_a_switched_off_prompt_refuses_learners(lms, prompt):
    Prompt.objects.filter(pk=prompt.pk).update(active=False)
    _, response = learner_launch(lms, prompt)
    assert "switched off" in refusal(response, "not_allowed")


def test_a_deactivated_account_cannot_launch(lms, prompt):
    client, _ = learner_launch(lms, prompt)
    User.objects.filter(lti_identities__subject="learner-1").update(is_active=False)
    _, response = learner_launch(lms, prompt, Client())
    assert "deactivated" in refusal(response, "not_allowed")


# --- instructors --------------------------------------------------------------------------------


def test_instructor_linked_to_the_owner_lands_on_the_prompt_page_in_the_frame(lms, prompt, owner):
    _owner_identity(owner)  # the administrator linked the teacher's platform account to their CurreChat user
    client = Client()
    response = lms.launch(client, sub="teacher-1", roles=(INSTRUCTOR,), custom={CUSTOM_CODE: prompt.join_code})
    assert response.status_code == 302 and response["Location"] == f"/prompts/{prompt.pk}/"
    page = client.get(response["Location"])
    assert page.status_code == 200 and page.wsgi_request.user == owner
    assert frame_ancestors(page) == f"frame-ancestors {ORIGIN}"
    assert "Copy embed code" in page.content.decode()
    assert not Enrollment.objects.filter(prompt=prompt, student=owner).exists()


def test_new_instructor_becomes_a_teacher_but_not_of_someone_elses_prompt(lms, prompt):
    response = lms.launch(Client(), sub="teacher-2", roles=(INSTRUCTOR,), custom={CUSTOM_CODE: prompt.join_code})
    assert "add you as a co-teacher" in refusal(response, "not_allowed")
    assert User.objects.get(lti_identities__subject="teacher-2").role == Role.TEACHER
    assert not prompt.is_taught_by(User.objects.get(lti_identities__subject="teacher-2"))


# --- deep linking -------------------------------------------------------------------------------


def _owner_identity(owner):
    from lti.models import Platform

    return LtiIdentity.objects.create(platform=Platform.objects.get(), subject="teacher-1", user=owner)


def test_deep_linking_lets_the_teacher_pick_a_prompt_and_returns_a_signed_resource_link(
    lms, prompt, owner, other_teacher
):
    _owner_identity(owner)
    theirs = Prompt.objects.create(owner=other_teacher, name="Someone else's", system_prompt="x")
    client = Client()
    picker = lms.launch(client, sub="teacher-1", roles=(INSTRUCTOR,), message_type="LtiDeepLinkingRequest")
    html = picker.content.decode()
    assert picker.status_code == 200 and prompt.name in html and theirs.name not in html
    assert frame_ancestors(picker) == f"frame-ancestors {ORIGIN}"
    launch_id = picker.context["launch_id"]

    answer = client.post("/lti/deep-link/", {"launch_id": launch_id, "prompt": prompt.pk})
    assert answer.status_code == 200
    assert answer.context["return_url"] == "https://lms.example.test/mod/lti/contentitem_return.php"
    tool_keys = {k["kid"]: k for k in client.get("/lti/jwks/").json()["keys"]}
    token = answer.context["jwt"]
    public = jwt.PyJWK(tool_keys[jwt.get_unverified_header(token)["kid"]])
    body = jwt.decode(token, public.key, algorithms=["RS256"], audience=lms.issuer)
    assert body["iss"] == lms.client_id
    assert body[f"{LTI}message_type"] == "LtiDeepLinkingResponse"
    assert body[f"{LTI}deployment_id"] == lms.deployment_id
    assert body[f"{DL}data"] == "opaque-platform-data"
    [item] = body[f"{DL}content_items"]
    assert item["type"] == "ltiResourceLink" and item["title"] == prompt.name
    assert item["url"] == "http://testserver/lti/launch/"
    assert item["custom"] == {CUSTOM_CODE: prompt.join_code}

    # The platform places the link; a learner's launch of it lands in that prompt's chat.
    _, launched = learner_launch(lms, prompt, link_id="link-from-deep-linking")
    assert launched["Location"] == f"/prompts/{prompt.pk}/chat/"


def test_deep_linking_cannot_link_a_prompt_the_teacher_does_not_teach(lms, prompt, owner, other_teacher):
    _owner_identity(owner)
    theirs = Prompt.objects.create(owner=other_teacher, name="Someone else's", system_prompt="x")
    client = Client()
    picker = lms.launch(client, sub="teacher-1", roles=(INSTRUCTOR,), message_type="LtiDeepLinkingRequest")
    answer = client.post("/lti/deep-link/", {"launch_id": picker.context["launch_id"], "prompt": theirs.pk})
    assert answer.status_code == 403 and "jwt" not in answer.context


def test_a_launch_id_is_no_credential_for_another_user(lms, prompt, owner, student):
    _owner_identity(owner)
    picker = lms.launch(Client(), sub="teacher-1", roles=(INSTRUCTOR,), message_type="LtiDeepLinkingRequest")
    thief = Client()
    thief.force_login(student)
    answer = thief.post("/lti/deep-link/", {"launch_id": picker.context["launch_id"], "prompt": prompt.pk})
    assert answer.status_code == 403 and "jwt" not in answer.context


def test_learners_cannot_deep_link(lms, prompt):
    response = lms.launch(Client(), message_type="LtiDeepLinkingRequest")
    assert "Only the course" in refusal(response, "not_allowed")


def test_a_new_instructor_without_prompts_is_told_how_to_make_one(lms):
    response = lms.launch(Client(), sub="teacher-3", roles=(INSTRUCTOR,), message_type="LtiDeepLinkingRequest")
    assert response.status_code == 200 and 'data-testid="deep-link-empty"' in response.content.decode()


# --- refusals -----------------------------------------------------------------------------------


def test_unknown_issuer_is_refused_at_login(lms):
    response = lms.login(Client(), issuer="https://evil.example.test")
    assert "does not know the learning platform" in refusal(response, "unknown_platform")


def test_id_token_from_an_unknown_issuer_is_refused(lms, prompt):
    client = Client()
    login = lms.read_login(lms.login(client))
    body = lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code}, iss="https://evil.example.test")
    refusal(lms.post_id_token(client, login, lms.sign(body)), "unknown_platform")
    assert not LtiIdentity.objects.exists()


def test_inactive_platform_is_refused(lms):
    from lti.models import Platform

    Platform.objects.update(active=False)
    refusal(lms.login(Client()), "unknown_platform")


def test_bad_signature_is_refused(lms, prompt, platform_key):
    client = Client()
    login = lms.read_login(lms.login(client))
    forged = lms.sign(lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code}), key=new_private_key())
    assert "not signed with the learning platform" in refusal(lms.post_id_token(client, login, forged), "bad_signature")
    assert not Enrollment.objects.filter(student__lti_identities__isnull=False).exists()


def test_replayed_id_token_is_refused(lms, prompt):
    client = Client()
    login = lms.read_login(lms.login(client))
    token = lms.sign(lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code}))
    assert lms.post_id_token(client, login, token).status_code == 302
    attacker = Client()  # the same captured token and state, posted again (from anywhere)
    attacker.cookies = client.cookies
    attacker.logout()
    refusal(lms.post_id_token(attacker, login, token), "replayed")


def test_expired_id_token_is_refused(lms, prompt):
    client = Client()
    login = lms.read_login(lms.login(client))
    body = lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code}, lifetime=-120)
    assert "expired" in refusal(lms.post_id_token(client, login, lms.sign(body)), "expired")
    assert not LtiIdentity.objects.exists()


def test_id_token_without_expiry_is_refused(lms, prompt):
    client = Client()
    login = lms.read_login(lms.login(client))
    body = lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code})
    del body["exp"]
    refusal(lms.post_id_token(client, login, lms.sign(body)), "bad_signature")


def test_unknown_deployment_is_refused(lms, prompt):
    client = Client()
    login = lms.read_login(lms.login(client))
    body = lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code})
    body[f"{LTI}deployment_id"] = "deployment-unknown"
    refusal(lms.post_id_token(client, login, lms.sign(body)), "unknown_deployment")


def test_launch_from_another_browser_without_the_state_cookie_is_refused(lms, prompt):
    login = lms.read_login(lms.login(Client()))
    token = lms.sign(lms.claims(login.nonce, custom={CUSTOM_CODE: prompt.join_code}))
    assert "open the link in a new window" in refusal(lms.post_id_token(Client(), login, token), "no_state")


def test_garbage_id_token_is_refused(lms):
    client = Client()
    login = lms.read_login(lms.login(client))
    refusal(lms.post_id_token(client, login, "not.a.jwt"), "malformed")


# --- keys ---------------------------------------------------------------------------------------


def test_platform_keys_from_a_key_set_url_on_loopback(platform_key, settings, prompt):
    settings.EMBED_ALLOWED_ORIGINS = [ORIGIN]
    lms = TestPlatform(key=platform_key)
    with serve_jwks(lms) as url:
        lms.register(inline_keys=False, key_set_url=url)
        _, response = learner_launch(lms, prompt)
    assert response.status_code == 302


def test_unreachable_key_set_url_says_try_again(platform_key, settings, prompt):
    lms = TestPlatform(key=platform_key)
    with serve_jwks(lms) as url:
        pass  # the server is gone: nothing listens on that port any more
    lms.register(inline_keys=False, key_set_url=url)
    _, response = learner_launch(lms, prompt)
    refusal(response, "keys_unavailable", status=503)


def test_tool_jwks_is_stable_and_public_only(db):
    first = Client().get("/lti/jwks/").json()
    second = Client().get("/lti/jwks/").json()
    assert first == second and len(first["keys"]) == 1 and ToolKey.objects.count() == 1
    [key] = first["keys"]
    assert key["kty"] == "RSA" and key["alg"] == "RS256" and key["use"] == "sig"
    assert not {"d", "p", "q", "dp", "dq", "qi"} & key.keys()
    assert json.dumps(first).count("PRIVATE") == 0


def test_only_a_superuser_links_a_platform_account_to_a_curre_chat_user(lms, prompt, client_for, admin_user, student):
    """The attack: staff who may change LTI identities point their own platform account at a
    superuser's, then launch as it. The linked user is read-only for them; a superuser may link."""
    from django.contrib.auth.models import Permission

    learner_launch(lms, prompt, sub="staff-own-sub")
    identity = LtiIdentity.objects.get(subject="staff-own-sub")
    launched_as = identity.user
    staff = User.objects.create_user("stina-staff", password="x", role=Role.TEACHER, is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=("view_ltiidentity", "change_ltiidentity")))
    url = f"/admin/lti/ltiidentity/{identity.pk}/change/"
    page = client_for(staff).get(url).content.decode()
    assert 'name="user"' not in page, "shown read-only"
    assert client_for(staff).post(url, {"user": admin_user.pk}).status_code == 302
    identity.refresh_from_db()
    assert identity.user == launched_as
    client, _ = learner_launch(lms, prompt, sub="staff-own-sub")
    assert client.get("/").wsgi_request.user == launched_as, "the launch signs in as before, not as the superuser"
    assert client_for(admin_user).post(url, {"user": student.pk}).status_code == 302
    identity.refresh_from_db()
    assert identity.user == student, "a superuser may link it"
