"""PDFs from ../shared/data through the vision model (test server) and the fast text path."""

from __future__ import annotations

import pymupdf

from collections_app.models import FileStatus, SourceFile
from tests.fixtures_ingest import PDFS, blank_pdf, chunk_keys, chunks_containing, indexed, text_pdf, upload

CS229 = PDFS / "cs229-cheatsheet-supervised-learning.pdf"
INLG = PDFS / "inlg-W17-3505.pdf"
NOTES = PDFS / "ingold-tools4scicomp.pdf"
CS229_HEADINGS = {
    1: "Introduction to Supervised Learning",
    2: "Linear models",
    3: "Support Vector Machines",
    4: "Ensemble methods",
}


def test_cheat_sheet_read_by_vision_model_keeps_pages_headings_and_tables(
    fast_collection, ingest_upload, ollama, pdf_vlm, settings, client_for, owner
):
    settings.INGEST_VLM_CONCURRENCY = 3
    vlm = pdf_vlm(CS229, CS229_HEADINGS, delay=0.2)
    ollama.responder = vlm
    source = ingest_upload(fast_collection, CS229.read_bytes(), "cheatsheet.pdf", "vlm")

    assert source.status == FileStatus.READY, source.error
    assert source.extractor == "pdf-vlm:qwen3-vl:8b"
    assert source.pages == 4 and source.notes == ""
    assert sorted(vlm.calls) == [1, 2, 3, 4] and vlm.images_ok
    assert 2 <= vlm.max_in_flight <= 3, "pages are read concurrently, never more than the setting allows"
    hits = indexed(fast_collection, "closed form solution")
    assert hits and {(h["page_start"], h["heading_path"]) for h in hits} == {(2, "Linear models")}
    assert "| $\\theta$ | parameters |" in source.markdown

    page = client_for(owner).get(f"/collections/files/{source.id}/")
    assert page.status_code == 200
    body = page.content.decode()
    assert "<table>" in body and "Page 2" in body and "Linear models" in body
    assert "<math" in body  # the model's LaTeX is shown as math


def test_page_the_model_keeps_failing_falls_back_to_its_text_with_a_note(
    fast_collection, ingest_upload, ollama, pdf_vlm, settings
):
    settings.INGEST_VLM_RETRIES = 2
    vlm = pdf_vlm(INLG, failing={3})
    ollama.responder = vlm
    source = ingest_upload(fast_collection, INLG.read_bytes(), "inlg-paper.pdf", "vlm")

    assert source.status == FileStatus.READY, source.error
    assert vlm.calls.count(3) == 3, "the failing page is tried once and retried twice"
    assert "could not read page 3;" in source.notes
    assert source.extractor.endswith("(partial)")
    hits = [h for h in indexed(fast_collection, "Vocabulary Selection") if h["page_start"] <= 3 <= h["page_end"]]
    assert hits, "the page's own text layer stands in for the model's reading"
    assert any(h["heading_path"] == "Page 4" for h in indexed(fast_collection, "linear combination"))


def test_lecture_notes_fast_path_finds_phrases_on_their_pages_and_sections(fast_collection, ingest_upload, ollama):
    source = ingest_upload(fast_collection, NOTES.read_bytes(), "tools4scicomp.pdf", "fast")

    assert source.status == FileStatus.READY, source.error
    assert source.pages == 119 and source.extractor == "pdf-fast"
    assert source.chunk_count > 300
    assert not [body for path, body in ollama.requests if path == "/api/chat"], "fast mode never calls the VLM"
    git_init = chunks_containing(source, "one initializes the repository by means of")
    assert git_init and {(h.page_start, h.heading_path) for h in git_init} == {
        (11, "Version Control with Git > 2.4 Setting up a local repository")
    }
    linspace = indexed(fast_collection, "linspace")
    assert any(h["heading_path"].endswith("4.2.3 Creating arrays") and h["page_start"] in (59, 60) for h in linspace)
    # The running header of every page is not indexed over and over.
    assert len(indexed(fast_collection, "Tools for Scientific Computing Release")) < 5


def test_fast_path_finds_a_papers_sections_by_their_fonts_when_it_has_no_outline(
    fast_collection, ingest_upload, ollama
):
    assert pymupdf.open(INLG).get_toc() == []
    source = ingest_upload(fast_collection, INLG.read_bytes(), "paper.pdf", "fast")

    assert source.status == FileStatus.READY, source.error
    title = "Improving the Naturalness and Expressivity of Language Generation for Spanish"
    assert f"# {title}\n" in source.markdown  # set over two lines, one heading
    assert "\n## 1 Introduction\n" in source.markdown and "\n### 3.1 Vocabulary Selection\n" in source.markdown
    intro = chunks_containing(source, "systems are usually applied to")
    assert intro and all(c.heading_path == f"{title} > 1 Introduction" for c in intro)
    vocabulary = chunks_containing(source, "The vocabulary selection module chooses")
    assert {c.heading_path for c in vocabulary} == {f"{title} > 3 Surface Realisation Approach"}
    # Running text is never taken for a heading.
    assert all(len(line) < 90 for line in source.markdown.splitlines() if line.startswith("#"))


