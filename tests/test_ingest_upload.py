"""Uploading files: who may, what is refused (with a sentence the teacher can act on), duplicates."""

from __future__ import annotations

import os

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from collections_app.models import FileStatus, SourceFile
from tests.fixtures_ingest import blank_pdf, chunk_keys, indexed, text_pdf, upload

NOTES = b"# Kinematics\n\nVelocity is the rate of change of position.\n"


@pytest.mark.parametrize(
    ("who", "status"),
    [
        ("owner", 201),
        ("co_owner", 201),
        ("admin_user", 201),
        ("other_teacher", 404),
        ("enrolled_student", 403),
        (None, 401),
    ],
)
def test_who_may_upload(who, status, request, fast_collection, client_for):
    user = request.getfixturevalue(who) if who else None
    response = upload(client_for(user), fast_collection, NOTES, "kinematics.md")
    assert response.status_code == status, response.json()
    assert "detail" in response.json() or status == 201
    assert SourceFile.objects.count() == (1 if status == 201 else 0)


@pytest.mark.parametrize(
    ("who", "status"),
    [("owner", 200), ("co_owner", 200), ("other_teacher", 404), ("enrolled_student", 403), (None, 401)],
)
def test_who_may_list_and_read_files(who, status, request, fast_collection, client_for, ingest_upload):
    source = ingest_upload(fast_collection, NOTES, "kinematics.md")
    client = client_for(request.getfixturevalue(who) if who else None)
    listing = client.get(f"/api/v1/collections/{fast_collection.pk}/files")
    detail = client.get(f"/api/v1/files/{source.pk}")
    chunks = client.get(f"/api/v1/files/{source.pk}/chunks")
    page = client.get(f"/collections/files/{source.pk}/")
    assert listing.status_code == detail.status_code == chunks.status_code == status
    if status == 200:
        [row] = listing.json()
        assert row["status"] == "ready" and row["progress"] == 100 and row["chunk_count"] == 1
        assert chunks.json()[0]["heading_path"] == "Kinematics"
        assert page.status_code == 200 and "Velocity is the rate of change" in page.content.decode()
    else:
        assert page.status_code in (302, 403, 404)


@pytest.mark.parametrize(
    ("who", "status"),
    [("owner", 204), ("co_owner", 204), ("other_teacher", 404), ("enrolled_student", 403), (None, 401)],
)
def test_who_may_delete_a_file(who, status, request, fast_collection, client_for, ingest_upload):
    source = ingest_upload(fast_collection, NOTES, "kinematics.md")
    client = client_for(request.getfixturevalue(who) if who else None)
    assert client.delete(f"/api/v1/files/{source.pk}").status_code == status
    still_there = SourceFile.objects.filter(pk=source.pk).exists()
    assert still_there == (status != 204)
    assert bool(indexed(fast_collection, "velocity")) == still_there
    assert os.path.exists(source.file.path) == still_there


def refused(response, status: int, *words: str) -> str:
    assert response.status_code == status, response.content
    detail = response.json()["detail"]
    for word in words:
        assert word in detail
    return detail


def encrypted_pdf() -> bytes:
    doc = pymupdf.open(stream=text_pdf(["Secret exam answers."]), filetype="pdf")
    return doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner", user_pw="student")


# Named by their file (`ids`): a made PDF's bytes differ from process to process (its random /ID),
# and xdist's workers must collect the same tests.
BAD_UPLOADS = [
    (b"", "empty.txt", 400, ["empty"]),
    (b"   \n\t\n", "blank.md", 400, ["empty"]),
    ("Just UTF-16 without a mark".encode("utf-16-le"), "fine.txt", 201, []),
    (bytes(range(256)) * 40, "data.txt", 415, ["binary data"]),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "photo.txt", 400, ["cannot be read as a picture", "PNG"]),
    (b"PK\x03\x04" + b"\x00" * 100, "essay.txt", 400, ["Office document", "cannot be read"]),
    (b"GIF89a" + b"\x00" * 100, "diagram.png", 415, ["GIF image", "Save it as"]),
    (b"Just text, honestly.", "slides.pdf", 415, ["not one"]),
    ("Caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"), "menu.txt", 415, ["UTF-8"]),
    (b"%PDF-1.4\n" + b"\x00\x01garbage" * 200, "broken.pdf", 400, ["damaged"]),
    (encrypted_pdf(), "locked.pdf", 400, ["password-protected"]),
    (blank_pdf(2500), "phonebook.pdf", 413, ["2,500 pages", "limit is 2,000", "Split"]),
]


