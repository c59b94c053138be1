"""A visitor with only a join code (no link) signs up from the login page: the code leads to the
prompt's join page, which makes their account and enrolls them. At a phone's and a laptop's width."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import no_overflow

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from chat.models import Prompt
teacher = User.objects.create_user({teacher!r}, password="koodi-opettaja-123", role=Role.TEACHER)
print(Prompt.objects.create(owner=teacher, name={name!r}, chat_model="qwen3:8b").join_code)
"""


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_a_visitor_with_only_a_join_code_signs_up(live_app, new_page, journey, width):
    name = f"Koodikurssi {width}"
    code = live_app.manage("shell", "-c", SETUP.format(teacher=f"koodiope{width}", name=name)).split()[-1]
    page = new_page(width, 844 if width < 800 else 900)
    page.goto(live_app.url + "/login/")
    box = page.get_by_test_id("join-code-box")
    expect(box).to_contain_text("New student with a join code?")
    journey.look(page, "login-with-join-code")
    box.get_by_label("Join code").fill(code.lower())
    box.get_by_role("button", name="Continue to sign up").click()
    expect(page.get_by_test_id("join-confirm")).to_be_visible()
    expect(page.get_by_role("main")).to_contain_text(name)
    journey.look(page, "join-page-from-code")
    page.get_by_label("Username").fill(f"koodilla{width}")
    page.get_by_label("Password", exact=True).fill("koodin-salasana-42")
    page.get_by_label("Password confirmation").fill("koodin-salasana-42")
    page.get_by_test_id("privacy-confirm").get_by_role("checkbox").check()  # the privacy notice, read
    page.get_by_role("button", name="Create account and join").click()
    expect(page.get_by_text(f"You joined “{name}”. Ask your first question below.")).to_be_visible()
    no_overflow(page)
    expect(page.get_by_label("Your question")).to_be_visible()
    journey.look(page, "joined-from-code")
