"""Honest file quality (pages without readable text are counted and shown) and the collection page
for hundreds of files: filter, sort and pages, the same in the API; settings on a page of their own."""

from __future__ import annotations

import pytest

from collections_app.models import FileStatus, SourceFile
from tests.fixtures_ingest import text_pdf

SENTENCES = [
    "Variance measures how far values spread around their mean.",
    "The median is the middle value of an ordered sample.",
    "A histogram shows how often values fall into each bin.",
    "Correlation does not imply that one variable causes another.",
    "A confidence interval gives a range of plausible values.",
    "The standard error shrinks as the sample grows larger.",
]


def _scan_like_pdf() -> bytes:
    # Pages 1-6 text; 7-8 empty; 9-12 the same placeholder (what a scan's text layer often holds).
    return text_pdf([*SENTENCES, "", "", *["Scanned image 1"] * 4])


def test_pages_without_readable_text_are_counted_and_shown(fast_collection, ingest_upload, client_for, owner):
    source = ingest_upload(fast_collection, _scan_like_pdf(), "scan.pdf", "fast")

    assert source.status == FileStatus.READY, source.error
    assert (source.empty_pages, source.repeated_pages) == ([7, 8], [9, 10, 11, 12])
    assert source.quality_warning == "6 of 12 pages had no readable text"
    client = client_for(owner)
    file_page = client.get(f"/collections/files/{source.pk}/").content.decode()
    assert 'Ready — <a href="#unreadable">6 of 12 pages had no readable text</a>' in file_page
    assert 'href="#page-7"' in file_page and 'href="#page-12"' in file_page and 'id="page-7"' in file_page
    collection_page = client.get(f"/collections/{fast_collection.pk}/").content.decode()
    assert "1 file needs attention" in collection_page
    assert f'href="/collections/files/{source.pk}/#unreadable"' in collection_page
    api = client.get(f"/api/v1/files/{source.pk}").json()
    assert api["quality_warning"] == "6 of 12 pages had no readable text" and api["empty_pages"] == [7, 8]


def test_a_wholly_readable_file_has_no_warning(fast_collection, ingest_upload, client_for, owner):
    source = ingest_upload(fast_collection, text_pdf(SENTENCES), "clean.pdf", "fast")
    assert source.status == FileStatus.READY and source.quality_warning == ""
    assert "needs attention" not in client_for(owner).get(f"/collections/{fast_collection.pk}/").content.decode()


def _many_files(collection, owner, count: int) -> list[SourceFile]:
    return [
        SourceFile.objects.create(
            collection=collection,
            original_name=f"week-{i:03d}.md" if i % 10 else f"exam-{i:03d}.pdf",
            file=f"collections/{collection.pk}/{i:064d}",
            file_type="pdf" if i % 10 == 0 else "markdown",
            size=1000 + i,
            sha256=f"{i:064d}",
            status=FileStatus.FAILED if i == 7 else FileStatus.READY,
            uploaded_by=owner,
        )
        for i in range(count)
    ]


def test_the_collection_page_pages_filters_and_sorts_hundreds_of_files(collection, owner, client_for):
    _many_files(collection, owner, 120)
    client = client_for(owner)
    first = client.get(f"/collections/{collection.pk}/").content.decode()
    assert first.count("<tr data-file-id=") == 50 and "Page 1 of 3" in first and "120 files." in first
    last = client.get(f"/collections/{collection.pk}/?page=3").content.decode()
    assert last.count("<tr data-file-id=") == 20
    exams = client.get(f"/collections/{collection.pk}/?q=exam&sort=name").content.decode()
    assert exams.count("<tr data-file-id=") == 12 and "12 of 120 files match." in exams
    assert exams.index("exam-000.pdf") < exams.index("exam-110.pdf")
    failed = client.get(f"/collections/{collection.pk}/?status=attention").content.decode()
    assert failed.count("<tr data-file-id=") == 1 and "week-007.md" in failed
    odd = client.get(f"/collections/{collection.pk}/?status=nonsense")
    assert odd.status_code == 200 and "Unknown status" in odd.content.decode(), "a bad filter is explained, not a 500"


def test_the_files_api_filters_sorts_and_pages_on_request(collection, owner, client_for):
    _many_files(collection, owner, 30)
    client = client_for(owner)
    everything = client.get(f"/api/v1/collections/{collection.pk}/files")
    assert len(everything.json()) == 30 and everything["X-Total-Count"] == "30", "no parameters: every file, as before"
    page = client.get(f"/api/v1/collections/{collection.pk}/files?sort=name&limit=5&offset=5")
    assert [f["name"] for f in page.json()] == [
        f"week-{i:03d}.md" for i in (3, 4, 5, 6, 7)
    ]  # after exam-000, -010, -020
    assert page["X-Total-Count"] == "30"
    failed = client.get(f"/api/v1/collections/{collection.pk}/files?status=failed").json()
    assert [f["name"] for f in failed] == ["week-007.md"]
    bad = client.get(f"/api/v1/collections/{collection.pk}/files?sort=biggest")
    assert bad.status_code == 400 and "Unknown order" in bad.json()["detail"]


@pytest.mark.parametrize("who", ["other_teacher", "student"])
def test_outsiders_can_neither_list_files_nor_open_the_settings(request, collection, owner, client_for, who):
    _many_files(collection, owner, 3)
    client = client_for(request.getfixturevalue(who))
    assert client.get(f"/api/v1/collections/{collection.pk}/files?q=week").status_code in (403, 404)
    assert client.get(f"/collections/{collection.pk}/settings/").status_code in (403, 404)
    assert client.post(f"/collections/{collection.pk}/settings/", {"name": "Taken"}).status_code in (403, 404)
    collection.refresh_from_db()
    assert collection.name != "Taken"


def test_settings_have_a_page_of_their_own(collection, owner, co_owner, client_for):
    client = client_for(owner)
    files_page = client.get(f"/collections/{collection.pk}/").content.decode()
    assert "Save settings" not in files_page and f'href="/collections/{collection.pk}/settings/"' in files_page
    settings_page = client.get(f"/collections/{collection.pk}/settings/").content.decode()
    assert "Save settings" in settings_page and "Delete collection" in settings_page
    # A co-owner who loses co-ownership loses the settings page at once.
    collection.co_owners.remove(co_owner)
    assert client_for(co_owner).get(f"/collections/{collection.pk}/settings/").status_code in (403, 404)