@pytest.mark.parametrize(("content", "name", "status", "words"), BAD_UPLOADS, ids=[case[1] for case in BAD_UPLOADS])
def test_bad_uploads_are_refused_with_a_reason(content, name, status, words, fast_collection, client_for, owner):
    response = upload(client_for(owner), fast_collection, content, name)
    if status == 201:  # the control case: the check is about content, not suspicion of everything
        assert response.status_code == 201
        return
    refused(response, status, *words)
    assert SourceFile.objects.count() == 0


def test_files_over_the_size_limit_are_refused(fast_collection, client_for, owner, settings):
    settings.UPLOAD_MAX_BYTES = 1000
    refused(upload(client_for(owner), fast_collection, b"x" * 1001, "big.txt"), 413, "limit is 1,000 bytes")


def test_the_same_file_twice_is_reported_not_indexed_twice(fast_collection, client_for, owner, ingest_upload):
    first = ingest_upload(fast_collection, NOTES, "kinematics.md")
    detail = refused(upload(client_for(owner), fast_collection, NOTES, "copy-of-kinematics.md"), 409, "already")
    assert "kinematics.md" in detail
    assert SourceFile.objects.count() == 1
    assert len(chunk_keys(fast_collection)) == first.chunk_count


def test_page_uploads_several_files_and_reports_each_refusal(fast_collection, client_for, owner, run_worker):
    files = [
        SimpleUploadedFile("a.md", b"# A\n\nAlpha particles are helium nuclei."),
        SimpleUploadedFile("b.txt", b"Beta decay emits electrons."),
        SimpleUploadedFile("c.txt", b""),
    ]
    response = client_for(owner).post(
        f"/collections/{fast_collection.pk}/upload/", {"file": files, "pdf_mode": "fast"}, follow=True
    )
    page = response.content.decode()
    assert "“c.txt” is empty" in page
    run_worker()
    assert set(SourceFile.objects.values_list("original_name", "status")) == {
        ("a.md", FileStatus.READY),
        ("b.txt", FileStatus.READY),
    }
    assert "a.md" in client_for(owner).get(f"/collections/{fast_collection.pk}/").content.decode()


def test_upload_returns_the_queued_file_for_the_page_to_show(fast_collection, client_for, owner):
    response = upload(client_for(owner), fast_collection, text_pdf(["Ohm's law."]), "ohm.pdf", "fast")
    body = response.json()
    assert response.status_code == 201
    assert body["status"] == "queued" and body["file_type"] == "pdf" and body["pdf_mode"] == "fast"
    assert body["url"] == f"/collections/files/{body['id']}/"


@pytest.mark.parametrize(
    ("language", "ready", "refused"),
    [
        ("fi", "1 kohta valmiina hakuun", "Tiedostossa ”otsikot.md” on otsikoita mutta ei tekstiä niiden alla."),
        ("sv", "1 avsnitt klart att söka i", "”otsikot.md” har rubriker men ingen text under dem."),
        ("en", "1 passage ready to search", "“otsikot.md” has headings but no text under them."),
    ],
)
def test_the_worker_writes_a_files_state_in_the_uploading_teachers_language(
    language, ready, refused, fast_collection, owner, run_worker
):
    """The worker has no request: the teacher's language travels with the job."""
    teacher = Client(HTTP_ACCEPT_LANGUAGE=language)
    teacher.force_login(owner)
    good = upload(teacher, fast_collection, NOTES, "kinematics.md").json()["id"]
    bad = upload(teacher, fast_collection, b"# Otsikko\n\n## Toinen\n", "otsikot.md").json()["id"]
    run_worker()
    assert SourceFile.objects.get(pk=good).progress_detail == ready
    failed = SourceFile.objects.get(pk=bad)
    assert failed.status == FileStatus.FAILED and failed.error.startswith(refused)
