"""Cancel, retry, re-ingest, delete, reindex and the embedding cache: the index always matches the files."""

from __future__ import annotations

import io
import logging
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils import timezone

from collections_app import files, lifecycle
from collections_app.models import Collection, FileStatus, SourceFile
from kernel.redis_client import get_redis
from rag.index import CollectionIndex
from rag.ingest import pipeline, steps
from rag.ingest.job import Outcome
from tests.fixtures_ingest import FAST_EMBEDDER, PDFS, chunk_keys, indexed, scanned, text_pdf, upload

INLG = PDFS / "inlg-W17-3505.pdf"
NOTES = "# Optics\n\n" + "".join(f"Lens number {i} focuses light onto the retina in its own way. " for i in range(40))


def api_calls(ollama, path: str) -> int:
    return sum(1 for p, _ in ollama.requests if p == path)


@pytest.mark.django_db(transaction=True)
def test_cancelling_a_running_file_stops_it_leaves_no_chunks_and_retry_finishes_it(
    fast_collection, client_for, owner, run_worker, ollama, pdf_vlm, settings
):
    settings.INGEST_VLM_CONCURRENCY = 1
    vlm = pdf_vlm(INLG, delay=0.3)
    state: dict = {}

    def cancel_during_page_two(body):
        reply = vlm(body)
        if len(vlm.calls) == 2:  # the teacher presses Cancel while page 2 is being read
            state["cancel"] = client_for(owner).post(f"/api/v1/files/{state['id']}/cancel")
        return reply

    ollama.responder = cancel_during_page_two
    state["id"] = upload(client_for(owner), fast_collection, INLG.read_bytes(), "paper.pdf", "vlm").json()["id"]
    run_worker()

    source = SourceFile.objects.get(pk=state["id"])
    assert state["cancel"].status_code == 200
    assert source.status == FileStatus.CANCELLED
    assert len(vlm.calls) <= 5, "the worker stops reading pages soon after the cancel (10 pages in all)"
    assert chunk_keys(fast_collection) == [] and source.chunk_count == 0

    vlm.delay = 0
    ollama.responder = vlm
    retried = client_for(owner).post(f"/api/v1/files/{source.pk}/retry")
    assert retried.status_code == 200 and retried.json()["status"] == "queued"
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.pages == 10
    assert len(chunk_keys(fast_collection)) == source.chunk_count > 0


def test_failed_file_says_why_and_can_be_retried(fast_collection, ingest_upload, client_for, owner, ollama, run_worker):
    ollama.fail_embed = True
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    assert source.status == FileStatus.FAILED
    assert "model server failed" in source.error and "Retry" in source.error
    assert api_calls(ollama, "/api/embed") == django_settings.INGEST_STEP_RETRIES + 1
    client = client_for(owner)
    assert client.post(f"/api/v1/files/{source.pk}/cancel").status_code == 409

    ollama.fail_embed = False
    assert client.post(f"/api/v1/files/{source.pk}/retry").status_code == 200
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY and source.error == ""
    assert indexed(fast_collection, "retina")
    assert client.post(f"/api/v1/files/{source.pk}/retry").status_code == 409  # ready files need no retry


def test_failed_reingest_keeps_the_previous_chunks_whole_and_a_new_one_replaces_them(
    fast_collection, ingest_upload, ollama, run_worker, settings
):
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    before = sorted(c.text for c in files.file_chunks(source))
    assert len(before) > 2

    settings.INGEST_CHUNK_SIZE = 400  # new chunks: their embeddings are not cached
    ollama.fail_embed = True
    files.requeue(source)
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.FAILED
    assert sorted(c.text for c in files.file_chunks(source)) == before, "the old version stays, whole"

    ollama.fail_embed = False
    files.requeue(source)
    run_worker()
    source.refresh_from_db()
    after = [c.text for c in files.file_chunks(source)]
    assert source.status == FileStatus.READY and len(after) == source.chunk_count > len(before)
    assert not set(after) & set(before), "no chunk of the old version is left"
    assert all(len(text) <= 400 for text in after)


