"""The collection page in a real browser: upload (picker and drag and drop), live progress, the file
page, delete. Daphne and the RQ worker run as real processes (tests/browser/conftest.py)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in, no_overflow

pytestmark = pytest.mark.browser

SETUP = """
from accounts.models import Role, User
from collections_app.models import Collection
teacher = User.objects.create_user("olli", password="olli-pass-4567", role=Role.TEACHER)
Collection.objects.create(name="Optics", owner=teacher, embedding_model="ollama:snowflake-arctic-embed2")
"""

DROP = """
() => {
  const data = new DataTransfer();
  data.items.add(new File(["# Lenses\\n\\nA convex lens converges parallel rays to its focal point."],
                          "lenses.md", {type: "text/markdown"}));
  const zone = document.getElementById("dropzone");
  zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
  zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
}
"""


def test_teacher_uploads_watches_progress_reads_a_file_and_deletes_it(live_app, new_page, journey, tmp_path):
    live_app.manage("shell", "-c", SETUP)
    mirrors = tmp_path / "mirrors.md"
    mirrors.write_text("# Mirrors\n\n## Plane mirrors\n\nThe angle of incidence equals the angle of reflection.\n")
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    page = new_page()
    log_in(page, live_app, "olli", "olli-pass-4567")
    page.get_by_role("link", name="Optics").click()
    no_overflow(page)
    journey.shot(page, "collection-empty")

    page.get_by_label("Drop files here, or choose them").set_input_files([str(mirrors), str(empty)])
    page.get_by_role("button", name="Upload").click()
    log = page.locator("#upload-log")
    expect(log).to_contain_text("“mirrors.md” uploaded")
    expect(log.locator("li.bad")).to_contain_text("“empty.txt” is empty")
    page.evaluate(DROP)
    expect(log).to_contain_text("“lenses.md” uploaded")

    rows = page.locator("#file-table tbody tr")
    expect(rows).to_have_count(2)
    for name in ("mirrors.md", "lenses.md"):  # pushed over the websocket by the worker process
        expect(rows.filter(has_text=name).locator(".file-status")).to_have_text("Ready", timeout=30_000)
    expect(rows.filter(has_text="mirrors.md").locator(".file-chunks")).to_have_text("1")
    journey.shot(page, "files-ready")
    journey.check_a11y(page)

    page.get_by_role("link", name="mirrors.md").click()
    expect(page.locator(".extracted").get_by_role("heading", name="Plane mirrors")).to_be_visible()
    expect(page.locator(".chunk-section")).to_have_text("Mirrors > Plane mirrors")
    no_overflow(page)
    journey.shot(page, "file-page")
    journey.check_a11y(page)

    page.go_back()
    page.once("dialog", lambda dialog: dialog.accept())
    page.locator("#file-table tbody tr", has_text="lenses.md").get_by_role("button", name="Delete").click()
    expect(page.locator("#file-table tbody tr")).to_have_count(1)
    page.reload()
    expect(page.locator("#file-table tbody tr")).to_have_count(1)
    expect(page.locator("#file-table")).not_to_contain_text(re.compile("lenses"))
