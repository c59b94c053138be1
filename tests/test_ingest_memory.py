"""Files that once took a job process past 1 GiB (issue 31 item 5; `bench/ingest.py --memory`
measures the whole job): what each now costs, and that it is still read right. And a real worker's
job process embedding a whole file with the local embedder (the default) stays under 1 GiB (issue 44
item 6; docs/RELIABILITY.md row 5e)."""

from __future__ import annotations

import statistics
import tracemalloc
import uuid
from pathlib import Path

import pytest

from collections_app.models import FileStatus
from rag.index import ChunkStore
from rag.ingest import chunking
from rag.ingest.html import MAX_DEPTH, NESTED_TOO_DEEP, html_to_markdown
from rag.ingest.job import IngestFailed, PageText
from rag.ingest.steps import embedding_input
from tests.databases import migrated_sqlite
from tests.memory_probes import embed_pdf_passages
from tests.shared_data import shared_data
from tests.test_embed_threads import finished
from tests.test_worker_process import LiveWorkers

NOTES = shared_data(Path(__file__).resolve().parent.parent) / "pdfs" / "en" / "ingold-tools4scicomp.pdf"
LIMIT_MIB = 1024  # a job process's peak RSS with the default settings (docs/RELIABILITY.md)
GROWTH_MIB = 64  # what the RSS may still grow once a fifth of the passages are embedded (was ~135)


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


@pytest.fixture
def default_worker(tmp_path):
    """The real worker with the default embedder (local, loaded before it forks) and thread counts."""
    workers = LiveWorkers(tmp_path)
    workers.env["EMBEDDING_MODEL"] = "local:all-MiniLM-L6-v2"
    for variable in (
        "EMBED_THREADS",
        "INGEST_EMBED_BATCH",
        "INGEST_EMBED_BATCH_CHARS",
        "ONEDNN_PRIMITIVE_CACHE_CAPACITY",
    ):
        workers.env.pop(variable, None)
    migrated_sqlite(workers.database, workers.env)
    yield workers
    workers.stop()


@pytest.mark.slow
def test_a_job_embedding_the_119_page_notes_stays_under_1_gib_and_does_not_grow(default_worker):
    """oneDNN's cache of a primitive per tensor shape pinned the heap's space between the forward
    passes' buffers: the job's memory grew with every batch of long passages, to ~1 GiB for these
    notes from the real worker (rag/providers/local.py)."""
    default_worker.start()
    report = finished(embed_pdf_passages.enqueue(str(NOTES), uuid.uuid4().hex), default_worker, timeout=900)
    assert report["passages"] > 500 and report["cached"] == 0
    rss = [mib for done, mib in report["after"] if done]
    trend = ", ".join(f"{mib:.0f}" for mib in rss[:: max(1, len(rss) // 12)])
    assert report["peak"] < LIMIT_MIB, f"peak {report['peak']:.0f} MiB RSS (from {report['start']:.0f}): {trend}"
    # Once a fifth of the passages are embedded (the longest first), the rest need no more memory:
    # the RSS after the last half of the batches (their median: one batch's buffers come and go).
    fifth = next(mib for done, mib in report["after"] if done >= report["passages"] // 5)
    later = statistics.median(rss[len(rss) // 2 :])
    assert later - fifth < GROWTH_MIB, f"RSS after each batch grew from {fifth:.0f} to {later:.0f} MiB: {trend}"