def test_fast_path_marks_no_headings_in_a_pdf_set_all_in_bold():
    from rag.ingest.pdf import headings_by_page

    doc = pymupdf.open()
    for n in range(3):
        page = doc.new_page()
        page.insert_text((72, 72), f"Poster panel {n}", fontname="hebo", fontsize=20)
        for row in range(10):
            page.insert_text((72, 110 + 14 * row), f"Bold statement {row} about the work.", fontname="hebo")
    assert headings_by_page(doc) == ({}, False)


def test_auto_mode_without_a_vision_model_reads_the_text_layer(fast_collection, ingest_upload, ollama):
    ollama.models = [m for m in ollama.models if not m.startswith("qwen3-vl")]
    source = ingest_upload(fast_collection, text_pdf(["Entropy measures uncertainty."]), "entropy.pdf")
    assert source.status == FileStatus.READY
    assert source.extractor == "pdf-fast" and source.notes == ""
    assert indexed(fast_collection, "entropy measures uncertainty")


def test_vision_mode_without_the_model_still_ingests_and_says_so(fast_collection, ingest_upload, ollama):
    ollama.models = [m for m in ollama.models if not m.startswith("qwen3-vl")]
    source = ingest_upload(fast_collection, text_pdf(["Gradient descent takes small steps."]), "gd.pdf", "vlm")
    assert source.status == FileStatus.READY
    assert "was not reachable" in source.notes and "Retry" in source.notes


def test_scanned_pdf_without_vision_model_fails_with_advice(fast_collection, ingest_upload, ollama):
    ollama.models = [m for m in ollama.models if not m.startswith("qwen3-vl")]
    source = ingest_upload(fast_collection, blank_pdf(3), "scan.pdf")
    assert source.status == FileStatus.FAILED
    assert "No text could be found" in source.error and "Retry" in source.error
    assert chunk_keys(fast_collection) == []


def test_decompression_bomb_fails_and_the_worker_goes_on(fast_collection, client_for, owner, run_worker, settings):
    settings.INGEST_MAX_STREAM_BYTES = 1_000_000
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Looks harmless.")
    doc.update_stream(page.get_contents()[0], b"BT /F1 12 Tf 72 72 Td (Hi) Tj ET\n" + b" " * 5_000_000)
    bomb = doc.tobytes()
    assert len(bomb) < 100_000
    client = client_for(owner)
    assert upload(client, fast_collection, bomb, "bomb.pdf", "fast").status_code == 201
    assert upload(client, fast_collection, b"Ordinary notes about kinetics.", "ok.txt").status_code == 201
    run_worker()
    bad, good = SourceFile.objects.get(original_name="bomb.pdf"), SourceFile.objects.get(original_name="ok.txt")
    assert bad.status == FileStatus.FAILED and "expands to more than the server accepts" in bad.error
    assert good.status == FileStatus.READY
    assert {h["file_id"] for h in indexed(fast_collection, "kinetics")} == {good.id}


def test_pdf_damaged_after_upload_fails_without_touching_the_index(
    fast_collection, client_for, owner, run_worker, ingest_upload
):
    earlier = ingest_upload(fast_collection, b"Photosynthesis happens in chloroplasts.", "bio.txt")
    response = upload(client_for(owner), fast_collection, text_pdf(["Mitochondria make ATP."]), "cell.pdf", "fast")
    source = SourceFile.objects.get(pk=response.json()["id"])
    with open(source.file.path, "wb") as stored:  # the disk copy goes bad before the worker reads it
        stored.write(b"%PDF-1.7\n" + b"\x00garbage" * 100)
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.FAILED and "damaged" in source.error
    assert [h["file_id"] for h in indexed(fast_collection, "chloroplasts")] == [earlier.id]


def test_truncated_pdf_is_repaired_and_the_teacher_is_told(fast_collection, ingest_upload):
    data = INLG.read_bytes()
    source = ingest_upload(fast_collection, data[: len(data) // 2], "half-downloaded.pdf", "fast")
    assert source.status == FileStatus.READY
    assert "damaged and had to be repaired" in source.notes
    assert source.chunk_count > 0