def test_a_worker_that_died_leaves_a_file_that_can_be_retried(fast_collection, ingest_upload, client_for, owner):
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    long_ago = timezone.now() - timedelta(seconds=django_settings.INGEST_STALE_SECONDS + 5)
    SourceFile.objects.filter(pk=source.pk).update(status=FileStatus.PROCESSING, updated=long_ago)
    assert client_for(owner).post(f"/api/v1/files/{source.pk}/retry").status_code == 200
    SourceFile.objects.filter(pk=source.pk).update(status=FileStatus.PROCESSING, updated=timezone.now())
    assert client_for(owner).post(f"/api/v1/files/{source.pk}/retry").status_code == 409


def test_unchanged_file_is_neither_read_nor_embedded_twice(fast_collection, ingest_upload, ollama, owner, pdf_vlm):
    ollama.responder = pdf_vlm(INLG)
    first = ingest_upload(fast_collection, INLG.read_bytes(), "paper.pdf", "vlm")
    chats, embeds = api_calls(ollama, "/api/chat"), api_calls(ollama, "/api/embed")
    next_year = Collection.objects.create(name="Next year", owner=owner, embedding_model=FAST_EMBEDDER)
    second = ingest_upload(next_year, INLG.read_bytes(), "paper-again.pdf", "vlm")
    assert second.status == FileStatus.READY and second.chunk_count == first.chunk_count
    assert api_calls(ollama, "/api/chat") == chats, "the extracted Markdown of identical bytes is reused"
    assert api_calls(ollama, "/api/embed") == embeds, "every embedding comes from the cache"
    assert second.progress_detail.endswith("ready to search"), "plain words, no internals"
    assert second.markdown == first.markdown


def test_a_model_pulled_again_under_the_same_name_is_not_served_from_the_cache(
    fast_collection, ingest_upload, ollama, monkeypatch
):
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    key = chunk_keys(fast_collection)[0]
    before, embeds = get_redis().hget(key, "embedding"), api_calls(ollama, "/api/embed")
    call_command("reindex", collection=[fast_collection.pk], stdout=io.StringIO())
    assert api_calls(ollama, "/api/embed") == embeds, "same model, same text: from the cache"

    ollama.pull("snowflake-arctic-embed2")  # the administrator updates the model
    from rag.providers import registry

    monkeypatch.setattr(registry, "_embedders", {})  # as in a worker's next job: a fresh process
    call_command("reindex", collection=[fast_collection.pk], stdout=io.StringIO())
    source.refresh_from_db()
    assert source.status == FileStatus.READY
    assert api_calls(ollama, "/api/embed") > embeds, "the new weights embed every passage again"
    assert get_redis().hget(key, "embedding") != before


def test_deleting_a_collection_removes_its_index_and_stored_files(
    fast_collection, ingest_upload, client_for, owner, co_owner
):
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    other = Collection.objects.create(name="Kept", owner=owner, embedding_model=FAST_EMBEDDER)
    kept = ingest_upload(other, b"Prisms split white light.", "prisms.txt")
    stored = Path(source.file.path)
    assert stored.exists()
    assert client_for(co_owner).delete(f"/api/v1/collections/{fast_collection.pk}").status_code == 204
    assert not stored.exists() and not stored.parent.exists()
    assert chunk_keys(fast_collection) == []
    assert not CollectionIndex(fast_collection.pk, "english", 1).exists()
    assert indexed(other, "prisms") and os.path.exists(kept.file.path)


def test_deleting_a_collection_from_its_page_does_the_same(fast_collection, ingest_upload, client_for, owner):
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    response = client_for(owner).post(f"/collections/{fast_collection.pk}/delete/")
    assert response.status_code == 302
    assert not os.path.exists(source.file.path) and chunk_keys(fast_collection) == []


def test_reindex_after_changing_the_embedding_model_rebuilds_from_stored_files(
    fast_collection, ingest_upload, ollama, pdf_vlm
):
    ollama.responder = pdf_vlm(INLG)
    paper = ingest_upload(fast_collection, INLG.read_bytes(), "paper.pdf", "vlm")
    notes = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    chats = api_calls(ollama, "/api/chat")

    ollama.models.append("nomic-embed-text:latest")
    ollama.embed_dims = 32
    fast_collection.embedding_model = "ollama:nomic-embed-text"
    fast_collection.save()
    call_command("reindex", collection=[fast_collection.pk], stdout=io.StringIO())

    for source in (paper, notes):
        source.refresh_from_db()
        assert source.status == FileStatus.READY
    assert api_calls(ollama, "/api/chat") == chats, "re-indexing re-chunks the stored text, no new VLM reading"
    keys = chunk_keys(fast_collection)
    assert len(keys) == paper.chunk_count + notes.chunk_count
    assert {len(get_redis().hget(k, "embedding")) for k in keys} == {32 * 4}
    assert indexed(fast_collection, "retina")


