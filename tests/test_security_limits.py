"""Rate limits shared through Redis, each a 429 with Retry-After and a sentence (issue 12, item 8)."""

from __future__ import annotations

import json

import pytest

from accounts.models import ApiToken
from kernel.ratelimit import RateLimited, SlidingWindow
from tests.conftest import PASSWORD


def _login(client, username: str, password: str, address: str = "10.0.0.1"):
    return client.post("/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def _assert_429(response) -> None:
    assert response.status_code == 429
    assert int(response["Retry-After"]) >= 1
    assert "Try again in" in response.content.decode()


def test_failed_logins_lock_the_account_and_a_success_before_that_forgives(client, owner, settings):
    settings.RATE_LOGIN_ACCOUNT = (3, 900)
    for _ in range(2):
        assert _login(client, owner.username, "wrong").status_code == 200
    assert _login(client, owner.username, PASSWORD).status_code == 302, "a success before the limit logs in"
    client.logout()
    for _ in range(3):
        assert _login(client, owner.username, "wrong", address="10.0.0.9").status_code == 200
    # The right password from another address is refused too: the account is locked for a while.
    _assert_429(_login(client, owner.username.upper(), PASSWORD, address="10.0.0.77"))


def test_failed_logins_from_one_address_are_limited_across_accounts(client, owner, student, settings):
    settings.RATE_LOGIN_ADDRESS = (4, 900)
    for name in ("a", "b", "c", "d"):
        assert _login(client, name, "wrong").status_code == 200
    _assert_429(_login(client, student.username, PASSWORD))
    assert _login(client, student.username, PASSWORD, address="10.0.0.2").status_code == 302


def test_signups_are_limited_by_address(client, prompt, settings):
    settings.RATE_SIGNUP_ADDRESS = (2, 3600)
    url = f"/join/{prompt.join_code}/"
    for n in range(2):
        data = {"username": f"new-{n}", "password1": PASSWORD, "password2": PASSWORD, "privacy_confirmed": "1"}
        assert client.post(url, data, REMOTE_ADDR="10.1.1.1").status_code == 302
        client.logout()
    data = {"username": "new-3", "password1": PASSWORD, "password2": PASSWORD, "privacy_confirmed": "1"}
    _assert_429(client.post(url, data, REMOTE_ADDR="10.1.1.1"))


def test_guessing_join_codes_is_limited_by_address_on_page_link_and_api(client_for, other_student, prompt, settings):
    settings.RATE_JOIN_ADDRESS = (3, 600)
    client = client_for(other_student)
    assert client.post("/join/", {"code": "WRONG1"}, REMOTE_ADDR="10.2.2.2").status_code == 302
    assert client.get("/join/WRONG2/", REMOTE_ADDR="10.2.2.2").status_code == 404
    api = client.post(
        "/api/v1/prompts/join", json.dumps({"code": "WRONG3"}), content_type="application/json", REMOTE_ADDR="10.2.2.2"
    )
    assert api.status_code == 404
    # Now even the right code is refused from this address for a while, on every channel.
    _assert_429(client.get(f"/join/{prompt.join_code}/", REMOTE_ADDR="10.2.2.2"))
    _assert_429(client.post("/join/", {"code": prompt.join_code}, REMOTE_ADDR="10.2.2.2"))
    refused = client.post(
        "/api/v1/prompts/join",
        json.dumps({"code": prompt.join_code}),
        content_type="application/json",
        REMOTE_ADDR="10.2.2.2",
    )
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    # A class joining from one school address is not limited: successes count nothing.
    settings.RATE_JOIN_ADDRESS = (1, 600)
    assert client.get(f"/join/{prompt.join_code}/", REMOTE_ADDR="10.3.3.3").status_code == 200
    assert client.get(f"/join/{prompt.join_code}/", REMOTE_ADDR="10.3.3.3").status_code == 200


def test_the_client_address_comes_from_the_proxy_header_only_when_configured(client, owner, settings):
    settings.RATE_LOGIN_ADDRESS = (1, 900)
    settings.RATE_LOGIN_ACCOUNT = (0, 900)
    _login(client, "x", "wrong", address="10.9.9.9")
    # Without CLIENT_IP_HEADER a forged X-Forwarded-For changes nothing.
    refused = client.post(
        "/login/", {"username": "y", "password": "z"}, REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="1.2.3.4"
    )
    assert refused.status_code == 429
    settings.CLIENT_IP_HEADER = "X-Forwarded-For"
    through_proxy = client.post(
        "/login/", {"username": "y", "password": "z"}, REMOTE_ADDR="10.9.9.9", HTTP_X_FORWARDED_FOR="5.6.7.8"
    )
    assert through_proxy.status_code == 200


def test_search_is_limited_per_user_on_page_and_api(client_for, owner, material, settings, ollama):
    settings.RATE_SEARCH_USER_UNCURATED = (2, 60)  # the searches below ask for no curation
    client = client_for(owner)
    url = f"/api/v1/collections/{material.pk}/search"
    body = json.dumps({"query": "bias", "curate": False})
    assert client.post(url, body, content_type="application/json").status_code == 200
    assert client.get(f"/collections/{material.pk}/search/?q=bias").status_code == 200
    refused = client.post(url, body, content_type="application/json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert refused.json()["code"] == "rate_limited"
    page = client.get(f"/collections/{material.pk}/search/?q=bias")
    assert page.status_code == 429 and int(page["Retry-After"]) >= 1
    assert client.get(f"/collections/{material.pk}/search/").status_code == 200, "the empty form is not a search"


def test_a_program_cannot_use_up_the_search_allowance_of_its_owners_pages(
    client_for, owner, material, settings, ollama
):
    settings.RATE_SEARCH_TOKEN_UNCURATED = (2, 60)
    settings.RATE_SEARCH_USER_UNCURATED = (2, 60)
    _, raw = ApiToken.issue(owner)
    program = client_for(None)
    url = f"/api/v1/collections/{material.pk}/search"
    body = json.dumps({"query": "bias", "curate": False})

    def by_program():
        return program.post(url, body, content_type="application/json", headers={"Authorization": f"Bearer {raw}"})

    assert [by_program().status_code for _ in range(2)] == [200, 200]
    refused = by_program()
    assert refused.status_code == 429 and "API tokens" in refused.json()["detail"]
    # The teacher's own pages still search: the program spent its allowance, not theirs.
    assert client_for(owner).get(f"/collections/{material.pk}/search/?q=bias").status_code == 200
    assert client_for(owner).post(url, body, content_type="application/json").status_code == 200


def test_searches_without_curation_are_allowed_more_than_curated_ones(client_for, owner, material, settings, ollama):
    settings.RATE_SEARCH_USER = (1, 60)  # curated: each result costs a model call
    settings.RATE_SEARCH_USER_UNCURATED = (3, 60)
    teacher = client_for(owner)
    url = f"/api/v1/collections/{material.pk}/search"

    def search(curate: bool) -> int:
        body = json.dumps({"query": "bias", "curate": curate, "limit": 2})
        return teacher.post(url, body, content_type="application/json").status_code

    assert [search(True), search(True)] == [200, 429]
    assert [search(False) for _ in range(4)] == [200, 200, 200, 429]  # a spent curated allowance stops none


def test_students_get_at_most_the_student_limit_of_curated_results(
    client_for, student, owner, prompt, material, ollama, settings
):
    settings.SEARCH_STUDENT_MAX_LIMIT = 2
    url = f"/api/v1/collections/{material.pk}/search"
    body = json.dumps({"query": "sample mean regression variance bias", "limit": 50, "curate": True})
    ollama.reset()
    got = client_for(student).post(url, body, content_type="application/json").json()
    assert len(got["results"]) + len(got["dropped"]) <= 2
    assert len(ollama.chat_requests()) <= 2, "curation asks the model once per result, at most the cap"
    teacher = client_for(owner).post(url, body, content_type="application/json").json()
    assert len(teacher["results"]) + len(teacher["dropped"]) > 2


def test_the_sliding_window_says_when_to_retry_and_counts_nothing_when_refused(db):
    window = SlidingWindow("probe", 2, 30, "Wait {retry_after} s.")
    window.hit("k")
    window.check("k")
    window.hit("k")
    with pytest.raises(RateLimited) as refused:
        window.hit("k")
    assert 1 <= refused.value.retry_after <= 30 and str(refused.value).startswith("Wait ")
    window.clear("k")
    window.hit("k")
