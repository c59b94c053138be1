"""A student whose browser speaks Finnish opens a join link, signs in through the university's own
login page (npm's oidc-provider on loopback, tests/oidc_op.py), lands in the chat enrolled, and logs
out of CurreChat and the university alike, on a phone (390 px) and a laptop (1366 px).

Its own live app: campus sign-in is configured when the web server starts, and the other browser
tests' app must stay as without it.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from playwright.sync_api import expect

from scripts.redis_stack import RedisStackServer, free_port
from tests import services
from tests.browser.conftest import LIVE_SETTINGS, LiveApp, _wait_for, no_overflow, start_web
from tests.browser.test_finnish_journey import VISIBLE_TEXT, english_words
from tests.databases import migrated_sqlite
from tests.oidc_op import OpenIdProvider, account
from tests.untranslated import catalogue_sentences, english_left

pytestmark = pytest.mark.browser

UNIVERSITY = "Esimerkkiyliopisto"
SETUP = """
from accounts.models import Role, User
from chat.models import Prompt
teacher = User.objects.create_user("opettaja", password="not-used-here-123", role=Role.TEACHER, first_name="Outi")
prompt = Prompt.objects.create(owner=teacher, name="Tilastoavustaja", student_instructions="Kysy keskiluvuista.")
print(prompt.join_code)
"""


@pytest.fixture(scope="module")
def sso_app(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sso-live")
    port = free_port()
    provider = OpenIdProvider(app_url=f"http://127.0.0.1:{port}").start()
    redis_server = RedisStackServer(port=free_port(), data_dir=tmp / "redis", persistent=False)
    redis_server.start()
    env = {
        **os.environ,
        **provider.settings(),
        "SSO_NAME": UNIVERSITY,
        "DJANGO_SETTINGS_MODULE": LIVE_SETTINGS,
        "DATABASE_URL": f"sqlite:///{tmp / 'live.sqlite3'}",
        "REDIS_URL": redis_server.url,
        "OLLAMA_HOST": services.fake_ollama().url,
        "CURRECHAT_VAR_DIR": str(tmp / "var"),
        "MEDIA_ROOT": str(tmp / "media"),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DEBUG": "0",
        "SECURE_COOKIES": "0",
        "EMBEDDING_WARMUP": "0",
    }
    app = LiveApp(url=f"http://127.0.0.1:{port}", env=env)
    migrated_sqlite(tmp / "live.sqlite3", env)
    code = app.manage("shell", "-c", SETUP).split()[-1]
    logs = open(tmp / "web.log", "w")  # noqa: SIM115 — closed at teardown
    web = start_web(port, env, logs)
    try:
        _wait_for(app.url + "/login/", web)
        yield app, provider, code
    finally:
        app.close()
        web.terminate()
        try:
            web.wait(timeout=15)
        except subprocess.TimeoutExpired:
            web.kill()
        provider.stop()
        redis_server.stop()
        logs.close()


def check_finnish(page, journey, label: str) -> None:
    """Our pages: Finnish throughout, no overflow, no serious axe-core finding, a screenshot."""
    expect(page.locator("html")).to_have_attribute("lang", "fi")
    text = page.evaluate(VISIBLE_TEXT)
    assert english_left(text, catalogue_sentences("fi", placeholders=True), min_words=2) == [], label
    assert not english_words(text), f"{label} ({page.url}) has English words {english_words(text)}"
    journey.look(page, label)


@pytest.mark.parametrize(("width", "login"), [(390, "sami"), (1366, "saara")])
def test_a_student_signs_in_through_the_university_in_finnish_and_joins(sso_app, new_page, journey, width, login):
    app, provider, code = sso_app
    provider.set_accounts((login, account(login, "student")))
    page = new_page(width, 900, locale="fi-FI")

    # The join link offers the university's sign-in first.
    page.goto(f"{app.url}/join/{code}/")
    check_finnish(page, journey, f"join-{width}")
    page.get_by_test_id("privacy-confirm-sso").get_by_role("checkbox").check()  # the privacy notice, read
    page.get_by_role("button", name=f"Kirjaudu: {UNIVERSITY} ja liity").click()

    # The university's own login page (its language is the university's business).
    expect(page.get_by_role("heading", name="University sign-in")).to_be_visible()
    journey.look(page, f"university-login-{width}", a11y=False)
    page.get_by_label("Username").fill(login)
    page.get_by_label("Password").fill(f"{login}-pw")
    page.get_by_role("button", name="Sign in").click()

    # Back in CurreChat: signed in, enrolled, in the chat.
    page.wait_for_url("**/prompts/*/chat/")
    expect(page.get_by_text("Liityit avustajaan ”Tilastoavustaja”")).to_be_visible()
    expect(page.get_by_test_id("student-instructions")).to_have_text("Kysy keskiluvuista.")
    check_finnish(page, journey, f"chat-{width}")

    # Logging out ends the university's session too, then comes back to the login page.
    page.get_by_role("button", name="Kirjaudu ulos").click()
    expect(page.get_by_role("button", name="Yes, sign me out")).to_be_visible()
    no_overflow(page)
    journey.shot(page, f"university-logout-{width}")
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url("**/login/")
    expect(page.get_by_test_id("sso-oidc")).to_have_text(f"Kirjaudu: {UNIVERSITY}")
    check_finnish(page, journey, f"login-{width}")
