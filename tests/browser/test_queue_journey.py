"""Issue 29 item 6 in a real browser: a queued file shows its place in the shared queue and an
estimate in the files table, at a phone's and a laptop's width, never "ingestion has started".

The files are put in the queue without jobs (as if every worker were busy elsewhere), so they stay
queued while the page is looked at (the live app's worker would queue jobs for them only after its
INGEST_STALE_SECONDS, set long there); the test takes them out again, since the worker process is
shared by the whole session and would otherwise take them with another test's job."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in

pytestmark = pytest.mark.browser

WIDTHS = [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")]
PASSWORD = "queue-pass-4567"
WAITING = r"^Waiting in the queue: 2 files before this one\. It should start (within a minute|in about \d+ minutes)\.$"

# A teacher whose collection has one file done two minutes' work ago (something to estimate by)
# and three files waiting in the queue, oldest first.
SETUP = """
from datetime import timedelta
from django.core.files.base import ContentFile
from django.utils import timezone
from accounts.models import Role, User
from collections_app.models import Collection, FileStatus, SourceFile
teacher = User.objects.create_user("{user}", password="{password}", role=Role.TEACHER)
c = Collection.objects.create(name="Queue {width}", owner=teacher, embedding_model="ollama:snowflake-arctic-embed2")
now = timezone.now()
for n, status in enumerate([FileStatus.READY, FileStatus.QUEUED, FileStatus.QUEUED, FileStatus.QUEUED]):
    f = SourceFile(collection=c, original_name=f"chapter-{{n}}.md", file_type="markdown", size=9,
                   sha256=f"{width}-{{n}}", status=status, attempt=1)
    f.file.save(f"{width}-{{n}}", ContentFile(b"# Chapter"), save=False)
    f.save()
SourceFile.objects.filter(collection=c, status=FileStatus.READY).update(
    started=now - timedelta(minutes=2), updated=now, progress=100)
"""
CLEAN_UP = """
from collections_app.models import FileStatus, SourceFile
waiting = SourceFile.objects.filter(collection__name="Queue {width}", status=FileStatus.QUEUED)
waiting.update(status=FileStatus.CANCELLED)
"""


@pytest.mark.parametrize("width", WIDTHS)
def test_a_queued_file_shows_its_place_and_an_estimate(live_app, new_page, journey, width):
    user = f"quinn{width}"
    live_app.manage("shell", "-c", SETUP.format(user=user, password=PASSWORD, width=width))
    try:
        page = new_page(width=width, height=844 if width < 500 else 900)
        log_in(page, live_app, user, PASSWORD)
        page.get_by_role("link", name=f"Queue {width}").click()
        rows = page.locator("#file-table tbody tr")
        expect(rows).to_have_count(4)
        first, third = rows.filter(has_text="chapter-1.md"), rows.filter(has_text="chapter-3.md")
        expect(first.locator(".file-detail")).to_have_text(re.compile(r"^Next in the queue\. It should start"))
        expect(third.locator(".file-detail")).to_have_text(re.compile(WAITING))
        expect(third.locator(".file-detail")).to_be_visible()
        expect(page.locator("main")).not_to_contain_text("ingestion has started")
        journey.look(page, "queued-files")  # no overflow, axe-core clean, a screenshot
    finally:
        live_app.manage("shell", "-c", CLEAN_UP.format(width=width))
