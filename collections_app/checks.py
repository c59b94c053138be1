"""Test questions: a collection's retrieval checks, their one write path, and their runs.

A check is a question with what a good search must find: a file of the collection, optionally a
page, a section (part of the heading path) or a phrase the passage must contain. A run searches
every question as the chat model would (`rag.search.search_collections`, the first `TOP`
results) and records the rank of the first passage that meets the expectation; a check passes when
that rank is at most `TOP`. Each result says what changed against the check's previous result.

Runs start on demand (page, API) and by themselves after a re-index, a language change or an
embedding-model change: `schedule_after_reindex` leaves a pending run, and the worker runs it once
the last file of the re-index is done (`run_when_indexed`, called at the end of every ingestion).
Runs make no model calls unless curation is asked for; then the person who started the run pays
for it from their weekly budget, as for any search, reserved before each question
(`_curation_meter`): a run stops at the first question the budget refuses, or at
CHECKS_MAX_CURATED_PER_RUN questions, and says how far it got.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from collections_app import metering
from collections_app.documents import documents_in
from collections_app.models import (
    CheckResult,
    CheckRun,
    CheckStop,
    CheckTrigger,
    Collection,
    FileStatus,
    SearchCheck,
    SourceFile,
)
from collections_app.verdict_changes import NEWLY_FAILING, change, latest_per_check
from kernel.errors import InvalidInput
from kernel.records import check_fits, save_values
from rag.documents import named_in
from rag.results import Passage
from rag.search import search_collections
from rag.text import search_form

log = logging.getLogger(__name__)

STALE_RUN_SECONDS = 600  # a claimed run not done by then lost its worker; another worker may take it
TOP = 15  # a check passes when the expected passage is among the first TOP results
FIELDS = ("question", "file_id", "page", "section", "phrase")
NO_FILE = "none"  # the form's and the API's "no file yet"


# The one write path (page form and API alike) -----------------------------------------------------


def clean_check(collection: Collection, spec: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Validated model fields from `spec` (question, file_id, page, section, phrase). Raises
    InvalidInput naming the field, with a sentence the teacher can act on."""
    cleaned: dict[str, Any] = {}
    if "question" in spec or not partial:
        question = " ".join((spec.get("question") or "").split())
        if not question:
            raise InvalidInput(_("Write the question a student would ask."), field="question")
        if len(question) > 500:
            raise InvalidInput(_("Keep the question to 500 characters."), field="question")
        cleaned["question"] = question
    if "file_id" in spec or not partial:
        cleaned["expect_file"] = _expected_file(collection, spec)
    if "page" in spec:
        cleaned["expect_page"] = page_number(spec.get("page"), field="page")
    for name in ("section", "phrase"):
        if name in spec:
            value = " ".join((spec.get(name) or "").split())
            if len(value) > 300:
                raise InvalidInput(_("Keep it to 300 characters."), field=name)
            cleaned[f"expect_{name}"] = value
    check_fits(SearchCheck, cleaned)
    return cleaned


def page_number(value: Any, *, field: str) -> int | None:
    """An expected page as a check's form or API gives it: None for any page (empty), else a number
    from 1 up (InvalidInput naming `field` otherwise). Answer checks (chat/checks/expect.py) read theirs alike."""
    if value in ("", None):
        return None
    try:
        page = int(value)
    except (TypeError, ValueError):
        page = 0
    if page < 1:
        raise InvalidInput(_("A page is a number from 1 up; leave it empty for any page."), field=field)
    return page


def _expected_file(collection: Collection, spec: dict[str, Any]) -> SourceFile | None:
    """The file that holds the answer; None for "no file yet" (`file_id` null or "none"): a gap in
    the material, kept as a question to test once a file answers it."""
    wanted = spec.get("file_id", "")
    if wanted is None or wanted == NO_FILE:
        return None
    source = SourceFile.objects.filter(collection=collection, pk=wanted or 0).first() if str(wanted).isdigit() else None
    if source is None:
        raise InvalidInput(_("Choose the file of this collection that holds the answer."), field="file_id")
    return source


def create_check(actor, collection: Collection, spec: dict[str, Any]) -> SearchCheck:
    return SearchCheck.objects.create(collection=collection, created_by=actor, **clean_check(collection, spec))


def update_check(check: SearchCheck, spec: dict[str, Any]) -> SearchCheck:
    return save_values(check, clean_check(check.collection, spec, partial=True))


# What a good search must find ---------------------------------------------------------------------


