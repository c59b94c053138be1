"""What changed since the last run, told alike by both kinds of checks (the collections' search
checks, collections_app/checks.py, and the prompts' answer checks, chat/checks): each result is
compared with the check's result in the latest run it took part in."""

from __future__ import annotations

from django.db.models import QuerySet

NEWLY_FAILING, NEWLY_PASSING = "newly_failing", "newly_passing"


def latest_per_check(results: QuerySet) -> dict[int, bool]:
    """Each check's `passed` in the newest of `results` (ordered newest first) it has."""
    latest: dict[int, bool] = {}
    for check_id, passed in results.values_list("check_item_id", "passed"):
        latest.setdefault(check_id, passed)
    return latest


def change(before: bool | None, passed: bool) -> str:
    """NEWLY_PASSING or NEWLY_FAILING when `passed` differs from the last result `before`, else ""
    (also for a check that never ran)."""
    if before is None or before == passed:
        return ""
    return NEWLY_PASSING if passed else NEWLY_FAILING
