"""The API docs work offline: with every request to another host refused, /api/v1/docs still shows
Swagger UI with our routes (its scripts and styles come from the app, not a CDN)."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
User.objects.create_user("dora", password="dora-docs-pass-42", role=Role.TEACHER)
"""


def block_other_origins(page, origin: str) -> list[str]:
    """Abort every request that is not to `origin`; return the list the refused URLs go into."""
    refused: list[str] = []

    def route(route):
        url = route.request.url
        parts = urlsplit(url)
        if f"{parts.scheme}://{parts.netloc}" == origin or parts.scheme in ("data", "blob"):
            route.continue_()
        else:
            refused.append(url)
            route.abort("internetdisconnected")

    page.route("**/*", route)
    return refused


def test_api_docs_render_with_the_network_blocked(live_app, new_page, journey):
    live_app.manage("shell", "-c", SETUP)
    page = new_page()
    refused = block_other_origins(page, live_app.url)
    log_in(page, live_app, "dora", "dora-docs-pass-42")
    expect(page.get_by_role("button", name="Log out")).to_be_visible()

    page.goto(live_app.url + "/api/v1/docs")
    # Swagger UI built the page from the schema: the title and a route are there as operations.
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("CurreChat API")
    operation = page.locator(".opblock-summary-path", has_text="/api/v1/collections").first
    expect(operation).to_be_visible()
    no_overflow(page)
    journey.shot(page, "api-docs")
    # The schema itself came from the app.
    assert page.evaluate("fetch('/api/v1/openapi.json').then((r) => r.status)") == 200
    assert refused == [], f"the docs asked other hosts for {refused}"
