"""`manage.py seed_demo` gives a fresh instance a demo collection with real, searchable material."""

from __future__ import annotations

import io

from django.core.management import call_command

from collections_app.models import Collection, FileStatus, SourceFile
from tests.fixtures_ingest import FAST_EMBEDDER, indexed


def seed(capture) -> str:
    out = io.StringIO()
    with capture(execute=True):
        call_command("seed_demo", stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_demo_collection_gets_its_course_file_ingested_once(
    db, settings, ollama, run_worker, django_capture_on_commit_callbacks, tmp_path
):
    settings.EMBEDDING_MODEL = FAST_EMBEDDER
    settings.VAR_DIR = tmp_path
    assert "queued for ingestion" in seed(django_capture_on_commit_callbacks)
    run_worker()
    collection = Collection.objects.get(name="Demo course material")
    [demo] = collection.files.all()
    assert demo.status == FileStatus.READY, demo.error
    hits = indexed(collection, "loop expression")
    assert hits and any(h["heading_path"].startswith("Chapter 5: Loops > While loop") for h in hits)
    assert "CC BY 4.0" in demo.markdown  # the licence's attribution travels with the text

    seed(django_capture_on_commit_callbacks)  # a second run changes nothing
    run_worker()
    assert SourceFile.objects.count() == 1
    demo.refresh_from_db()
    assert demo.attempt == 1 and demo.status == FileStatus.READY
