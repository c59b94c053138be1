"""Teachers check what the vision model read: pages it probably got wrong are flagged, and an
owner or co-owner corrects a page; the correction is what search finds, and stays through Retry
and re-index. Nobody else may correct."""

from __future__ import annotations

import re

import pymupdf
import pytest

from collections_app import files
from collections_app.models import FileStatus, PageCorrection, SourceFile
from tests.fake_ollama import Reply
from tests.fixtures_ingest import indexed

SENTENCES = [
    "Photosynthesis converts light energy into chemical energy stored in glucose molecules. " * 4,
    "Cellular respiration releases the energy stored in glucose through glycolysis and the Krebs cycle. " * 4,
    "Enzymes lower the activation energy of reactions without being consumed by the reaction itself. " * 4,
]
INVENTED = "Zebras migrate across the Serengeti plateau every December following ancient routes."


def biology_pdf() -> bytes:
    doc = pymupdf.open()
    for text in SENTENCES:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 770), text, fontsize=11)
    return doc.tobytes()


def vlm_inventing_on_page_2(body) -> Reply:
    """A vision model that reads each page faithfully, but adds a line of its own to page 2."""
    number = int(re.search(r"Page (\d+) of", body["messages"][-1]["content"]).group(1))
    text = SENTENCES[number - 1].strip()
    return Reply(content=f"{text}\n\n{INVENTED}\n" if number == 2 else f"{text}\n")


@pytest.fixture
def read_by_vlm(fast_collection, ingest_upload, ollama):
    ollama.responder = vlm_inventing_on_page_2
    source = ingest_upload(fast_collection, biology_pdf(), "biology.pdf", "vlm")
    assert source.status == FileStatus.READY, source.error
    return source


def test_a_page_where_the_model_invents_a_line_is_flagged_and_counted(read_by_vlm, client_for, owner):
    assert read_by_vlm.flagged_pages == [{"page": 2, "why": "unknown_words"}]
    collection_page = client_for(owner).get(f"/collections/{read_by_vlm.collection_id}/").content.decode()
    assert "1 page that the vision model may have read wrongly needs checking" in collection_page
    file_page = client_for(owner).get(f"/collections/files/{read_by_vlm.pk}/").content.decode()
    assert file_page.count('data-testid="page-flag"') == 1
    assert "may have invented some" in file_page
    assert f'src="/collections/files/{read_by_vlm.pk}/pages/2.png"' in file_page, "the page image beside its text"


def correct(client, source: SourceFile, page: int, text: str):
    return client.post(f"/collections/files/{source.pk}/pages/{page}/correct/", {"markdown": text})


def test_a_correction_is_searched_and_survives_retry_and_reindex(
    read_by_vlm, client_for, owner, co_owner, run_worker, fast_collection
):
    corrected = SENTENCES[1].strip() + "\n\nThe Krebs cycle is also called the citric acid cycle."
    response = correct(client_for(co_owner), read_by_vlm, 2, corrected)
    assert response.status_code == 302
    run_worker()
    source = SourceFile.objects.get(pk=read_by_vlm.pk)
    assert source.status == FileStatus.READY and source.flagged_pages == []
    assert indexed(fast_collection, "citric acid cycle") and not indexed(fast_collection, "Serengeti")
    [record] = PageCorrection.objects.filter(source=source)
    assert (record.user, record.page) == (co_owner, 2) and INVENTED in record.previous
    history = client_for(owner).get(f"/collections/files/{source.pk}/").content.decode()
    assert f"Corrected by {co_owner}" in history

    # Extracted afresh (what Retry does) and re-indexed: the model invents its line again, the
    # teacher's text still wins.
    files.requeue(source, re_extract=True)
    run_worker()
    files.reindex_collection(source.collection)
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.flagged_pages == []
    assert "citric acid cycle" in source.markdown and INVENTED not in source.markdown
    assert indexed(fast_collection, "citric acid cycle") and not indexed(fast_collection, "Serengeti")


def test_only_the_collections_teachers_may_correct_a_page(
    read_by_vlm, client_for, owner, co_owner, other_teacher, student, run_worker
):
    for outsider in (other_teacher, student):
        assert correct(client_for(outsider), read_by_vlm, 2, "Nothing here.").status_code in (403, 404)
        api = client_for(outsider).put(
            f"/api/v1/files/{read_by_vlm.pk}/pages/2", {"markdown": "Nothing."}, content_type="application/json"
        )
        assert api.status_code in (403, 404)
    read_by_vlm.collection.co_owners.remove(co_owner)  # taken away: the next save is refused
    assert correct(client_for(co_owner), read_by_vlm, 2, "Nothing here.").status_code in (403, 404)
    assert not PageCorrection.objects.exists()
    api = client_for(owner).put(
        f"/api/v1/files/{read_by_vlm.pk}/pages/2",
        {"markdown": "Glycolysis splits glucose."},
        content_type="application/json",
    )
    assert api.status_code == 200 and api.json()["user"] == str(owner)
    run_worker()
    assert "Glycolysis splits glucose." in SourceFile.objects.get(pk=read_by_vlm.pk).markdown


def test_an_empty_correction_is_refused_with_a_reason(read_by_vlm, client_for, owner):
    response = client_for(owner).put(
        f"/api/v1/files/{read_by_vlm.pk}/pages/2", {"markdown": "  "}, content_type="application/json"
    )
    assert response.status_code == 400 and "empty" in response.json()["detail"]
    missing = client_for(owner).put(
        f"/api/v1/files/{read_by_vlm.pk}/pages/9", {"markdown": "x"}, content_type="application/json"
    )
    assert missing.status_code == 404 and "no page 9" in missing.json()["detail"]


def test_a_correction_stays_with_its_own_file(read_by_vlm, client_for, owner, run_worker, ingest_upload):
    """The same PDF in another teacher's collection reuses the extraction, never the correction."""
    from collections_app.models import Collection

    correct(client_for(owner), read_by_vlm, 2, "Glycolysis splits glucose into pyruvate.")
    run_worker()
    elsewhere = Collection.objects.create(
        name="Other course", owner=owner, embedding_model=read_by_vlm.collection.embedding_model
    )
    copy = ingest_upload(elsewhere, biology_pdf(), "biology.pdf", "vlm")
    assert copy.status == FileStatus.READY
    assert "Glycolysis splits glucose" not in copy.markdown and INVENTED in copy.markdown
    assert copy.flagged_pages == [{"page": 2, "why": "unknown_words"}]