def meets(passage: Passage, check: SearchCheck) -> bool:
    """Whether `passage` is what the check expects: its file, and its page, section and phrase
    where given (section and phrase compared as search compares text: case and accents folded)."""
    if check.expect_file_id is None or passage.file_id != check.expect_file_id:
        return False
    if check.expect_page is not None:
        first = passage.page
        last = passage.page_end if passage.page_end is not None else first
        if first is None or not first <= check.expect_page <= (last or first):
            return False
    if check.expect_section and search_form(check.expect_section) not in search_form(passage.section):
        return False
    return not (check.expect_phrase and search_form(check.expect_phrase) not in search_form(passage.text))


def rank_of(results: list[Passage], check: SearchCheck) -> int | None:
    return next((i for i, p in enumerate(results[:TOP], start=1) if meets(p, check)), None)


# Runs ----------------------------------------------------------------------------------------------


def _curation_meter(user):
    """(meter, None) with an estimate set aside from the user's weekly budget across prompts for one
    question's curation (the meter plugged into `metering`, as for any curated search), or (None,
    the refusal) when the budget has no room. The meter counts each curation call as it ends; the
    caller settles it when the question is done."""
    try:
        return metering.reserve(user.pk, None), None
    except metering.BudgetExhausted as refusal:
        return None, refusal


@dataclass
class Progress:
    """How far a run got: a result for each question searched, of `total`; why it stopped early."""

    rows: list[CheckResult]
    total: int
    stopped: str = ""


def run_checks(
    collection: Collection, *, user=None, curate: bool = False, trigger: str = CheckTrigger.MANUAL, run=None
) -> CheckRun:
    """Search every check's question and store the run with each check's rank and change.

    A curated run is paid question by question: it stops at the first question the budget refuses,
    or after CHECKS_MAX_CURATED_PER_RUN questions, and keeps what ran (`ran` of `total`, `stopped`
    says why). Refused before its first question, it raises the refusal (429) and stores nothing."""
    payer = user if curate and user is not None else None
    progress = _rank_each(collection, payer=payer)
    run = run or CheckRun(collection=collection, trigger=trigger, started_by=user)
    with transaction.atomic():
        run.pending, run.curated = False, payer is not None
        run.passed, run.ran = sum(r.passed for r in progress.rows), len(progress.rows)
        run.total, run.stopped = progress.total, progress.stopped
        run.ran_at = timezone.now()
        run.save()
        for row in progress.rows:
            row.run = run
        CheckResult.objects.bulk_create(progress.rows)
    log.info(
        "collection %s: test questions %s of %s passed, %s ran (%s%s)",
        collection.pk, run.passed, run.total, run.ran, run.trigger, f", stopped: {run.stopped}" if run.stopped else "",
    )  # fmt: skip
    return run


def _rank_each(collection: Collection, *, payer) -> Progress:
    """Each check's rank now, and whether it changed since the last run (not yet stored). With a
    `payer`, each question's curation is reserved from their budget before it is searched."""
    previous = _last_results(collection)
    # A question no file answers yet cannot find its passage: it waits for its file, not counted.
    questions = list(collection.checks.filter(expect_file__isnull=False))
    cap = settings.CHECKS_MAX_CURATED_PER_RUN if payer is not None else len(questions)
    documents = documents_in([collection])
    rows: list[CheckResult] = []
    for check in questions:
        if len(rows) >= cap:
            return Progress(rows, len(questions), CheckStop.LIMIT)
        meter, refusal = _curation_meter(payer) if payer is not None else (None, None)
        if refusal is not None:
            if not rows:
                raise refusal  # nothing ran: refused like any curated search, naming when it starts again
            return Progress(rows, len(questions), CheckStop.BUDGET)
        try:
            named = named_in(check.question, documents)  # as the chat's search would (rag/documents.py)
            outcome = search_collections(
                [collection], check.question, limit=TOP, curate=payer is not None, usage=meter, named=named
            )
        finally:
            if meter is not None:
                meter.settle()  # what the question held and did not use goes back to the budget
        rows.append(_result(check, rank_of(outcome.results, check), previous.get(check.pk)))
    return Progress(rows, len(questions))


def stopped_sentence(run: CheckRun) -> str:
    """What the teacher reads about a run that stopped early (page message and last-run line)."""
    if run.stopped == CheckStop.BUDGET:
        why = _("your weekly token budget had no room for the next question's curation")
    else:
        why = _("a curated run checks at most %(limit)s questions") % {"limit": settings.CHECKS_MAX_CURATED_PER_RUN}
    sentence = _(
        "The run stopped after %(ran)s of %(total)s questions: %(why)s. Run again without curation to search them all."
    )
    return sentence % {"ran": run.ran, "total": run.total, "why": why}


def _result(check: SearchCheck, rank: int | None, before: bool | None) -> CheckResult:
    passed = rank is not None
    return CheckResult(check_item=check, rank=rank, passed=passed, changed=change(before, passed))


