"""Writing validated values onto a model instance: the last step of every update function
(`collections_app.writes`, `chat.course.writes`, the search and answer checks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from django.db import models

M = TypeVar("M", bound=models.Model)


def save_values(instance: M, values: Mapping[str, Any]) -> M:
    """`instance` with each of `values` (already cleaned: field name to value) set on it, saved."""
    for name, value in values.items():
        setattr(instance, name, value)
    instance.save()
    return instance
