"""The task that plays a queued run of answer checks, and its enqueue half beside it, so that the
rooms that queue runs (chat/checks/runs.py, auto.py) import the task and the task only the worker's
half (chat/checks/worker.py)."""

from __future__ import annotations

from django.db import transaction
from django_tasks import task

from chat.checks.worker import execute
from chat.models import AnswerCheckRun


@task(queue_name="default")
def run_answer_checks(run_id: int) -> str:
    """Play a queued run of a prompt's answer checks (chat/checks/worker.py)."""
    run = execute(run_id)
    return f"{run.passed}/{run.total} ({run.status})" if run else "nothing to run"


def enqueue(run: AnswerCheckRun) -> None:
    """Hand the run to a worker once the transaction that made it is committed."""
    transaction.on_commit(lambda: run_answer_checks.enqueue(run.pk))
