"""Files that once took a job process past 1 GiB (issue 31 item 5; `bench/ingest.py --memory`
measures the whole job): what each now costs, and that it is still read right."""

from __future__ import annotations

import tracemalloc

from collections_app.models import FileStatus
from rag.index import ChunkStore
from rag.ingest import chunking
from rag.ingest.html import MAX_DEPTH, NESTED_TOO_DEEP, html_to_markdown
from rag.ingest.job import IngestFailed, PageText
from rag.ingest.steps import embedding_input


def _nested(levels: int) -> str:
    return "<html><body>" + "<div>" * levels + "deep" + "</div>" * levels + "</body></html>"


def test_html_nested_a_million_levels_is_refused_before_its_tree_is_built():
    html = _nested(1_000_000)  # 11 MB
    tracemalloc.start()
    try:
        html_to_markdown(html)
        raise AssertionError("refused")
    except IngestFailed as exc:
        assert str(exc) == NESTED_TOO_DEEP
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20, f"{peak / 2**20:.0f} MiB allocated to refuse it (its tree took ~600 MiB)"


def test_html_nested_as_deep_as_the_limit_is_read():
    assert html_to_markdown(_nested(MAX_DEPTH - 2)).strip() == "deep"  # html and body are two levels
    try:
        html_to_markdown(_nested(MAX_DEPTH))
        raise AssertionError("refused")
    except IngestFailed as exc:
        assert str(exc) == NESTED_TOO_DEEP


def test_void_elements_and_closed_siblings_do_not_count_as_nesting():
    items = "".join(f"<li>Point {i}<br><img src=x alt='figure {i}'><hr></li>" for i in range(2000))
    markdown = html_to_markdown(f"<html><body><ul>{items}</ul><p>The end.</p></body></html>")
    assert "Point 1999" in markdown and "figure 1999" in markdown and "The end." in markdown


def test_a_markdown_file_on_one_line_is_text_not_one_huge_heading():
    """Its line breaks lost, a file reads "# Title ## Part … text …" for megabytes: as a heading it
    became every passage's heading path, and each passage's embedding input held the whole file."""
    line = "# Optics ## Refraction " + "Light bends when it passes from air into water. " * 20_000  # ~1 MB
    chunks = chunking.chunk_pages([PageText(None, line)])
    assert len(chunks) > 500
    assert all(c.heading_path == "" for c in chunks)
    assert max(len(embedding_input(c)) for c in chunks) <= 1000
    assert chunks[0].text.startswith("# Optics ## Refraction Light bends")


def test_a_one_line_markdown_file_is_ingested_with_short_passages(fast_collection, ingest_upload):
    line = "# Optics ## Refraction " + "Light bends when it passes from air into water. " * 2_000
    source = ingest_upload(fast_collection, line.encode(), "one-line.md")
    assert source.status == FileStatus.READY, source.error
    stored = ChunkStore(fast_collection.pk).file_chunks(source.pk)
    assert len(stored) == source.chunk_count > 50
    assert all(len(chunk.heading_path) < 100 and len(chunk.text) <= 1000 for chunk in stored)
