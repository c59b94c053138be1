"""Issue 29 item 6: the ingestion queue is shared fairly between collections. One teacher's big
batch does not hold another teacher's single file until the batch is done, every queued file keeps
what it was queued for whichever job runs it, and a queued file shows its place and an estimate
(docs/ARCHITECTURE.md, collections_app/fair_queue.py)."""

from __future__ import annotations

import pytest
from django.utils import translation

from collections_app import lifecycle
from collections_app.models import Collection, FileStatus, SourceFile
from tests.fixtures_ingest import FAST_EMBEDDER, upload

BATCH = 60


@pytest.fixture
def other_collection(other_teacher, ollama):
    """Another teacher's collection, served by the same workers."""
    return Collection.objects.create(
        name="Other course", language="english", owner=other_teacher, embedding_model=FAST_EMBEDDER
    )


def lesson(n: int) -> bytes:
    return f"# Lesson {n}\n\nRefraction, part {n}.\n".encode()


def test_a_lone_file_is_ready_before_a_sixty_file_batch_queued_first(
    fast_collection, owner, other_teacher, other_collection, client_for, run_worker
):
    teacher = client_for(owner)
    for n in range(BATCH):
        response = upload(teacher, fast_collection, lesson(n), f"l{n}.md")
        assert response.status_code == 201, response.json()
    lone = upload(client_for(other_teacher), other_collection, b"# Alone\n\nAnother teacher's file.\n", "a.md")
    assert lone.status_code == 201, lone.json()
    # Queued last, it is told it comes second: after the batch's first file, not after all sixty.
    assert lone.json()["queue_place"] == 2, lone.json()

    run_worker()  # the real RQ worker over the real Redis queue: one worker, the 61 jobs in FIFO order

    files = list(SourceFile.objects.filter(collection__in=[fast_collection, other_collection]).order_by("started"))
    assert [f.status for f in files] == [FileStatus.READY] * (BATCH + 1)
    assert [f.pk for f in files].index(lone.json()["id"]) == 1
    lone_ready = SourceFile.objects.get(pk=lone.json()["id"]).updated
    batch_ready = sorted(f.updated for f in files if f.collection_id == fast_collection.pk)
    assert lone_ready < batch_ready[1]  # ready before 59 of the 60


def test_a_file_run_by_another_files_job_keeps_its_rechunk_only_wish_and_language(
    fast_collection, owner, other_teacher, other_collection, client_for, ingest_upload, run_worker
):
    source = ingest_upload(fast_collection, b"# Optics\n\nLight bends at a boundary.\n", "optics.md")
    # What the teacher's corrected Markdown says, and the bytes do not: only a re-chunk keeps it.
    SourceFile.objects.filter(pk=source.pk).update(markdown="# Optics\n\nSnell's law, as the teacher wrote it.\n")
    with translation.override("fi"):
        lifecycle.requeue(source, re_extract=False)  # its job is first in the RQ queue...
    upload(client_for(other_teacher), other_collection, lesson(1), "first.md")  # ...but this one is due first

    run_worker()

    source.refresh_from_db()
    other = SourceFile.objects.get(collection=other_collection)
    assert other.started < source.started  # so optics.md was run by first.md's job, not its own
    assert source.status == FileStatus.READY
    assert "Snell's law" in source.markdown  # re-chunked, not extracted afresh
    assert source.progress_detail == "1 kohta valmiina hakuun"  # in the Finnish of who queued it
    assert other.progress_detail == "1 passage ready to search"


def test_a_queued_file_shows_its_place_and_an_estimate_in_the_api_and_the_files_table(
    fast_collection, owner, other_teacher, other_collection, client_for, ingest_upload
):
    ingest_upload(fast_collection, lesson(0), "done.md")  # one file done: something to estimate by
    teacher = client_for(owner)
    for n in range(1, 4):
        assert upload(teacher, fast_collection, lesson(n), f"l{n}.md").status_code == 201
    lone = upload(client_for(other_teacher), other_collection, lesson(9), "lone.md").json()

    listed = {f["name"]: f for f in teacher.get(f"/api/v1/collections/{fast_collection.pk}/files").json()}
    # The never-served collection goes first; then the batch, taking turns with nobody else.
    assert lone["queue_place"] == 1 and lone["waiting"].startswith("Next in the queue.")
    assert [listed[f"l{n}.md"]["queue_place"] for n in range(1, 4)] == [2, 3, 4]
    third = listed["l3.md"]
    assert third["waiting"].startswith("Waiting in the queue: 3 files before this one. It should start")
    assert third["queue_wait_seconds"] is not None
    assert listed["done.md"]["queue_place"] is None and listed["done.md"]["waiting"] == ""
    assert teacher.get(f"/api/v1/files/{third['id']}").json()["queue_place"] == 4

    page = teacher.get(f"/collections/{fast_collection.pk}/").content.decode()
    assert "Waiting in the queue: 3 files before this one." in page
    assert "ingestion has started" not in page
    with translation.override("fi"):
        finnish = teacher.get(f"/collections/{fast_collection.pk}/", HTTP_ACCEPT_LANGUAGE="fi").content.decode()
    assert "Jonossa odottaa: 3 tiedostoa ennen tätä." in finnish


def _file(collection, name: str, size: int, status: str, **fields) -> SourceFile:
    from django.core.files.base import ContentFile

    source = SourceFile(
        collection=collection,
        original_name=name,
        file_type=fields.pop("file_type", "markdown"),
        size=size,
        sha256=name,
        status=status,
        attempt=1,
        **fields,
    )
    source.file.save(name, ContentFile(b"# x"), save=False)
    source.save()
    return source


def _done(source: SourceFile, seconds: float) -> None:
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()
    SourceFile.objects.filter(pk=source.pk).update(started=now - timedelta(seconds=seconds), updated=now)


def test_short_notes_queued_after_a_slow_pdf_are_told_their_own_short_wait(fast_collection, ollama):
    """The estimate adds up each file ahead at the measured rate of its kind: three notes behind
    each other wait seconds, though the PDF done before them took twenty minutes (a mean time per
    file told the last note about half an hour)."""
    from collections_app.fair_queue import waiting_for

    _done(_file(fast_collection, "book.pdf", 2_000_000, FileStatus.READY, file_type="pdf", pdf_mode="vlm"), 1200)
    _done(_file(fast_collection, "done.md", 30_000, FileStatus.READY), 5)
    notes = [_file(fast_collection, f"note{n}.md", 30_000, FileStatus.QUEUED) for n in range(4)]
    waiting = waiting_for(notes)
    assert [waiting[n.pk].place for n in notes] == [1, 2, 3, 4]
    assert waiting[notes[-1].pk].wait.total_seconds() < 60
    assert (
        waiting[notes[-1].pk].sentence
        == "Waiting in the queue: 3 files before this one. It should start within a minute."
    )

    # A PDF read by the vision model ahead of a note: the note waits what the PDF takes at its rate.
    pdf = _file(fast_collection, "slides.pdf", 1_000_000, FileStatus.QUEUED, file_type="pdf", pdf_mode="vlm")
    late = _file(fast_collection, "late.md", 30_000, FileStatus.QUEUED)
    minutes = waiting_for([pdf, late])[late.pk].wait.total_seconds() / 60
    assert 9 <= minutes <= 12  # about half the book's 20 minutes, plus the four notes' seconds
