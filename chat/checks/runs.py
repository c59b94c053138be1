"""Runs of a prompt's answer checks: started (on demand, for a draft, or by themselves), played in
the worker question by question, each result stored as it comes with what changed since the last
live run.

Cost: a run whose questions call a model (the chat model, or curation in extractive mode) sets an
estimate aside from the paying teacher's weekly budget in the prompt before each question
(chat/course/usage.reserve, as a chat turn does) and counts every call. It stops, keeping what ran,
at the first question the budget refuses (`stopped`, reason `budget`) or after
ANSWER_CHECKS_MAX_PER_RUN questions (reason `limit`). The payer is the teacher who started it, or
whose change started it; for a run after a re-index, the prompt's owner.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.checks.play import DRAFT_KEYS, Config, Played, play
from chat.checks.verdicts import judge
from chat.course import writes
from chat.course.usage import BudgetExhausted, UsageMeter, reserve
from chat.insight.stats import prompt_language
from chat.models import AnswerCheckResult, AnswerCheckRun, Prompt, RunStatus, RunStop, RunTrigger
from collections_app.models import SourceFile
from kernel.errors import Conflict, InvalidInput
from rag.providers import is_available, is_available_on_second_look

log = logging.getLogger(__name__)

NEWLY_FAILING, NEWLY_PASSING = "newly_failing", "newly_passing"
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


def enqueue(run: AnswerCheckRun) -> None:
    """Hand the run to a worker once the transaction that made it is committed."""
    from chat.tasks import run_answer_checks

    transaction.on_commit(lambda: run_answer_checks.enqueue(run.pk))


def apply_draft(actor, run: AnswerCheckRun) -> AnswerCheckRun | None:
    """Make the draft the live prompt through the prompt's one writer; the run of the live prompt
    that the change starts (None when the draft changed nothing)."""
    if run.draft is None:
        raise InvalidInput(_("This run tried the live prompt; there is no draft to apply."))
    newest = run.prompt.answer_check_runs.order_by("-id").values_list("id", flat=True).first()
    writes.update_prompt(actor, run.prompt, {_SETTING[k]: v for k, v in run.draft.items()})
    later = run.prompt.answer_check_runs.filter(pk__gt=newest or 0, trigger=RunTrigger.SETTINGS)
    return later.order_by("-id").first() or under_way(run.prompt).filter(trigger=RunTrigger.SETTINGS).first()


# The worker -------------------------------------------------------------------------------------


def execute(run_id: int) -> AnswerCheckRun | None:
    """Play the queued run (claimed by one worker); None when it was not there to claim."""
    claimed = AnswerCheckRun.objects.filter(pk=run_id, status=RunStatus.QUEUED, waiting_for__isnull=True)
    if not claimed.update(status=RunStatus.RUNNING, started_at=timezone.now()):
        return None
    run = AnswerCheckRun.objects.select_related("prompt", "started_by").get(pk=run_id)
    try:
        _play_all(run)
    except Exception:  # noqa: BLE001 — the run's boundary: kept as far as it got, marked failed
        log.exception("Answer check run %s failed", run.pk)
        run.status, run.stopped_reason, run.ran_at = RunStatus.STOPPED, RunStop.FAILED, timezone.now()
        run.save(update_fields=["status", "stopped_reason", "ran_at"])
    return run


def _payer(run: AnswerCheckRun):
    who = run.started_by
    return who if who is not None and run.prompt.is_taught_by(who) else run.prompt.owner


def _play_all(run: AnswerCheckRun) -> None:
    prompt = run.prompt
    config = Config.of(prompt, run.draft)
    checks = list(prompt.answer_checks.order_by("id"))
    previous = last_live_results(prompt, exclude=run.pk)
    payer, language = _payer(run), prompt_language(prompt)
    curates = config.curate and bool(config.collections) and is_available(settings.CURATION_MODEL)
    calls_model = is_available_on_second_look(config.model) or curates
    names = dict(SourceFile.objects.filter(collection__prompts=prompt).values_list("pk", "original_name"))
    run.total = len(checks)
    run.save(update_fields=["total"])
    for check in checks:
        if run.ran >= settings.ANSWER_CHECKS_MAX_PER_RUN:
            run.stopped_reason = RunStop.LIMIT
            break
        try:
            meter = reserve(payer.pk, prompt) if calls_model else UsageMeter(payer.pk, prompt.pk)
        except BudgetExhausted:
            run.stopped_reason = RunStop.BUDGET
            break
        try:
            played = play(config, check.question, meter)
        finally:
            meter.settle()
            meter.flush()
        played.file_names = names
        _store(run, check, played, previous.get(check.pk), language)
    run.status = RunStatus.STOPPED if run.stopped_reason else RunStatus.DONE
    run.ran_at = timezone.now()
    run.save(update_fields=["status", "stopped_reason", "ran_at"])
    log.info(
        "prompt %s: answer checks %s of %s passed, %s asked (%s)",
        prompt.pk,
        run.passed,
        run.total,
        run.ran,
        run.trigger,
    )


def _store(run: AnswerCheckRun, check, played: Played, before: bool | None, language: str) -> None:
    verdict = judge(check.expect, played, language=language)
    changed = ""
    if before is not None and before != verdict.passed:
        changed = NEWLY_PASSING if verdict.passed else NEWLY_FAILING
    with transaction.atomic():
        AnswerCheckResult.objects.create(
            run=run, check_item=check, passed=verdict.passed, answer=played.text, mode=played.mode,
            searched=verdict.searched, searches=verdict.searches, cited=verdict.cited,
            facts_missing=verdict.facts_missing, forbidden_found=verdict.forbidden_found, refused=verdict.refused,
            grounded=verdict.grounded, unsupported=verdict.unsupported, reasons=verdict.reasons, changed=changed,
            error=played.error,
        )  # fmt: skip
        run.ran += 1
        run.passed += int(verdict.passed)
        run.save(update_fields=["ran", "passed"])


def last_live_results(prompt: Prompt, *, exclude: int | None = None) -> dict[int, bool]:
    """Each check's verdict in the latest finished run of the live prompt it took part in."""
    rows = AnswerCheckResult.objects.filter(
        run__prompt=prompt, run__draft__isnull=True, run__status__in=[RunStatus.DONE, RunStatus.STOPPED]
    ).exclude(run_id=exclude)
    latest: dict[int, bool] = {}
    for check_id, passed in rows.order_by("-run__ran_at", "-run_id").values_list("check_item_id", "passed"):
        latest.setdefault(check_id, passed)
    return latest
