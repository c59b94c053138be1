"""Text, Markdown and HTML files: what a teacher uploads most, found again with page and section."""

from __future__ import annotations

import pytest

from collections_app.models import FileStatus
from rag.ingest.chunking import chunk_pages
from rag.ingest.job import PageText
from rag.text import normalize_text
from tests.fixtures_ingest import OPENSTAX_PYTHON, indexed


def test_openstax_chapter_is_searchable_with_its_sections(fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, (OPENSTAX_PYTHON / "05-loops.md").read_bytes(), "05-loops.md")
    assert source.status == FileStatus.READY, source.error
    assert source.file_type == "markdown"
    assert source.chunk_count > 10
    hits = indexed(fast_collection, "step size")
    assert hits, "a phrase from the chapter must be in the index"
    assert any(h["heading_path"] == "Chapter 5: Loops > While loop > Counting with a while loop" for h in hits)
    assert all(h["page_start"] == -1 for h in hits)  # Markdown has no pages
    assert source.progress == 100


def test_html_becomes_markdown_without_scripts(fast_collection, ingest_upload):
    html = (
        b"<!doctype html><html><head><title>Week 3</title><script>steal()</script></head><body>"
        b"<nav>Home | Courses</nav><h1>Week 3</h1><h2>Photosynthesis</h2>"
        b"<p>Chlorophyll absorbs mostly blue and red light.</p>"
        b"<table><tr><th>Pigment</th><th>Colour</th></tr><tr><td>Carotene</td><td>orange</td></tr></table>"
        b"</body></html>"
    )
    source = ingest_upload(fast_collection, html, "week3.html")
    assert source.status == FileStatus.READY, source.error
    assert "steal" not in source.markdown and "Courses" not in source.markdown
    assert "| Carotene | orange |" in source.markdown
    [hit] = indexed(fast_collection, "absorbs mostly blue")
    assert hit["heading_path"] == "Week 3 > Photosynthesis"


def test_utf16_and_declared_charset_text_are_read_correctly(fast_collection, ingest_upload):
    utf16 = ingest_upload(fast_collection, "Ääkköset ovat tärkeitä.\n".encode("utf-16"), "fi.txt")
    latin1 = ingest_upload(
        fast_collection,
        '<html><head><meta charset="iso-8859-1"></head><body><p>Caf\xe9 cr\xe8me</p></body></html>'.encode("latin-1"),
        "menu.html",
    )
    assert utf16.status == latin1.status == FileStatus.READY
    assert "Ääkköset" in utf16.markdown
    assert "Café crème" in latin1.markdown


def test_plain_text_lines_starting_with_hash_are_not_headings(fast_collection, ingest_upload):
    source = ingest_upload(fast_collection, b"Intro text here.\n# not a heading, a comment\nmore text\n", "notes.txt")
    [hit] = indexed(fast_collection, "heading")
    assert hit["heading_path"] == ""
    assert source.status == FileStatus.READY


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Sis¨allys", "Sisällys"),
        ("Jyv¨askyl¨a", "Jyväskylä"),
        ("caf´e", "café"),
        ("compu-\nter science", "computer science"),
        ("Anglo-\nSaxon", "Anglo-Saxon"),
        ("ﬁnal ﬂow", "final flow"),
        ("e\u0301", "\u00e9"),  # NFC
        ("\x08git init\x08", "git init"),
    ],
)
def test_normalising_repairs_pdf_text(raw, clean):
    assert normalize_text(raw) == clean


def test_chunks_keep_pages_headings_and_overlap():
    pages = [
        PageText(1, "# Statistics\n\n## Sampling\n\n" + "A sample is drawn at random. " * 20 + "\n\nEnd of one."),
        PageText(2, "Start of two.\n\n" + "More about samples. " * 10 + "\n\n## Estimation\n\nThe mean estimates mu."),
    ]
    chunks = chunk_pages(pages, chunk_size=300, overlap=60)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert chunks[0].heading_path == "Statistics > Sampling" and chunks[0].page_start == 1
    assert all(len(c.text) <= 300 for c in chunks)
    spanning = [c for c in chunks if c.page_start == 1 and c.page_end == 2]
    assert spanning, "a chunk running over the page break reports both pages"
    last = chunks[-1]
    assert last.heading_path == "Statistics > Estimation" and last.page_start == 2
    assert "The mean estimates mu." in last.text
    # Overlap: consecutive chunks of one section share text, cut at sentence ends.
    assert chunks[1].text[:20] in chunks[0].text
    assert chunks[0].text.endswith(".")


def test_headings_inside_code_blocks_do_not_start_sections():
    md = "# Loops\n\n```python\n# a comment\nfor i in range(3):\n    print(i)\n```\n\nAfter the code."
    [chunk] = chunk_pages([PageText(None, md)])
    assert chunk.heading_path == "Loops"


def test_words_in_typographic_quotes_are_searchable(fast_collection, ingest_upload):
    # The index does not split words at “ ” ‘ ’: unfolded, `“random` would be one term.
    text = "A \u201crandom survey\u201d of the \u2018microprocessor\u2019 era."
    ingest_upload(fast_collection, text.encode(), "q.md")
    assert indexed(fast_collection, "random") and indexed(fast_collection, "microprocessor")


def test_words_at_line_starts_are_searchable(fast_collection, ingest_upload):
    ingest_upload(fast_collection, b"First line about refraction\nsecond line about diffraction\n", "waves.txt")
    assert indexed(fast_collection, "refraction") and indexed(fast_collection, "second line")


def test_file_page_shows_math_and_never_runs_uploaded_html(fast_collection, ingest_upload, client_for, owner):
    md = b"# Energy\n\nKinetic energy is $E = \\frac{1}{2} m v^2$.\n\n"
    md += b"<img src=x onerror=alert(1)><script>alert(2)</script>"
    source = ingest_upload(fast_collection, md, "energy.md")
    body = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert "<math" in body and "<mfrac>" in body
    assert "<img" not in body and "<script>alert" not in body  # shown as text at most, never as HTML
