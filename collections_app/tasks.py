"""Background tasks of collections (django-tasks on the RQ backend, queue "ingest"). The rooms that
queue them (collections_app/lifecycle.py, liveness.py) import this module; it imports only the
worker's side (collections_app/ingesting.py) and the test questions, never them."""

from __future__ import annotations

from django_tasks import task

from collections_app.checks import run_when_indexed
from collections_app.ingesting import run_ingest


@task(queue_name="ingest")
def ingest_file(file_id: int, attempt: int, re_extract: bool = True, language: str = "") -> str:
    """Ingest the queued file due next in the fair order (`collections_app.fair_queue`), not
    necessarily this one: each job stands for one queued attempt, so the jobs cover every queued file.
    The file taken brings its own re-extract wish and teacher's language (stored when it was queued);
    `re_extract` and `language` here are that of `file_id`, kept for jobs queued before."""
    return run_ingest(file_id, attempt, re_extract=re_extract, language=language, fair=True).status


@task(queue_name="ingest")
def run_pending_checks(collection_id: int) -> str:
    """Run a collection's test questions left pending by a re-index, once nothing is ingested."""
    run = run_when_indexed(collection_id)
    return f"{run.passed}/{run.total}" if run else "nothing to run"
