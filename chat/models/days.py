"""What the per-day counters of a prompt share (`PromptDay`, `SafetyDay`): one row per prompt and
(local) day, added to as things happen, read summed over a range of days."""

from __future__ import annotations

from datetime import date
from typing import Any

from django.db import models
from django.db.models import F


class PromptDayCounts(models.Model):
    """A prompt's counts for one day. Each subclass declares its own fields (`prompt`, with a related
    name of its own, `day` and the counters) and its unique constraint on both, whose name is its
    table's: here are only the ordering, the name and the adding."""

    class Meta:
        abstract = True
        ordering = ["prompt", "day"]

    def __str__(self) -> str:
        return f"{self.prompt} on {self.day}"  # type: ignore[attr-defined]

    @classmethod
    def add(cls, prompt_id: int, day: date, **counts: int) -> None:
        """Add `counts` (field -> amount, negative to take back) to the prompt's row for `day`.
        Several writers add to one row (the statistics and the token meter to a `PromptDay`)."""
        changes = {name: F(name) + amount for name, amount in counts.items() if amount}
        row: dict[str, Any] = {"prompt_id": prompt_id, "day": day}  # the subclass's fields
        rows = cls._default_manager.filter(**row)
        # The row exists for all but a prompt's first count of a day: one UPDATE, no read first.
        if changes and rows.update(**changes):
            return
        cls._default_manager.get_or_create(**row)
        if changes:
            rows.update(**changes)