def _last_results(collection: Collection) -> dict[int, bool]:
    """Each check's result in the latest run it took part in."""
    rows = CheckResult.objects.filter(run__collection=collection, run__pending=False)
    return latest_per_check(rows.order_by("-run__ran_at", "-id"))


def schedule_after_reindex(collection: Collection, trigger: str) -> None:
    """Leave a pending run for when the re-index that starts now has finished (at most one
    waiting run per collection; a later trigger replaces the reason). A run already under way
    searched the old index, so the re-index gets a waiting run of its own."""
    if not collection.checks.exists():
        return
    waiting = CheckRun.objects.filter(collection=collection, pending=True, started_at__isnull=True)
    if not waiting.update(trigger=trigger):
        CheckRun.objects.create(collection=collection, trigger=trigger, pending=True)


def _claimable(collection_id: int):
    """Pending runs no worker is running: waiting ones, and one whose worker died mid-run."""
    stale = timezone.now() - timedelta(seconds=STALE_RUN_SECONDS)
    return CheckRun.objects.filter(collection_id=collection_id, pending=True).filter(
        Q(started_at__isnull=True) | Q(started_at__lt=stale)
    )


def still_indexing(collection_id: int) -> bool:
    """Whether a file of the collection is queued or being ingested. Checks left waiting by a
    re-index wait until it is not: these, and the prompts' answer checks (chat/checks/auto.py)."""
    busy = (FileStatus.QUEUED, FileStatus.PROCESSING)
    return SourceFile.objects.filter(collection_id=collection_id, status__in=busy).exists()


def run_when_indexed(collection_id: int) -> CheckRun | None:
    """Run the collection's pending checks if no file is waiting or being ingested any more.
    Called by the worker after each file; exactly one worker claims the run. The run stays
    `pending` until its results are stored, so the page keeps waiting for them."""
    if still_indexing(collection_id):
        return None
    run = _claimable(collection_id).order_by("id").first()
    if run is None:
        return None
    # Claimed by a conditional update: a second worker finishing at the same time claims nothing.
    if not _claimable(collection_id).filter(pk=run.pk, started_at=run.started_at).update(started_at=timezone.now()):
        return None
    collection = Collection.objects.get(pk=collection_id)
    try:
        return run_checks(collection, trigger=run.trigger, run=run)
    except Exception:  # noqa: BLE001 — the file's ingestion succeeded; the run waits for the next chance
        log.warning("collection %s: the test questions could not run after the re-index", collection_id, exc_info=True)
        CheckRun.objects.filter(pk=run.pk).update(started_at=None)
        return None


def waiting_run(collection: Collection) -> CheckRun | None:
    """The run the page waits for (its results not stored yet): `started_at` says it is under way."""
    return collection.check_runs.filter(pending=True).order_by("id").first()


# What the page and the API show ---------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    check: SearchCheck
    result: CheckResult | None


def _order(row: Row) -> tuple:
    """Newly failing first, then still failing, newly passing, passing; questions in their order."""
    r = row.result
    if r is None:
        return (2, row.check.pk)
    return (0 if r.changed == NEWLY_FAILING else 1 if not r.passed else 2 if r.changed else 3, row.check.pk)


def latest_run(collection: Collection) -> CheckRun | None:
    return collection.check_runs.filter(pending=False, ran_at__isnull=False).order_by("-ran_at", "-id").first()


def rows_for(collection: Collection, run: CheckRun | None = None) -> list[Row]:
    """Every check with its result in `run` (the latest by default), newly failing first."""
    run = run or latest_run(collection)
    results = {r.check_item_id: r for r in run.results.all()} if run else {}
    checks = collection.checks.select_related("expect_file")
    return sorted((Row(c, results.get(c.pk)) for c in checks), key=_order)


def expect_dict(check: SearchCheck) -> dict:
    return {
        "file_id": check.expect_file_id,
        "page": check.expect_page,
        "section": check.expect_section or None,
        "phrase": check.expect_phrase or None,
    }


def last_dict(check: SearchCheck) -> dict | None:
    result = (
        CheckResult.objects.filter(check_item=check, run__pending=False)
        .select_related("run")
        .order_by("-run__ran_at", "-id")
        .first()
    )
    if result is None:
        return None
    return {"rank": result.rank, "passed": result.passed, "ran_at": result.run.ran_at}


def run_dict(run: CheckRun) -> dict:
    rows = rows_for(run.collection, run)
    return {
        "run_id": run.pk,
        "ran_at": run.ran_at,
        "trigger": run.trigger,
        "passed": run.passed,
        "total": run.total,
        "ran": run.ran,
        "stopped": run.stopped or None,
        "results": [
            {"check_id": row.check.pk, "rank": row.result.rank, "passed": row.result.passed,
             "changed": row.result.changed or None}
            for row in rows
            if row.result is not None
        ],
    }  # fmt: skip
