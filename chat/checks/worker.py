"""The worker's half of a run of answer checks (queued by chat/checks/runs.py, run by the task
chat/checks/tasks.run_answer_checks): claimed by one worker, played question by question, each
result stored as it comes with what changed since the last live run.

Cost: a question that calls a model (the chat model, or curation in extractive mode) sets an
estimate aside from the paying teacher's weekly budget in the prompt first (chat/metering/usage.reserve,
as a chat turn does) and counts every call. The run stops, keeping what ran, at the first question
the budget refuses (`stopped`, reason `budget`) or after ANSWER_CHECKS_MAX_PER_RUN questions (reason
`limit`). The payer is the teacher who started it, or whose change started it; for a run after a
re-index, the prompt's owner.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.checks.play import Config, Played, play
from chat.checks.verdicts import judge
from chat.insight.stats import prompt_language
from chat.metering.usage import BudgetExhausted, UsageMeter, reserve
from chat.models import AnswerCheckResult, AnswerCheckRun, Prompt, RunStatus, RunStop
from collections_app.models import SourceFile
from collections_app.verdict_changes import change, latest_per_check
from rag.providers import is_available, is_available_on_second_look

log = logging.getLogger(__name__)


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
    changed = change(before, verdict.passed)
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
    return latest_per_check(rows.order_by("-run__ran_at", "-run_id"))
