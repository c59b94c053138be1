"""Logging in, joining a prompt by link or code, and API tokens."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiToken, Role, User
from chat.models import Enrollment
from tests.conftest import PASSWORD


def test_login_page_logs_in_and_lands_on_home(client, owner):
    assert client.get("/login/").status_code == 200
    response = client.post("/login/", {"username": owner.username, "password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == "/"
    assert "Your teaching material" in response.content.decode()


def test_wrong_password_explains_itself(client, owner):
    response = client.post("/login/", {"username": owner.username, "password": "nope"})
    assert response.status_code == 200
    assert "correct username and password" in response.content.decode()


def test_home_requires_login(client, db):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_new_student_signs_up_through_join_link_and_is_enrolled(client, prompt):
    page = client.get(f"/join/{prompt.join_code}/")
    assert prompt.name in page.content.decode()
    response = client.post(
        f"/join/{prompt.join_code}/",
        {
            "username": "newbie",
            "password1": "a-long-enough-pass-phrase",
            "password2": "a-long-enough-pass-phrase",
            "privacy_confirmed": "1",
            "privacy_level": prompt.chat_visibility,
        },
        follow=True,
    )
    newbie = User.objects.get(username="newbie")
    assert newbie.role == Role.STUDENT
    joined = Enrollment.objects.get(student=newbie, prompt=prompt)
    assert joined.privacy_confirmed_level == prompt.chat_visibility and joined.privacy_confirmed_at is not None
    assert prompt.name in response.content.decode()


def test_signup_form_keeps_input_and_explains_errors(client, prompt):
    response = client.post(
        f"/join/{prompt.join_code}/", {"username": "keepme", "password1": "short", "password2": "different"}
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert 'value="keepme"' in body
    assert "didn’t match" in body or "didn't match" in body
    assert not User.objects.filter(username="keepme").exists()


def test_unknown_join_link_says_so(client, db):
    response = client.get("/join/NOSUCHCODE/")
    assert response.status_code == 404
    assert "not valid" in response.content.decode()


def test_logged_in_student_joins_by_code(client_for, other_student, prompt):
    """The code leads to the prompt's join page, where the student confirms its privacy notice."""
    client = client_for(other_student)
    response = client.post("/join/", {"code": prompt.join_code.lower()}, follow=True)
    assert response.redirect_chain[-1][0] == f"/join/{prompt.join_code}/"
    assert 'data-testid="privacy-confirm"' in response.content.decode()
    assert not Enrollment.objects.filter(student=other_student, prompt=prompt).exists()
    joined = client.post(f"/join/{prompt.join_code}/", {"privacy_confirmed": "1"}, follow=True)
    assert f"You joined “{prompt.name}”" in joined.content.decode()
    assert Enrollment.objects.filter(student=other_student, prompt=prompt).exists()


def test_join_api_rejects_unknown_and_inactive_codes(client_for, other_student, prompt):
    client = client_for(other_student)
    assert client.post("/api/v1/prompts/join", json.dumps({"code": "ZZZZZZZZ"}), "application/json").status_code == 404
    prompt.active = False
    prompt.save()
    response = client.post("/api/v1/prompts/join", json.dumps({"code": prompt.join_code}), "application/json")
    assert response.status_code == 404
    assert "join code" in response.json()["detail"]


def test_api_token_from_command_authenticates_bearer_requests(client, owner, collection):
    out = StringIO()
    call_command("create_api_token", owner.username, stdout=out)
    token = out.getvalue().strip()
    response = client.get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert [c["id"] for c in response.json()] == [collection.id]
    assert ApiToken.objects.get(user=owner).key_hash != token  # only the hash is stored


def test_bad_or_revoked_token_is_refused(client, owner):
    _, raw = ApiToken.issue(owner)
    assert client.get("/api/v1/collections", HTTP_AUTHORIZATION="Bearer cc_wrong").status_code == 401
    owner.is_active = False
    owner.save()
    response = client.get("/api/v1/collections", HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert response.status_code == 401
    assert "Bearer" in response.json()["detail"]


def test_bearer_requests_need_no_csrf_token(owner):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    _, raw = ApiToken.issue(owner)
    response = client.post(
        "/api/v1/collections", json.dumps({"name": "Via API"}), "application/json", HTTP_AUTHORIZATION=f"Bearer {raw}"
    )
    assert response.status_code == 201


def test_create_teacher_command(db):
    call_command("create_teacher", "tina", password="a-long-enough-pass-phrase", stdout=StringIO())
    assert User.objects.get(username="tina").is_teacher
    with pytest.raises(CommandError, match="too short"):
        call_command("create_teacher", "tom", password="short", stdout=StringIO())


def test_create_api_token_for_unknown_user_fails_clearly(db):
    with pytest.raises(CommandError, match="no user 'ghost'"):
        call_command("create_api_token", "ghost")


def test_seed_demo_is_repeatable_and_prints_working_logins(client, tmp_path, settings, db):
    settings.VAR_DIR = tmp_path
    first, second = StringIO(), StringIO()
    call_command("seed_demo", stdout=first)
    call_command("seed_demo", stdout=second)
    assert first.getvalue() == second.getvalue()
    password = next(line.split("/ ")[1] for line in first.getvalue().splitlines() if "demo-student" in line)
    assert client.login(username="demo-student", password=password)
    home = client.get("/").content.decode()
    assert "Demo course assistant" in home
    assert User.objects.filter(username__startswith="demo-").count() == 2


def test_seed_demo_again_keeps_the_demo_users_signed_in(client, tmp_path, settings, db):
    settings.VAR_DIR = tmp_path
    out = StringIO()
    call_command("seed_demo", stdout=out)
    password = next(line.split("/ ")[1] for line in out.getvalue().splitlines() if "demo-student" in line)
    assert client.login(username="demo-student", password=password)
    call_command("seed_demo", stdout=StringIO())  # the next `make run`
    assert client.get("/").wsgi_request.user.username == "demo-student", "still signed in"
