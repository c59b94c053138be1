"""Runs that start by themselves: after a change of a prompt's instructions, model, collections,
curation or source policy (`on_answers_changed`: chat/course/answer_changes.py, told by the prompt's
one writer, chat/course/writes.update_prompt; connected in ChatConfig.ready), and
after a re-index of one of its collections (`collections_app.signals`, connected in ChatConfig.ready:
the collections app sits below chat and cannot call it).

A re-index leaves a run waiting for the collection (`waiting_for`); the worker that ingests the
collection's last file lets it go. One automatic run waits at a time per prompt and reason: a second
change before it started changes nothing, as the run plays the prompt as it is when it starts.
"""

from __future__ import annotations

import logging

from chat.checks.tasks import enqueue
from chat.models import AnswerCheckRun, Prompt, RunStatus, RunTrigger
from collections_app.checks import still_indexing
from collections_app.models import FileStatus

log = logging.getLogger(__name__)


def on_answers_changed(sender, prompt: Prompt, actor, **kwargs) -> None:
    """A run of the live prompt: what its answers depend on changed (chat/course/answer_changes.py)."""
    _schedule(prompt, RunTrigger.SETTINGS, actor=actor)


def _schedule(prompt: Prompt, trigger: str, *, actor=None, collection=None) -> AnswerCheckRun | None:
    if not prompt.answer_checks.exists():
        return None
    waiting = prompt.answer_check_runs.filter(
        status=RunStatus.QUEUED, trigger=trigger, draft__isnull=True, started_at__isnull=True, waiting_for=collection
    ).first()
    if waiting is not None:
        return waiting
    run = AnswerCheckRun.objects.create(
        prompt=prompt, trigger=trigger, started_by=actor, waiting_for=collection, total=prompt.answer_checks.count()
    )
    if collection is None:
        enqueue(run)
    return run


def on_reindex_started(sender, collection, **kwargs) -> None:
    """Each prompt with the collection gets a run that waits for the re-index to finish."""
    for prompt in Prompt.objects.filter(collections=collection).distinct():
        _schedule(prompt, RunTrigger.REINDEX, actor=None, collection=collection)
    if not collection.files.exclude(status=FileStatus.CANCELLED).exists():
        release(collection.pk)  # nothing to index: nothing to wait for


def on_ingestion_ended(sender, collection_id: int, **kwargs) -> None:
    """After a file of the collection was ingested: once none is queued or being ingested, the
    waiting runs go to the worker."""
    if not still_indexing(collection_id):
        release(collection_id)


def release(collection_id: int) -> list[AnswerCheckRun]:
    """Let the runs waiting for the collection go; each is let go by exactly one caller."""
    released = []
    for run in AnswerCheckRun.objects.filter(waiting_for_id=collection_id, status=RunStatus.QUEUED):
        if AnswerCheckRun.objects.filter(pk=run.pk, waiting_for_id=collection_id).update(waiting_for=None):
            run.waiting_for = None
            enqueue(run)
            released.append(run)
    return released
