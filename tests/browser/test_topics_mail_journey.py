"""The weekly topics mail's link, as its teacher meets it, signed out, at 390 and 1366 px: the link
asks before it stops anything (mail scanners open every link of a mail), and its button stops it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from chat.insight.digest_mail import subscribe
from chat.models import Prompt
teacher = User.objects.create_user("mailteacher{w}", email="t{w}@example.org", role=Role.TEACHER)
prompt = Prompt.objects.create(owner=teacher, name="Ecology {w}", chat_model="qwen3:8b")
print(subscribe(teacher, prompt, "http://testserver/").token)
"""


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_the_mails_link_asks_then_its_button_stops_the_mail(live_app, new_page, journey, width):
    token = live_app.manage("shell", "-c", SETUP.format(w=width)).split()[-1]
    page = new_page(width, 844 if width < 800 else 900)
    page.goto(f"{live_app.url}/prompts/topics-mail/stop/{token}/")
    expect(page.get_by_text(f"Stop the mail of the week's topics of “Ecology {width}”?")).to_be_visible()
    journey.look(page, f"topics-mail-ask-{width}")
    page.get_by_role("button", name="Stop these mails").click()
    expect(page.get_by_test_id("unsubscribed")).to_contain_text(
        f"You will no longer get the week's topics of “Ecology {width}”"
    )
    journey.look(page, f"topics-mail-stopped-{width}")
    page.goto(f"{live_app.url}/prompts/topics-mail/stop/{token}/")  # opened again: already stopped
    expect(page.get_by_test_id("unsubscribed")).to_contain_text("used already")
    expect(page.get_by_role("button", name="Stop these mails")).to_have_count(0)
