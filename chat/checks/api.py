"""Answer checks at the API: `/api/v1/prompts/{id}/answer-checks...` (DESIGN.md "Answer checks API").

Every route asks the access rules as the prompt's settings do (owners and co-teachers, as they are
now), then calls one domain function, so page and API accept and refuse the same things.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from access.rules import get_prompt_for_edit
from chat.checks import expect as check_writes
from chat.checks import reading, runs
from chat.checks.starters import add_adversarial
from chat.models import AnswerCheck, AnswerCheckRun

router = Router(tags=["answer checks"])


class CitesIn(Schema):
    file_id: int
    page: int | None = None
    section: str | None = None


class ExpectIn(Schema):
    facts: list[list[str]] | None = Field(None, description="Each fact as its alternative wordings")
    cites: CitesIn | None = None
    refuses: bool | None = None
    forbidden: list[str] | None = None
    searches: bool | None = None


class CheckIn(Schema):
    question: str
    expect: ExpectIn | None = Field(None, description="Left out: no expectation (the answer is recorded)")


class CheckPatch(Schema):
    question: str | None = None
    expect: ExpectIn | None = Field(None, description="Replaces every expectation")


class LastOut(Schema):
    passed: bool
    ran_at: datetime | None


class CheckOut(Schema):
    id: int
    question: str
    expect: dict
    last: LastOut | None


class DraftIn(Schema):
    model: str | None = None
    system_prompt: str | None = None
    curation: bool | None = None
    collection_ids: list[int] | None = None


class RunIn(Schema):
    draft: DraftIn | None = None


class StartedOut(Schema):
    run_id: int
    status: Literal["queued", "running", "done", "stopped"]


class CitedOut(Schema):
    file_id: int
    page: int | None
    section: str | None


class ResultOut(Schema):
    check_id: int
    passed: bool
    answer: str
    searched: bool
    searches: list[str]
    cited: list[CitedOut]
    facts_missing: list[list[str]]
    forbidden_found: list[str]
    refused: bool
    grounded: float | None
    unsupported: list[str]
    reasons: list[str] = Field(description="Why it failed, one sentence per expectation that did not hold")
    changed: Literal["newly_failing", "newly_passing"] | None


class RunOut(Schema):
    run_id: int
    status: Literal["queued", "running", "done", "stopped"]
    draft: bool
    trigger: str
    ran_at: datetime | None
    passed: int
    total: int
    ran: int = Field(description="Questions asked so far: how far the run got")
    stopped: Literal["budget", "limit", "failed"] | None
    results: list[ResultOut] = Field(description="Newly failing first")


class RunListOut(Schema):
    run_id: int
    status: str
    draft: bool
    trigger: str
    ran_at: datetime | None
    passed: int
    total: int
    ran: int


def _check(request, prompt_id: int, check_id: int) -> AnswerCheck:
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return get_object_or_404(AnswerCheck, prompt=prompt, pk=check_id)


def _spec(data: CheckIn | CheckPatch) -> dict:
    spec = data.dict(exclude_unset=True)
    if spec.get("expect") is not None:
        spec["expect"] = {k: v for k, v in spec["expect"].items() if v is not None}
    return spec


@router.get("/prompts/{int:prompt_id}/answer-checks", response=list[CheckOut])
def list_checks(request, prompt_id: int):
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return reading.checks_with_last(prompt)


@router.post("/prompts/{int:prompt_id}/answer-checks", response={201: CheckOut})
def create_check(request, prompt_id: int, data: CheckIn):
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return Status(201, reading.check_dict(check_writes.create_check(request.user, prompt, _spec(data))))


@router.post("/prompts/{int:prompt_id}/answer-checks/adversarial", response={201: list[CheckOut]})
def create_adversarial(request, prompt_id: int):
    """Add the ready-made adversarial checks (whole solution, ignoring instructions, off topic)."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return Status(201, [reading.check_dict(c) for c in add_adversarial(request.user, prompt)])


@router.patch("/prompts/{int:prompt_id}/answer-checks/{int:check_id}", response=CheckOut)
def update_check(request, prompt_id: int, check_id: int, data: CheckPatch):
    return reading.check_dict(check_writes.update_check(_check(request, prompt_id, check_id), _spec(data)))


@router.delete("/prompts/{int:prompt_id}/answer-checks/{int:check_id}", response={204: None})
def delete_check(request, prompt_id: int, check_id: int):
    _check(request, prompt_id, check_id).delete()
    return Status(204, None)


@router.post("/prompts/{int:prompt_id}/answer-checks/run", response={202: StartedOut})
def run_checks(request, prompt_id: int, data: RunIn | None = None):
    """Queue a run of every check (of the live prompt, or of `draft` over it: the live prompt is never
    changed by it); read its progress and results at `runs/{run_id}`."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    draft = data.draft.dict(exclude_unset=True) if data and data.draft is not None else None
    run = runs.start_run(request.user, prompt, draft=draft)
    return Status(202, {"run_id": run.pk, "status": run.status})


@router.get("/prompts/{int:prompt_id}/answer-checks/runs", response=list[RunListOut])
def list_runs(request, prompt_id: int):
    """The runs, newest first (the last 50)."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return [reading.run_summary(r) for r in prompt.answer_check_runs.all()[:50]]


@router.get("/prompts/{int:prompt_id}/answer-checks/runs/{int:run_id}", response=RunOut)
def get_run(request, prompt_id: int, run_id: int):
    prompt = get_prompt_for_edit(request.user, prompt_id)
    return reading.run_dict(get_object_or_404(AnswerCheckRun, prompt=prompt, pk=run_id))


class AppliedOut(Schema):
    prompt_id: int
    run_id: int | None = Field(description="The run of the live prompt the change started (null: nothing changed)")


@router.post("/prompts/{int:prompt_id}/answer-checks/runs/{int:run_id}/apply", response=AppliedOut)
def apply_draft(request, prompt_id: int, run_id: int):
    """Make the run's draft the live prompt, through the prompt's settings (checked as a PATCH is)."""
    prompt = get_prompt_for_edit(request.user, prompt_id)
    run = get_object_or_404(AnswerCheckRun, prompt=prompt, pk=run_id)
    started = runs.apply_draft(request.user, run)
    return {"prompt_id": prompt.pk, "run_id": started.pk if started else None}
