"""A colleague without an account co-teaches one prompt (issue 46, items 2 and 3), in a real browser at
390 and 1366 px, in English and Finnish.

The owner creates a prompt naming a co-teacher's address nobody has: the form comes back with a
summary of what to fix at its top, focused and in view, its error linked to the co-teacher box, and
the invitation it names offered right there. Ticked, the prompt is made and the invitation mailed
(through a real SMTP server on loopback). The colleague opens the mailed link, signs up and sees
exactly that prompt as its co-teacher, and no page for making prompts or collections. axe-core checks
every step. In Finnish the journey asserts structure and ids: new sentences stay English until they
are translated.

The mail goes out from a web process of its own beside the shared live app (same database and Redis),
with a mail server set: the shared app has none, and other journeys show what that looks like."""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest
import requests
from playwright.sync_api import expect

from scripts.redis_stack import free_port
from tests.browser.conftest import no_overflow, start_web
from tests.fake_smtp import SmtpServer

pytestmark = pytest.mark.browser
PASSWORD = "invite-journey-pass-123"
SETUP = """
import json
from accounts.models import Role, User
suffix, password, language = json.loads({args!r})
User.objects.create_user(
    "omistaja" + suffix, password=password, role=Role.TEACHER, first_name="Olli", language=language
)
"""


@pytest.fixture(scope="module")
def mail_app(live_app):
    """A web process like the live app's, with a mail server: its address and the mail it sent."""
    smtp = SmtpServer().start()
    port = free_port()
    env = {**live_app.env, "EMAIL_HOST": "127.0.0.1", "EMAIL_PORT": str(smtp.port), "EMBEDDING_WARMUP": "0"}
    env["TEACHER_INVITATIONS"] = "0"  # the shared app lets invitations make teachers; this is the default
    web = start_web(port, env, subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url + "/login/", web)
        yield url, smtp.inbox
    finally:
        web.terminate()
        try:
            web.wait(timeout=15)
        except subprocess.TimeoutExpired:
            web.kill()
        smtp.stop()


def _wait_for(url: str, process: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the mail app's web process exited with {process.returncode}")
        try:
            if requests.get(url, timeout=2).status_code == 200:
                return
        except requests.RequestException:
            time.sleep(0.2)  # the server is still starting: poll its port, nothing else to wait on
    raise TimeoutError(url)


def log_in(page, url: str, username: str, password: str) -> None:
    """By the fields' ids: the labels are in the page's language."""
    page.goto(url + "/login/")
    no_overflow(page)
    page.locator("#id_username").fill(username)
    page.locator("#id_password").fill(password)
    page.locator("form:has(#id_password) button[type=submit]").click()
    page.wait_for_url(lambda address: "/login/" not in address)
    no_overflow(page)


@pytest.mark.parametrize("language", ["en", "fi"])
@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_an_unknown_co_teacher_is_invited_and_co_teaches_that_prompt_only(
    live_app, mail_app, new_page, journey, width, language
):
    url, inbox = mail_app
    size = (width, 844 if width < 800 else 900)
    locale = "fi-FI" if language == "fi" else "en-US"
    suffix = f"{width}{language}"
    live_app.manage("shell", "-c", SETUP.format(args=json.dumps([suffix, PASSWORD, language])))
    address = f"kollega{suffix}@uni.example"
    name = f"Tilastot {suffix}"

    owner = new_page(*size, locale=locale)
    log_in(owner, url, f"omistaja{suffix}", PASSWORD)
    owner.goto(url + "/prompts/new/")
    no_overflow(owner)
    owner.locator("#id_name").fill(name)
    owner.locator("#id_co_teachers_add").fill(address)
    owner.locator("form[enctype] button[type=submit]").last.click()

    # Refused: the summary at the top is focused and in view, and its link leads into the box.
    summary = owner.get_by_test_id("error-summary")
    expect(summary).to_be_focused()
    expect(summary).to_be_in_viewport()
    expect(summary).to_have_attribute("role", "alert")
    link = summary.locator('a[href="#id_co_teachers_add"]')
    expect(link).to_contain_text(address)
    if language == "en":
        expect(summary).to_contain_text("Nothing was saved")
        expect(link).to_contain_text("Co-teachers: Nobody has an account with the address")
    journey.look(owner, "summary-focused")
    link.click()
    expect(owner.locator("#id_co_teachers_add")).to_be_focused()
    expect(owner.locator("#id_co_teachers_add")).to_be_in_viewport()

    # The action the error names, right under the box: invite the address when saving.
    offer = owner.get_by_test_id("invite-address")
    expect(offer).to_have_value(address)
    offer.check()
    journey.look(owner, "invitation-offered")
    owner.locator("form[enctype] button[type=submit]").last.click()
    owner.wait_for_url(re.compile(r"/prompts/\d+/$"))
    prompt_path = re.search(r"/prompts/\d+/", owner.url)[0]
    expect(owner.locator(".messages")).to_contain_text(address)
    journey.look(owner, "prompt-made-invitation-mailed")

    # The mail is there when the page is: it is sent while the form is saved.
    mails = [m for m in inbox.messages if m["To"] == address]
    assert len(mails) == 1
    body = mails[0].get_body(preferencelist=("plain",)).get_content()
    mailed = re.search(r"http://\S+/invitations/[^/\s]+/", body)[0]
    assert mailed.startswith(url) and name in body

    # The colleague signs up from the mail's link and lands on that prompt as its co-teacher.
    colleague = new_page(*size, locale=locale)
    colleague.goto(mailed)
    expect(colleague.get_by_test_id("invitation")).to_contain_text(name)
    expect(colleague.get_by_test_id("invitation-scope")).to_be_visible()
    journey.look(colleague, "invitation-opened")
    colleague.locator("#id_username").fill(f"kollega{suffix}")
    colleague.locator("#id_first_name").fill("Kaisa")
    colleague.locator("#id_password1").fill("kollegan-salasana-987")
    colleague.locator("#id_password2").fill("kollegan-salasana-987")
    colleague.get_by_test_id("accept-invitation").click()
    colleague.wait_for_url(url + prompt_path)
    expect(colleague.locator("#id_name")).to_have_value(name)
    journey.look(colleague, "colleague-on-the-prompt")

    # Exactly that prompt, and no way to make prompts or collections of their own.
    colleague.goto(url + "/")
    expect(colleague.get_by_test_id("guest-prompts").get_by_role("link")).to_have_count(1)
    expect(colleague.get_by_test_id("guest-prompts").get_by_role("link")).to_have_text(name)
    expect(colleague.get_by_test_id("guest-collections")).to_have_count(0)
    expect(colleague.locator('a[href="/prompts/new/"], a[href="/collections/new/"]')).to_have_count(0)
    journey.look(colleague, "colleague-home")
    refused = colleague.goto(url + "/prompts/new/")
    assert refused.status == 403
    journey.look(colleague, "colleague-cannot-create")