def test_reindex_rebuilds_an_index_that_redis_lost(fast_collection, ingest_upload):
    source = ingest_upload(
        fast_collection, text_pdf(["Snell's law relates angles of refraction."]), "snell.pdf", "fast"
    )
    assert indexed(fast_collection, "refraction")
    get_redis().flushdb()
    assert not CollectionIndex(fast_collection.pk, "english", 1).exists()
    call_command("reindex", stdout=io.StringIO())
    source.refresh_from_db()
    assert source.status == FileStatus.READY
    assert [h["page_start"] for h in indexed(fast_collection, "refraction")] == [1]


def test_workers_creating_a_collections_index_at_once_all_succeed(fast_collection):
    """Several workers ingesting the first files of a new collection race to create its index."""
    from concurrent.futures import ThreadPoolExecutor

    def ensure(collection_id: int) -> None:
        CollectionIndex(collection_id, "english", 4).ensure()

    with ThreadPoolExecutor(max_workers=8) as pool:
        for collection_id in range(9000, 9010):
            list(pool.map(ensure, [collection_id] * 8))  # raises if any FT.CREATE lost the race badly
    assert CollectionIndex(9005, "english", 4).exists()


def test_changing_the_embedding_model_through_the_api_reindexes_the_files(
    fast_collection, ingest_upload, client_for, co_owner, ollama, run_worker
):
    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    ollama.models.append("nomic-embed-text:latest")
    ollama.embed_dims = 48
    response = client_for(co_owner).patch(
        f"/api/v1/collections/{fast_collection.pk}",
        {"embedding_model": "ollama:nomic-embed-text"},
        content_type="application/json",
    )
    assert response.status_code == 200
    source.refresh_from_db()
    assert source.status == FileStatus.QUEUED
    # Until the worker has re-read the file, its passages are found by their words; the old
    # model's vectors are gone, so no search compares them with the new model's.
    scanned(fast_collection)
    assert len(indexed(fast_collection, "retina")) == source.chunk_count > 0
    assert {get_redis().hget(k, "embedding") for k in chunk_keys(fast_collection)} == {None}
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.READY
    assert {len(get_redis().hget(k, "embedding")) for k in chunk_keys(fast_collection)} == {48 * 4}
    assert indexed(fast_collection, "retina")


def test_a_file_that_fails_to_reindex_keeps_its_passages_searchable(
    fast_collection, ingest_upload, client_for, owner, ollama, run_worker
):
    from rag.search import search_collections

    source = ingest_upload(fast_collection, NOTES.encode(), "optics.md")
    ollama.models.append("nomic-embed-text:latest")
    response = client_for(owner).patch(
        f"/api/v1/collections/{fast_collection.pk}",
        {"embedding_model": "ollama:nomic-embed-text"},
        content_type="application/json",
    )
    assert response.status_code == 200
    ollama.fail_embed = True  # the model server breaks before the worker gets to the file
    run_worker()
    source.refresh_from_db()
    assert source.status == FileStatus.FAILED and source.error
    fast_collection.refresh_from_db()
    outcome = search_collections([fast_collection], "retina lens", curate=False)
    assert outcome.status == "ok" and outcome.results
    assert {p.file_id for p in outcome.results} == {source.pk}
    assert all("retina" in p.text for p in outcome.results)


