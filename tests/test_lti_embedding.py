"""Embedding in a learning platform: which pages may be framed, by whom, and the cookies that work there."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django.test import RequestFactory

from kernel.framing import FrameAncestorsMiddleware, embeddable, parse_origins, with_frame_ancestors

ORIGIN = "https://moodle.example.edu"


def test_origins_must_be_https_origins_without_paths():
    assert parse_origins(["https://moodle.example.edu/", "http://localhost:8000"]) == [
        "https://moodle.example.edu",
        "http://localhost:8000",
    ]
    for bad in ("http://moodle.example.edu", "https://moodle.example.edu/course", "*", "moodle.example.edu"):
        with pytest.raises(ImproperlyConfigured, match="EMBED_ALLOWED_ORIGINS"):
            parse_origins([bad])


def test_only_frame_ancestors_changes_in_a_site_wide_policy():
    policy = "default-src 'self'; script-src 'self' 'nonce-abc'; frame-ancestors 'none'"
    assert (
        with_frame_ancestors(policy, ORIGIN)
        == f"default-src 'self'; script-src 'self' 'nonce-abc'; frame-ancestors {ORIGIN}"
    )
    assert with_frame_ancestors("", "'none'") == "frame-ancestors 'none'"


def _through_middleware(view, settings, origins, policy: str = ""):
    """The middleware as the outermost layer, around a response that a CSP middleware already shaped."""
    settings.EMBED_ALLOWED_ORIGINS = origins
    request = RequestFactory().get("/")

    def inner(req):
        req.resolver_match = type("Match", (), {"func": view})()
        response = view(req)
        if policy:
            response["Content-Security-Policy"] = policy
        response["X-Frame-Options"] = "DENY"  # what XFrameOptionsMiddleware set further in
        return response

    return FrameAncestorsMiddleware(inner)(request)


def test_an_embeddable_view_keeps_the_site_policy_and_allows_only_the_listed_origins(settings):
    view = embeddable(lambda request: HttpResponse("chat"))
    response = _through_middleware(view, settings, [ORIGIN], "default-src 'self'; frame-ancestors 'none'")
    assert response["Content-Security-Policy"] == f"default-src 'self'; frame-ancestors {ORIGIN}"
    assert "X-Frame-Options" not in response


def test_other_views_stay_unframable_whatever_the_site_policy_says(settings):
    plain = _through_middleware(lambda request: HttpResponse("settings"), settings, [ORIGIN], "default-src 'self'")
    assert plain["Content-Security-Policy"] == "default-src 'self'; frame-ancestors 'none'"
    assert plain["X-Frame-Options"] == "DENY"
    view = embeddable(lambda request: HttpResponse("chat"))
    unconfigured = _through_middleware(view, settings, [])
    assert (
        unconfigured["Content-Security-Policy"] == "frame-ancestors 'none'"
        and unconfigured["X-Frame-Options"] == "DENY"
    )


@pytest.mark.django_db
def test_prompt_page_offers_an_embed_code_of_the_join_link(prompt, owner, client_for, settings):
    settings.EMBED_ALLOWED_ORIGINS = [ORIGIN]
    page = client_for(owner).get(f"/prompts/{prompt.pk}/")
    html = page.content.decode()
    assert "Copy embed code" in html
    code = page.context["embed_code"]
    assert (
        code.startswith(f'<iframe src="http://testserver/join/{prompt.join_code}/"') and 'title="Stats helper"' in code
    )
    assert "&lt;iframe" in html  # shown as text in the input, not rendered
    assert frame_ancestors_of(page) == f"frame-ancestors {ORIGIN}"


@pytest.mark.django_db
def test_join_link_and_login_can_be_framed_but_the_teacher_home_cannot(prompt, owner, client_for, settings):
    settings.EMBED_ALLOWED_ORIGINS = [ORIGIN]
    anonymous = client_for(None)
    assert frame_ancestors_of(anonymous.get(f"/join/{prompt.join_code}/")) == f"frame-ancestors {ORIGIN}"
    assert frame_ancestors_of(anonymous.get("/login/")) == f"frame-ancestors {ORIGIN}"
    home = client_for(owner).get("/")
    assert home["X-Frame-Options"] == "DENY" and frame_ancestors_of(home) == "frame-ancestors 'none'"


def frame_ancestors_of(response) -> str:
    policy = response["Content-Security-Policy"]
    return next(d for d in policy.split(";") if d.strip().startswith("frame-ancestors")).strip()


def _settings(env: dict, expression: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY", "EMBED_ALLOWED_ORIGINS")}
    code = f"import currechat.settings as s; print({expression})"
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, "DEBUG": "1", **env}, capture_output=True, text=True, timeout=60
    )


def test_cookies_work_in_a_cross_site_frame_only_when_embedding_is_configured():
    expr = "s.SESSION_COOKIE_SAMESITE, s.CSRF_COOKIE_SAMESITE, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE"
    on = _settings({"EMBED_ALLOWED_ORIGINS": ORIGIN}, expr)
    assert on.returncode == 0, on.stderr
    assert on.stdout.strip() == "None None True True"
    off = _settings({}, "getattr(s, 'SESSION_COOKIE_SAMESITE', 'Lax')")
    assert off.stdout.strip() == "Lax"
    bad = _settings({"EMBED_ALLOWED_ORIGINS": "https://moodle.example.edu/course/1"}, "1")
    assert bad.returncode != 0 and "EMBED_ALLOWED_ORIGINS" in bad.stderr
