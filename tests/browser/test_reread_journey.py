"""Issue 29 item 5 in a real browser, at a phone's and a laptop's width: a PDF read with fast
extraction has unreadable pages; its page suggests the vision model and reads it again on the file
itself (no delete and re-upload); uploading the same file again explains this instead of only
refusing; the vision model's reading makes every page readable."""

from __future__ import annotations

import re

import pymupdf
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import log_in
from tests.fake_ollama import Reply

pytestmark = pytest.mark.browser

WIDTHS = [pytest.param(390, id="phone"), pytest.param(1366, id="desktop")]
PASSWORD = "reread-pass-4567"
SETUP = """
from accounts.models import Role, User
from collections_app.models import Collection
teacher = User.objects.create_user("rita{w}", password="{password}", role=Role.TEACHER)
Collection.objects.create(name="Statistics {w}", owner=teacher, embedding_model="ollama:snowflake-arctic-embed2")
"""
SENTENCES = [
    "Variance measures how far values spread around their mean.",
    "The median is the middle value of an ordered sample.",
    "A histogram shows how often values fall into each bin.",
]
TOPICS = ["Boxplots", "Quartiles", "Outliers", "Skewness", "Kurtosis"]


def scan_like_pdf(width: int) -> bytes:
    """Three pages of text, two empty, three with a scan's placeholder (made distinct per width,
    since the same bytes may be in one collection only once)."""
    doc = pymupdf.open()
    for line in [*SENTENCES, "", "", *[f"Scanned image {width}"] * 3]:
        doc.new_page().insert_text((72, 72), line)
    return doc.tobytes()


def vision_model(body: dict) -> Reply:
    """Reads page N as a heading and a sentence of its own (what a model makes of a scanned page)."""
    number = int(re.search(r"Page (\d+) of", body["messages"][-1]["content"]).group(1))
    topic = TOPICS[number - 4] if number > 3 else f"Basics part {'ABC'[number - 1]}"
    return Reply(content=f"## {topic}\n\nThis page explains {topic.lower()} with a worked example.\n")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_teacher_reads_a_scanned_pdf_again_with_the_vision_model(
    live_app, new_page, journey, ollama, width, tmp_path
):
    live_app.manage("shell", "-c", SETUP.format(w=width, password=PASSWORD))
    pdf = tmp_path / "scan.pdf"
    pdf.write_bytes(scan_like_pdf(width))
    page = new_page(width=width, height=844 if width < 500 else 900)
    log_in(page, live_app, f"rita{width}", PASSWORD)
    page.get_by_role("link", name=f"Statistics {width}").click()

    # Uploaded with fast extraction: five of eight pages give nothing.
    page.locator("#pdf-mode").select_option("fast")
    page.get_by_label("Drop files here, or choose them").set_input_files(str(pdf))
    page.get_by_role("button", name="Upload").click()
    row = page.locator("#file-table tbody tr").filter(has_text="scan.pdf")
    expect(row.locator(".file-status")).to_have_text("Ready", timeout=60_000)
    warning = row.get_by_test_id("quality-warning")
    expect(warning).to_contain_text("5 of 8 pages had no readable text")

    # The same file again: refused, with what to do instead.
    page.get_by_label("Drop files here, or choose them").set_input_files(str(pdf))
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-log")).to_contain_text("Read again with the vision model")
    expect(page.locator("#upload-log")).to_contain_text("no need to delete it")
    journey.look(page, "reupload-explained")

    # The file's page suggests the method that was not used, and offers both.
    warning.click()
    expect(page.get_by_test_id("reread-suggestion")).to_contain_text("read with fast extraction")
    expect(page.get_by_test_id("reread-fast")).to_be_visible()
    journey.look(page, "reread-offered")

    ollama.responder = vision_model
    page.get_by_test_id("reread-vision").click()
    expect(page.locator("main")).to_contain_text("“scan.pdf” is queued to be read again.")
    page.get_by_role("link", name=f"Statistics {width}").first.click()
    row = page.locator("#file-table tbody tr").filter(has_text="scan.pdf")
    expect(row.locator(".file-status")).to_have_text("Ready", timeout=60_000)
    expect(row.get_by_test_id("quality-warning")).to_have_count(0)
    row.get_by_role("link", name="scan.pdf").click()
    expect(page.get_by_test_id("file-status")).to_have_text("Ready")
    expect(page.locator("main")).to_contain_text("This page explains kurtosis")
    expect(page.get_by_test_id("unreadable-pages")).to_have_count(0)
    journey.look(page, "read-again")
