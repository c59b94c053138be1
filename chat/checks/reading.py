"""What the page and the API show of answer checks and their runs (one shape for both)."""

from __future__ import annotations

from dataclasses import dataclass

from chat.models import AnswerCheck, AnswerCheckResult, AnswerCheckRun, Prompt, RunStatus
from collections_app.models import SourceFile

FINISHED = (RunStatus.DONE, RunStatus.STOPPED)


def latest_live(prompt: Prompt, *, finished: bool = True) -> AnswerCheckRun | None:
    runs = prompt.answer_check_runs.filter(draft__isnull=True)
    if finished:
        runs = runs.filter(status__in=FINISHED)
    return runs.order_by("-created", "-id").first()


def latest_draft(prompt: Prompt) -> AnswerCheckRun | None:
    return prompt.answer_check_runs.filter(draft__isnull=False).order_by("-created", "-id").first()


def last_results(prompt: Prompt) -> dict[int, AnswerCheckResult]:
    """Each check's result in the latest finished live run it took part in."""
    rows = AnswerCheckResult.objects.filter(
        run__prompt=prompt, run__draft__isnull=True, run__status__in=FINISHED
    ).select_related("run")
    latest: dict[int, AnswerCheckResult] = {}
    for result in rows.order_by("-run__ran_at", "-run_id"):
        latest.setdefault(result.check_item_id, result)
    return latest


def check_dict(check: AnswerCheck, last: AnswerCheckResult | None = None) -> dict:
    return {
        "id": check.pk,
        "question": check.question,
        "expect": check.expect,
        "last": {"passed": last.passed, "ran_at": last.run.ran_at} if last else None,
    }


def checks_with_last(prompt: Prompt) -> list[dict]:
    last = last_results(prompt)
    return [check_dict(c, last.get(c.pk)) for c in prompt.answer_checks.order_by("id")]


def order(result: AnswerCheckResult) -> tuple:
    """Newly failing first, then still failing, newly passing, passing; checks in their order."""
    rank = 0 if result.changed == "newly_failing" else 1 if not result.passed else 2 if result.changed else 3
    return (rank, result.check_item_id)


def result_dict(r: AnswerCheckResult) -> dict:
    return {
        "check_id": r.check_item_id, "passed": r.passed, "answer": r.answer, "searched": r.searched,
        "searches": r.searches,
        "cited": [{"file_id": c.get("file_id"), "page": c.get("page"), "section": c.get("section") or None}
                  for c in r.cited],
        "facts_missing": r.facts_missing, "forbidden_found": r.forbidden_found, "refused": r.refused,
        "grounded": r.grounded, "unsupported": r.unsupported, "reasons": r.reasons, "changed": r.changed or None,
    }  # fmt: skip


def run_summary(run: AnswerCheckRun) -> dict:
    return {
        "run_id": run.pk, "status": run.status, "draft": run.draft is not None, "trigger": run.trigger,
        "ran_at": run.ran_at, "passed": run.passed, "total": run.total, "ran": run.ran,
    }  # fmt: skip


def run_dict(run: AnswerCheckRun) -> dict:
    results = sorted(run.results.all(), key=order)
    return {**run_summary(run), "stopped": run.stopped_reason or None, "results": [result_dict(r) for r in results]}


@dataclass(frozen=True)
class Row:
    """A check beside its result in the live run and in the draft run (either may be missing)."""

    check: AnswerCheck
    live: AnswerCheckResult | None
    draft: AnswerCheckResult | None
    cites_name: str | None = None  # the name of the file it must cite

    def sort_key(self) -> tuple:
        shown = self.live
        return order(shown) if shown is not None else (2, self.check.pk)


def rows(prompt: Prompt, live: AnswerCheckRun | None, draft: AnswerCheckRun | None) -> list[Row]:
    live_results = {r.check_item_id: r for r in live.results.all()} if live else {}
    draft_results = {r.check_item_id: r for r in draft.results.all()} if draft else {}
    names = dict(SourceFile.objects.filter(collection__prompts=prompt).values_list("pk", "original_name"))
    found = [
        Row(
            c,
            live_results.get(c.pk),
            draft_results.get(c.pk),
            names.get(int((c.expect.get("cites") or {}).get("file_id") or 0)),
        )
        for c in prompt.answer_checks.order_by("id")
    ]
    return sorted(found, key=Row.sort_key)
