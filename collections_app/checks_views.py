"""Test questions at the edges: `/api/v1/collections/{id}/checks` and the collection's checks page.

Both check permission as for the collection's settings (owners and co-owners, as they are now),
then call collections_app.checks, so page and API accept and refuse the same things.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods
from ninja import Field, Router, Schema, Status

from access.rules import get_collection_for_edit
from collections_app import checks
from collections_app.models import FileStatus, SearchCheck
from kernel.errors import CurreChatError
from kernel.ratelimit import search_by_user

router = Router(tags=["test questions"])


class ExpectIn(Schema):
    file_id: int | None = Field(description="The file that holds the answer; null: no file holds it yet")
    page: int | None = None
    section: str | None = None
    phrase: str | None = None


class CheckIn(Schema):
    question: str
    expect: ExpectIn


class ExpectPatch(Schema):
    file_id: int | None = None
    page: int | None = None
    section: str | None = None
    phrase: str | None = None


class CheckPatch(Schema):
    question: str | None = None
    expect: ExpectPatch | None = None


class LastOut(Schema):
    rank: int | None
    passed: bool
    ran_at: datetime


class ExpectOut(Schema):
    file_id: int | None = Field(description="The file that holds the answer; null: no file yet (runs skip it)")
    page: int | None
    section: str | None
    phrase: str | None


class CheckOut(Schema):
    id: int
    question: str
    expect: ExpectOut
    last: LastOut | None


class RunIn(Schema):
    curate: bool = False


class ResultOut(Schema):
    check_id: int
    rank: int | None = Field(description="1-based rank of the first passage that meets `expect`; null beyond 15")
    passed: bool
    changed: Literal["newly_failing", "newly_passing"] | None


class RunOut(Schema):
    run_id: int
    ran_at: datetime
    trigger: str
    passed: int
    total: int = Field(description="The collection's test questions when the run started")
    ran: int = Field(description="Questions searched: fewer than `total` when the run stopped early")
    stopped: Literal["budget", "limit"] | None = Field(
        description="Why a curated run stopped early: `budget`, the weekly token budget refused the next "
        "question; `limit`, CHECKS_MAX_CURATED_PER_RUN questions ran. Null: every question ran."
    )
    results: list[ResultOut] = Field(description="Newly failing first; only the questions that ran")


def _spec(data: CheckIn | CheckPatch) -> dict:
    spec = data.dict(exclude_unset=True)
    return {**{k: v for k, v in spec.items() if k != "expect"}, **(spec.get("expect") or {})}


def _out(check: SearchCheck) -> dict:
    return {
        "id": check.pk,
        "question": check.question,
        "expect": checks.expect_dict(check),
        "last": checks.last_dict(check),
    }


def _check(request, collection_id: int, check_id: int) -> SearchCheck:
    collection = get_collection_for_edit(request.user, collection_id)
    return get_object_or_404(SearchCheck, collection=collection, pk=check_id)


@router.get("/collections/{int:collection_id}/checks", response=list[CheckOut])
def list_checks(request, collection_id: int):
    collection = get_collection_for_edit(request.user, collection_id)
    return [_out(c) for c in collection.checks.all()]


@router.post("/collections/{int:collection_id}/checks", response={201: CheckOut})
def create_check(request, collection_id: int, data: CheckIn):
    collection = get_collection_for_edit(request.user, collection_id)
    return Status(201, _out(checks.create_check(request.user, collection, _spec(data))))


@router.patch("/collections/{int:collection_id}/checks/{int:check_id}", response=CheckOut)
def update_check(request, collection_id: int, check_id: int, data: CheckPatch):
    return _out(checks.update_check(_check(request, collection_id, check_id), _spec(data)))


@router.delete("/collections/{int:collection_id}/checks/{int:check_id}", response={204: None})
def delete_check(request, collection_id: int, check_id: int):
    _check(request, collection_id, check_id).delete()
    return Status(204, None)


@router.post("/collections/{int:collection_id}/checks/run", response=RunOut)
def run_checks(request, collection_id: int, data: RunIn | None = None):
    """Search every test question now (no model calls unless `curate`, then metered like searches)."""
    collection = get_collection_for_edit(request.user, collection_id)
    search_by_user().hit(request.user.pk)
    run = checks.run_checks(collection, user=request.user, curate=bool(data and data.curate))
    return checks.run_dict(run)


# --- The page ------------------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def checks_page(request, pk: int):
    collection = get_collection_for_edit(request.user, pk)
    # From a material gap (insight page): its question, and "no file yet" chosen, since a gap has none.
    question = request.GET.get("question", "")[:500]
    form = {"question": question, "file_id": request.GET.get("file", ""), "prefilled": bool(question)}
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "add":
                form = {k: request.POST.get(k, "") for k in checks.FIELDS}
                checks.create_check(request.user, collection, form)
                messages.success(request, _("Test question added."))
            elif action == "delete":
                get_object_or_404(SearchCheck, collection=collection, pk=request.POST.get("check_id") or 0).delete()
                messages.success(request, _("Test question removed."))
            elif action == "run":
                search_by_user().hit(request.user.pk)
                curate = request.POST.get("curate") == "on"
                done = checks.run_checks(collection, user=request.user, curate=curate)
                sentence = _("%(passed)s of %(total)s test questions found their passage in the top 15.")
                messages.success(request, sentence % {"passed": done.passed, "total": done.ran})
            return redirect("collection_checks", pk=collection.pk)
        except CurreChatError as exc:
            messages.error(request, str(exc))
    run = checks.latest_run(collection)
    pending = checks.waiting_run(collection)
    context = {
        "collection": collection,
        "rows": checks.rows_for(collection, run),
        "run": run,
        "stopped_note": checks.stopped_sentence(run) if run and run.stopped else "",
        "pending": pending,
        "form": form,
        "files": collection.files.filter(status=FileStatus.READY).order_by("original_name"),
        "top": checks.TOP,
        "page_models": [("embeddings", collection.embedding_model)],
    }
    return render(request, "collections/checks.html", context)