def test_changing_the_language_on_the_page_reindexes_with_the_new_stemming(
    fast_collection, ingest_upload, client_for, owner, run_worker
):
    def stemmed_hits(word: str) -> int:  # unquoted: the index's stemmer applies
        return get_redis().ft(CollectionIndex.index_name(fast_collection.pk)).search(word).total

    ingest_upload(fast_collection, "Taloissa asuu ihmisiä.".encode(), "talot.txt")
    assert stemmed_hits("talo") == 0  # English stemming does not know Finnish inflection
    form = {"name": fast_collection.name, "description": "", "language": "finnish"}
    form["embedding_model"] = fast_collection.embedding_model
    response = client_for(owner).post(f"/collections/{fast_collection.pk}/", form, follow=True)
    assert "Re-indexing 1 file" in response.content.decode()
    # Before any worker runs, the index already stems the stored passage the Finnish way.
    scanned(fast_collection)
    assert stemmed_hits("talo") == 1
    run_worker()
    assert stemmed_hits("talo") == 1, "Finnish stemming finds the inflected word"


@pytest.mark.django_db(transaction=True)
def test_deleting_a_collection_while_its_file_is_read_stops_the_worker_quietly(
    fast_collection, client_for, owner, run_worker, ollama, pdf_vlm, settings, caplog
):
    import django_rq

    settings.INGEST_VLM_CONCURRENCY = 1
    vlm = pdf_vlm(INLG, delay=0.3)
    state: dict = {}

    def delete_during_page_two(body):
        reply = vlm(body)
        if len(vlm.calls) == 2:  # the teacher deletes the whole collection while page 2 is being read
            state["delete"] = client_for(owner).delete(f"/api/v1/collections/{fast_collection.pk}")
        return reply

    ollama.responder = delete_during_page_two
    file_id = upload(client_for(owner), fast_collection, INLG.read_bytes(), "paper.pdf", "vlm").json()["id"]
    stored = Path(SourceFile.objects.get(pk=file_id).file.path)
    run_worker()

    assert state["delete"].status_code == 204
    assert len(vlm.calls) <= 5, "the worker stops reading pages soon after the delete (10 pages in all)"
    assert not SourceFile.objects.filter(pk=file_id).exists() and not stored.parent.exists()
    assert chunk_keys(fast_collection) == []
    assert not CollectionIndex(fast_collection.pk, "english", 1).exists()
    assert django_rq.get_queue("ingest").failed_job_registry.count == 0, "the job ends as cancelled, not failed"
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_collection_deleted_while_its_chunks_are_written_leaves_no_index_behind(fast_collection, owner, caplog):
    """The worker has not noticed the delete yet and writes the file's chunks (recreating the
    index the delete dropped); when it then finds its file gone, it removes both."""
    source = files.add_file(fast_collection, SimpleUploadedFile("optics.md", NOTES.encode()), owner)

    class IndexAfterTheDelete(steps.Index):
        def run(self, job, ctx):
            files.delete_collection(Collection.objects.get(pk=job.collection_id))
            super().run(job, ctx)

    claimed = lifecycle.claim(source.pk, source.attempt)
    job = lifecycle.build_job(claimed, re_extract=True)
    report = pipeline.run(job, lifecycle.FileTracker(claimed), [*steps.STEPS[:-1], IndexAfterTheDelete()])

    assert report.status == Outcome.CANCELLED and report.chunks > 0, "the chunks were written, then taken out"
    assert chunk_keys(fast_collection) == []
    assert not CollectionIndex(fast_collection.pk, "english", 1).exists()
    assert not SourceFile.objects.filter(pk=source.pk).exists()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_error_in_a_file_cancelled_meanwhile_ends_it_as_cancelled_not_failed(fast_collection, owner, caplog):
    """A cancel or delete can pull things from under a running step (the delete removes the stored
    file): what fails afterwards is not the teacher's problem, and no retry is asked for."""
    source = files.add_file(fast_collection, SimpleUploadedFile("optics.md", NOTES.encode()), owner)

    class CancelledThenBroken:
        name, share = "extract", (0, 60)

        def run(self, job, ctx):
            files.cancel_file(SourceFile.objects.get(pk=job.file_id))
            raise FileNotFoundError(job.path)

    claimed = lifecycle.claim(source.pk, source.attempt)
    job = lifecycle.build_job(claimed, re_extract=True)
    report = pipeline.run(job, lifecycle.FileTracker(claimed), [CancelledThenBroken(), *steps.STEPS[1:]])

    source.refresh_from_db()
    assert report.status == Outcome.CANCELLED
    assert source.status == FileStatus.CANCELLED and source.error == ""
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
