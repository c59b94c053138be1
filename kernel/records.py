"""Writing validated values onto a model instance: the last step of every update function
(`collections_app.writes`, `chat.course.writes`, the search and answer checks); and what any of
our databases can store, so values from outside are held to it where they come in."""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.db.models.lookups import In
from django.utils.text import capfirst
from django.utils.translation import gettext, gettext_lazy

from kernel.errors import InvalidInput

M = TypeVar("M", bound=models.Model)

# No text any of our databases stores holds a NUL character (PostgreSQL refuses it) or half of a
# UTF-16 surrogate pair (JSON can write one, "\\ud800", but UTF-8 cannot), and no key is beyond
# 64 bits. SQLite and PostgreSQL refuse such a parameter outright, even in a lookup that could
# only find nothing, so a request carrying one would end as a server error.
_KEYS = range(-(2**63), 2**63)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
UNSTORABLE_REFUSED = gettext_lazy(
    "What you sent holds a character no text here can contain (a NUL, \\0, or half of a surrogate "
    "pair); it usually comes with text pasted from another program. Remove it and send again."
)


def unstorable_text(text: str) -> bool:
    """Whether `text` holds a character no database here can store."""
    return _UNSTORABLE.search(text) is not None


def storable(value: Any) -> bool:
    """Whether a database can take `value` as a key or text (a bigger int, a NUL cannot be one)."""
    if isinstance(value, int):
        return value in _KEYS
    return not (isinstance(value, str) and unstorable_text(value))


def check_fits(model: type[models.Model], values: Mapping[str, Any]) -> None:
    """Refuse, naming the field, a cleaned value its column cannot hold: text longer than its
    `max_length` or with a character no database stores, a number beyond its range (the limits
    Django's field validators state), a moment no time zone can show. The last step of each
    `check_*`, so nothing fails in the database."""
    for name, value in values.items():
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        if value is None or field.is_relation or not field.concrete:
            continue
        label = capfirst(field.verbose_name)
        if isinstance(value, str) and unstorable_text(value):
            raise InvalidInput(f"{label}: {UNSTORABLE_REFUSED}", field=name)
        if isinstance(value, datetime.datetime) and not _writable_moment(value):
            sentence = gettext("give a moment between the years %(first)s and %(last)s.")
            raise InvalidInput(f"{label}: " + sentence % {"first": _YEARS[0], "last": _YEARS[-1]}, field=name)
        try:
            field.run_validators(value)
        except ValidationError as exc:
            raise InvalidInput(f"{label}: {' '.join(exc.messages)}", field=name) from exc


# Moments a page can show in any time zone: a day inside Python's years at either end, since a
# zone 14 hours from UTC carries year 1's first day into year 0 (an OverflowError in storing it).
_YEARS = range(datetime.MINYEAR + 1, datetime.MAXYEAR)


def _writable_moment(value: datetime.datetime) -> bool:
    try:
        return value.astimezone(datetime.UTC).year in _YEARS
    except OverflowError:
        return False


def save_values(instance: M, values: Mapping[str, Any]) -> M:
    """`instance` with each of `values` (already cleaned: field name to value) set on it, saved."""
    for name, value in values.items():
        setattr(instance, name, value)
    instance.save()
    return instance


class StorableIn(In):
    """`in` on an integer column, leaving out the values no key can be (they match no row): Django
    answers an exact or ordering lookup with such a value itself, with no rows (5.0), but sends an
    `in` list to the database, and SQLite refuses a parameter beyond 64 bits: a program's
    `collection_ids: [2**70]` ended as a server error. Registered on IntegerField by the shell."""

    def get_prep_lookup(self):
        if self.rhs_is_direct_value() and isinstance(self.rhs, list | tuple | set | frozenset):
            self.rhs = [value for value in self.rhs if storable(value)]
        return super().get_prep_lookup()
