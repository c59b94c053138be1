"""One account for an LTI launch and a campus sign-in that carry the same person identifier, only
where an administrator turned sharing on for that platform (off by default), and never a staff or
superuser account, in either direction. Real partners: the fake LTI platform (tests/lti_platform.py)
and the certified test OpenID provider (tests/oidc_op.py)."""

from __future__ import annotations

import html

import pytest
from django.test import Client

from accounts.models import User
from chat.models import Prompt
from lti.models import Platform
from lti.provision import CUSTOM_CODE
from sso.config import forget_discovery
from sso.models import SsoIdentity
from tests.lti_platform import LTI, TestPlatform, new_private_key
from tests.oidc_op import account

PERSON = "S12345"


@pytest.fixture(scope="module")
def platform_key():
    return new_private_key()


@pytest.fixture
def oidc(provider, settings, db):
    for name, value in provider.settings().items():
        setattr(settings, name, value)
    settings.OIDC_CLAIM_PERSON_ID = "person_id"
    settings.SSO_STAFF_GROUPS = ["currechat-admins"]
    forget_discovery()
    set_person(provider, groups=[])
    yield provider
    forget_discovery()


def set_person(provider, *, groups: list[str]) -> None:
    provider.set_accounts(("tiina", account("tiina", "faculty", person_id=PERSON, groups=groups)))


@pytest.fixture
def lms(platform_key, db) -> TestPlatform:
    platform = TestPlatform(key=platform_key)
    platform.register()  # as an administrator registers it: sharing off
    return platform


@pytest.fixture
def stats(owner) -> Prompt:
    return Prompt.objects.create(owner=owner, name="Stats helper")


def share(on: bool = True) -> None:
    Platform.objects.update(share_person_id=on)


def launch(lms: TestPlatform, prompt: Prompt, *, sub: str = "learner-1"):
    client = Client()
    response = lms.launch(
        client, sub=sub, custom={CUSTOM_CODE: prompt.join_code}, **{f"{LTI}lis": {"person_sourcedid": PERSON}}
    )
    return response


def launched_user(lms: TestPlatform, prompt: Prompt, **args) -> User:
    response = launch(lms, prompt, **args)
    assert response.status_code == 302, response.content[:400]
    return response.wsgi_request.user


def campus_user() -> User:
    return SsoIdentity.objects.select_related("user").get(subject="tiina-subject-0001").user


def test_a_new_platform_shares_nothing(oidc, lms, stats):
    assert not Platform.objects.get().share_person_id
    launched = launched_user(lms, stats)
    oidc.sign_in(Client(), "tiina")
    assert campus_user() != launched, "a campus sign-in never lands in an account a non-sharing platform reached"
    assert launched_user(lms, stats, sub="learner-2") not in (launched, campus_user())


def test_with_sharing_on_a_launch_and_a_sign_in_are_one_account(oidc, lms, stats):
    share()
    launched = launched_user(lms, stats)
    oidc.sign_in(Client(), "tiina")
    assert campus_user() == launched
    assert launched_user(lms, stats, sub="learner-2") == launched


def test_a_launch_never_lands_in_a_staff_account(oidc, lms, stats):
    share()
    set_person(oidc, groups=["currechat-admins"])
    oidc.sign_in(Client(), "tiina")
    staff = campus_user()
    assert staff.is_staff
    launched = launched_user(lms, stats)
    assert launched != staff and not launched.is_staff


def test_a_launch_never_lands_in_a_superuser_account(oidc, lms, stats):
    share()
    oidc.sign_in(Client(), "tiina")
    User.objects.filter(pk=campus_user().pk).update(is_superuser=True)
    launched = launched_user(lms, stats)
    assert launched != campus_user() and not launched.is_superuser


def test_a_sign_in_never_joins_a_staff_account_a_launch_reached(oidc, lms, stats):
    share()
    launched = launched_user(lms, stats)
    User.objects.filter(pk=launched.pk).update(is_staff=True)  # an administrator made it staff
    oidc.sign_in(Client(), "tiina")
    assert campus_user() != launched


def test_a_shared_account_that_becomes_staff_is_closed_to_its_launches(oidc, lms, stats):
    """The platform's identifier reached the account first; the university's sign-in then makes it
    staff: the launches that joined through the identifier stop opening it."""
    share()
    launched = launched_user(lms, stats)
    set_person(oidc, groups=["currechat-admins"])
    oidc.sign_in(Client(), "tiina")
    assert campus_user() == launched and campus_user().is_staff
    refused = launch(lms, stats)
    assert refused.status_code == 403 and "is an administrator's" in html.unescape(refused.content.decode())
    assert not refused.wsgi_request.user.is_authenticated


def test_only_a_superuser_turns_sharing_on_in_the_admin(lms, admin_user, client_for):
    from django.contrib.auth.models import Permission

    staff = User.objects.create_user("staffer", password="x", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename__in=["view_platform", "change_platform"]))
    platform = Platform.objects.get()
    form = {
        "name": platform.name, "active": "on", "issuer": platform.issuer, "client_id": platform.client_id,
        "deployment_ids": '["deployment-1"]', "auth_login_url": platform.auth_login_url,
        "auth_token_url": platform.auth_token_url, "key_set": platform.key_set, "share_person_id": "on",
    }  # fmt: skip
    url = f"/admin/lti/platform/{platform.pk}/change/"
    assert client_for(staff).post(url, form).status_code == 302
    platform.refresh_from_db()
    assert not platform.share_person_id
    assert client_for(admin_user).post(url, form).status_code == 302
    platform.refresh_from_db()
    assert platform.share_person_id
