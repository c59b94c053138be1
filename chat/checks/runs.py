"""Runs of a prompt's answer checks, started on demand, for a draft, or by themselves
(chat/checks/auto.py), and queued for the worker (chat/checks/tasks.py); the worker plays them
question by question, paying for each (chat/checks/worker.py). A draft that did well is applied
through the prompt's one writer.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from chat.checks.play import DRAFT_KEYS
from chat.checks.tasks import enqueue
from chat.course import writes
from chat.models import AnswerCheckRun, Prompt, RunStatus, RunTrigger
from kernel.errors import Conflict, InvalidInput

log = logging.getLogger(__name__)

# A run still queued or running after this long lost its worker: it no longer holds back a new one.
STALE_SECONDS = 1800
# The draft's keys as the prompt's writer names the settings.
_SETTING = {"model": "chat_model", "system_prompt": "system_prompt", "curation": "curation_enabled",
            "collection_ids": "collections"}  # fmt: skip


def clean_draft(actor, prompt: Prompt, draft: dict[str, Any]) -> dict[str, Any]:
    """The draft's changes, checked by the prompt's writer exactly as applying them would be."""
    unknown = sorted(set(draft) - set(DRAFT_KEYS))
    if unknown:
        raise InvalidInput(_("A draft changes model, system_prompt, curation or collection_ids."), field="draft")
    given = {k: v for k, v in draft.items() if v is not None}
    writes.check_prompt(actor, prompt, {_SETTING[k]: v for k, v in given.items()})
    if "collection_ids" in given:
        given["collection_ids"] = sorted({int(i) for i in given["collection_ids"]})
    return given


def under_way(prompt: Prompt):
    recent = timezone.now() - timedelta(seconds=STALE_SECONDS)
    return prompt.answer_check_runs.filter(status__in=[RunStatus.QUEUED, RunStatus.RUNNING], created__gte=recent)


def start_run(actor, prompt: Prompt, *, draft: dict[str, Any] | None = None) -> AnswerCheckRun:
    """A teacher's run (of the live prompt, or of `draft` over it), queued for the worker. Refused
    while one of theirs is under way, and when the prompt has no checks."""
    if not prompt.answer_checks.exists():
        raise InvalidInput(_("Add an answer check first."))
    cleaned = clean_draft(actor, prompt, draft) if draft is not None else None
    if under_way(prompt).filter(trigger__in=[RunTrigger.MANUAL, RunTrigger.DRAFT]).exists():
        raise Conflict(_("A run of these answer checks is under way; wait for it to finish."))
    trigger = RunTrigger.DRAFT if cleaned is not None else RunTrigger.MANUAL
    run = AnswerCheckRun.objects.create(
        prompt=prompt, draft=cleaned, trigger=trigger, started_by=actor, total=prompt.answer_checks.count()
    )
    enqueue(run)
    return run


def apply_draft(actor, run: AnswerCheckRun) -> AnswerCheckRun | None:
    """Make the draft the live prompt through the prompt's one writer; the run of the live prompt
    that the change starts (None when the draft changed nothing)."""
    if run.draft is None:
        raise InvalidInput(_("This run tried the live prompt; there is no draft to apply."))
    newest = run.prompt.answer_check_runs.order_by("-id").values_list("id", flat=True).first()
    writes.update_prompt(actor, run.prompt, {_SETTING[k]: v for k, v in run.draft.items()})
    later = run.prompt.answer_check_runs.filter(pk__gt=newest or 0, trigger=RunTrigger.SETTINGS)
    return later.order_by("-id").first() or under_way(run.prompt).filter(trigger=RunTrigger.SETTINGS).first()
