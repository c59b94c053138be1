"""Files a teacher can fix: a PDF read the wrong way is read again with the other method on the file
itself (corrections kept, the old passages searchable until replaced), a re-upload of the same file
says so, and fast extraction of a formula-heavy PDF suggests the vision model."""

from __future__ import annotations

import pymupdf
import pytest

from collections_app.models import FileStatus, SourceFile
from rag.ingest.pdf.formulas import MATH_HEAVY_SHARE, math_share
from tests.fixtures_ingest import DATA, PDFS, indexed, text_pdf, upload

SENTENCES = [
    "Variance measures how far values spread around their mean.",
    "The median is the middle value of an ordered sample.",
    "A histogram shows how often values fall into each bin.",
]
# What the vision model reads on the pages the text layer leaves empty or holding a placeholder.
HEADINGS = {4: "Boxplots", 5: "Quartiles", 6: "Outliers", 7: "Skewness", 8: "Kurtosis"}


def _scan_like_pdf(tmp_path) -> tuple[bytes, object]:
    # Pages 1-3 text; 4-5 empty; 6-8 the same placeholder (what a scan's text layer often holds).
    data = text_pdf([*SENTENCES, "", "", *["Scanned image 1"] * 3])
    path = tmp_path / "scan.pdf"
    path.write_bytes(data)
    return data, path


def _reread(client, source: SourceFile, method: str):
    return client.post(f"/api/v1/files/{source.pk}/reread", {"method": method}, content_type="application/json")


def test_a_fast_read_scan_is_read_again_with_the_vision_model_keeping_corrections_and_old_passages(
    fast_collection, ingest_upload, client_for, owner, co_owner, run_worker, ollama, pdf_vlm, tmp_path
):
    data, path = _scan_like_pdf(tmp_path)
    source = ingest_upload(fast_collection, data, "scan.pdf", "fast")
    assert source.quality_warning == "5 of 8 pages had no readable text"
    page = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert 'data-testid="reread-suggestion"' in page and "Read again with the vision model" in page

    corrected = "The median splits an ordered sample in two halves of equal size."
    client_for(co_owner).post(f"/collections/files/{source.pk}/pages/2/correct/", {"markdown": corrected})
    run_worker()
    old_chunks = SourceFile.objects.get(pk=source.pk).chunk_count

    vlm = pdf_vlm(path, headings=HEADINGS)
    ollama.responder = vlm
    response = _reread(client_for(co_owner), source, "vision")
    assert response.status_code == 200 and response.json()["status"] == "queued"
    # Until the new reading replaces them, students still find the old passages.
    assert indexed(fast_collection, "histogram") and SourceFile.objects.get(pk=source.pk).chunk_count == old_chunks

    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.extractor.startswith("pdf-vlm") and source.pdf_mode == "vlm"
    assert sorted(set(vlm.calls)) == list(range(1, 9))
    assert source.unreadable_pages == [] and source.quality_warning == ""
    assert "halves of equal size" in source.markdown, "the teacher's correction is applied to the new reading"
    assert indexed(fast_collection, "Kurtosis") and indexed(fast_collection, "halves")


def test_without_a_vision_model_the_page_says_so_and_vision_is_refused(
    fast_collection, ingest_upload, client_for, owner, ollama, tmp_path
):
    ollama.models = ["snowflake-arctic-embed2:latest"]  # no vision model on the server
    source = ingest_upload(fast_collection, _scan_like_pdf(tmp_path)[0], "scan.pdf", "fast")
    page = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert 'data-testid="vision-missing"' in page and "no vision model available" in page
    assert 'data-testid="reread-vision"' not in page and 'data-testid="reread-fast"' in page

    refused = _reread(client_for(owner), source, "vision")
    assert refused.status_code == 503 and "no vision model available" in refused.json()["detail"]
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.attempt == 1
    assert _reread(client_for(owner), source, "fast").status_code == 200


@pytest.mark.parametrize(
    ("who", "status"), [("owner", 200), ("co_owner", 200), ("other_teacher", 404), ("enrolled_student", 403)]
)
def test_only_the_collections_teachers_may_read_a_file_again(
    request, who, status, fast_collection, ingest_upload, client_for, tmp_path
):
    source = ingest_upload(fast_collection, _scan_like_pdf(tmp_path)[0], "scan.pdf", "fast")
    response = _reread(client_for(request.getfixturevalue(who)), source, "fast")
    assert response.status_code == status
    source.refresh_from_db()
    assert source.attempt == (2 if status == 200 else 1)


def test_a_file_that_is_not_a_pdf_or_is_being_read_is_not_read_again(
    fast_collection, ingest_upload, client_for, owner, tmp_path
):
    notes = ingest_upload(fast_collection, b"# Means\n\nThe mean adds the values and divides.", "means.md")
    refused = _reread(client_for(owner), notes, "fast")
    assert refused.status_code == 409 and "only PDFs" in refused.json()["detail"]

    queued = upload(client_for(owner), fast_collection, _scan_like_pdf(tmp_path)[0], "scan.pdf", "fast").json()
    busy = _reread(client_for(owner), SourceFile.objects.get(pk=queued["id"]), "vision")
    assert busy.status_code == 409 and "being read now" in busy.json()["detail"]


def test_uploading_the_same_pdf_again_explains_how_to_read_it_again(
    fast_collection, ingest_upload, client_for, owner, tmp_path
):
    data = _scan_like_pdf(tmp_path)[0]
    ingest_upload(fast_collection, data, "scan.pdf", "fast")
    again = upload(client_for(owner), fast_collection, data, "scan-copy.pdf", "vlm")
    assert again.status_code == 409
    detail = again.json()["detail"]
    assert "already in this collection as “scan.pdf”" in detail
    assert "Read again with the vision model" in detail and "no need to delete it" in detail


def test_fast_extraction_of_a_formula_heavy_pdf_suggests_the_vision_model(
    fast_collection, ingest_upload, client_for, owner
):
    cheatsheet = ingest_upload(
        fast_collection, (PDFS / "cs229-refresher-algebra-calculus.pdf").read_bytes(), "algebra.pdf", "fast"
    )
    assert cheatsheet.status == FileStatus.READY and "full of formulas" in cheatsheet.notes
    page = client_for(owner).get(f"/collections/files/{cheatsheet.pk}/").content.decode()
    assert "full of formulas" in page and 'data-testid="reread-suggestion"' in page

    paper = ingest_upload(fast_collection, (PDFS / "inlg-W17-3505.pdf").read_bytes(), "paper.pdf", "fast")
    assert paper.status == FileStatus.READY and "formulas" not in paper.notes


@pytest.mark.parametrize(
    ("path", "heavy"),
    [
        (PDFS / "cs229-cheatsheet-supervised-learning.pdf", True),
        (PDFS / "cs229-refresher-probabilities-statistics.pdf", True),
        (PDFS / "ingold-tools4scicomp.pdf", False),
        (DATA / "pdfs" / "de" / "ingold-eidprog-einfuehrung-programmieren.pdf", False),
    ],
    ids=lambda v: getattr(v, "stem", v),
)
def test_the_formula_share_separates_cheat_sheets_from_programming_books(path, heavy):
    share = math_share(page.get_text() for page in pymupdf.open(path))
    assert (share >= MATH_HEAVY_SHARE) == heavy, share
