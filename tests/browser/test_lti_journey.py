"""A learning platform connected with one URL, then its course roster synced (issue 41), at 390 and
1366 px with axe-core: an administrator pastes CurreChat's registration URL into the test platform
(tests/lti_platform_http.py), which opens it in a window as Moodle does; CurreChat registers itself
and tells the platform's page it is done; the administrator approves the platform in CurreChat's
admin. A teacher then opens the course's CurreChat activity in the platform (the platform's OIDC
login endpoint posts a signed id_token in the browser), presses "Sync now" on the roster, and sees
who has not started yet."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from playwright.sync_api import expect

from lti.nrps import CLAIM
from lti.provision import CUSTOM_CODE
from tests.browser.conftest import log_in, no_overflow
from tests.lti_platform import INSTRUCTOR, LEARNER, TestPlatform
from tests.lti_platform_http import PlatformServer

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from chat.models import Prompt
User.objects.create_superuser("lti-admin-@W@", "lti-admin-@W@@example.edu", "lti-admin-pass-123")
teacher = User.objects.create_user("ilona-lti-@W@", password="ilona-pass-123", role=Role.TEACHER)
prompt = Prompt.objects.create(owner=teacher, name="Statistics assistant @W@", chat_model="qwen3:8b",
                               chat_visibility="named")
print("PROMPT", prompt.pk, prompt.join_code)
"""
# The superuser's link of the teacher's platform account to her CurreChat account (the LtiIdentity
# admin), made before her first launch so the launch opens the prompt she owns.
LINK_TEACHER = """
from accounts.models import User
from lti.models import LtiIdentity, Platform
LtiIdentity.objects.create(platform=Platform.objects.get(client_id="journey-client-@W@"), subject="teacher-@W@",
                           user=User.objects.get(username="ilona-lti-@W@"))
"""


@pytest.fixture
def lms(request):
    width = request.node.callspec.params["width"]
    server = PlatformServer(f"journey-client-{width}")
    yield server
    server.stop()


def reload_until(page, text: str) -> None:
    """The roster page says to reload it in a moment to see what the sync did: reload until it shows
    `text` (the sync runs in the worker)."""
    log = page.get_by_test_id("sync-log")
    deadline = time.monotonic() + 60
    while text not in log.inner_text():
        assert time.monotonic() < deadline, f"the sync log still says {log.inner_text()!r}"
        page.wait_for_timeout(300)
        page.reload()
        no_overflow(page)
    # The page reads the roster before the sync panel: a sync that committed between the two reads
    # shows its log beside the roster from before it (seen once in a full run). Read again after it.
    page.reload()
    no_overflow(page)


def register_and_approve(live_app, new_page, journey, lms: PlatformServer, width: int) -> None:
    admin = new_page(width, 900)
    lms_page = admin.context.new_page()
    lms_page.goto(lms.base + "/tools")
    journey.look(lms_page, f"platform-tools-{width}")
    lms_page.get_by_label("Tool URL").fill(live_app.url + "/lti/register/")
    with lms_page.expect_popup() as opened:
        lms_page.get_by_role("button", name="Add tool").click()
    window = opened.value
    expect(window.get_by_test_id("registration-done")).to_contain_text("A CurreChat administrator must approve")
    journey.look(window, f"registered-{width}")
    # The page told the platform's page it is done (org.imsglobal.lti.close), across origins.
    expect(lms_page.get_by_role("status")).to_have_text("The tool finished its registration.")
    with window.expect_event("close"):
        lms_page.get_by_role("button", name="Finish").click()
    assert [r["client_name"] for r in lms.registrations] == ["CurreChat"]

    log_in(admin, live_app, f"lti-admin-{width}", "lti-admin-pass-123")
    admin.goto(live_app.url + "/admin/lti/platform/")
    no_overflow(admin)
    admin.locator("#searchbar").fill(f"journey-client-{width}")
    admin.get_by_role("button", name="Search").click()
    no_overflow(admin)
    row = admin.locator("#result_list tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("waiting for approval")
    row.locator("input[name=_selected_action]").check()
    admin.locator("select[name=action]").select_option(label="Approve the selected platforms")
    admin.get_by_role("button", name="Go").click()
    expect(admin.locator(".messagelist")).to_contain_text("1 platform approved: its courses can open CurreChat.")
    expect(row).to_contain_text("approved")
    journey.look(admin, f"approved-{width}")


@pytest.mark.parametrize("width", [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")])
def test_a_platform_registered_with_one_url_and_approved_syncs_its_roster_for_the_teacher(
    live_app, new_page, journey, lms, width
):
    output = live_app.manage("shell", "-c", SETUP.replace("@W@", str(width)))
    prompt_pk, join_code = output.split("PROMPT ", 1)[1].split()[:2]
    register_and_approve(live_app, new_page, journey, lms, width)
    live_app.manage("shell", "-c", LINK_TEACHER.replace("@W@", str(width)))

    # The platform's side: its key, what CurreChat published as its key set, the course's members.
    platform = TestPlatform(
        issuer=lms.base, client_id=lms.client_id, deployment_id="deployment-9", auth_login_url=f"{lms.base}/auth"
    )
    lms.platform_jwks = platform.jwks()
    with urllib.request.urlopen(lms.registrations[-1]["jwks_uri"], timeout=10) as answer:  # noqa: S310 (loopback)
        lms.tool_jwks = json.load(answer)
    lms.add(f"teacher-{width}", INSTRUCTOR, "Ilona Opettaja")
    lms.add("learner-1", LEARNER, "Liisa Learner")
    lms.add("learner-2", LEARNER, "Pekka Pupil")
    nrps: dict[str, Any] = {CLAIM: {"context_memberships_url": lms.memberships_url(), "service_versions": ["2.0"]}}
    lms.login_hint = f"teacher-{width}"
    lms.launcher = lambda nonce: platform.sign(
        platform.claims(nonce, sub=f"teacher-{width}", roles=(INSTRUCTOR,), custom={CUSTOM_CODE: join_code}, **nrps)
    )

    teacher = new_page(width, 900)
    teacher.goto(lms.base + "/course")
    journey.look(teacher, f"course-{width}")
    teacher.get_by_role("link", name="Ask the course assistant").click()
    teacher.wait_for_url(f"{live_app.url}/prompts/{prompt_pk}/")
    # The platform's auto-posting form shows for an instant on the way (not a CurreChat page).
    teacher.checked_addresses.update(u for u in teacher.visited_addresses if u.startswith(f"{lms.base}/auth"))
    no_overflow(teacher)
    expect(teacher.get_by_role("heading", level=1)).to_contain_text(f"Statistics assistant {width}")

    # The launch queued the first sync; then one more student joins the course in the platform.
    reload_until(teacher, "3 added, 0 updated, 0 removed, 0 unchanged")
    lms.add("learner-3", LEARNER, "Saara Student")
    teacher.get_by_role("button", name="Sync now").click()
    no_overflow(teacher)
    expect(teacher.get_by_text("Roster sync started.")).to_be_visible()
    reload_until(teacher, "1 added, 0 updated, 0 removed, 3 unchanged")
    assert not lms.refused, lms.refused

    expect(teacher.get_by_test_id("not-started-count")).to_have_text("3 students have not started yet.")
    rows = teacher.get_by_test_id("student-row")
    expect(rows).to_have_count(3)
    for name in ("Liisa Learner", "Pekka Pupil", "Saara Student"):
        expect(rows.filter(has_text=name).get_by_test_id("not-started")).to_have_text("not started yet")
    journey.look(teacher, f"roster-synced-{width}")
