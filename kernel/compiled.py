"""Querysets whose SQL the ORM builds once, run with each call's own values (issue 44).

A chat question's own CPU went mostly to building small querysets (filters, joins, lookups) and
compiling them to SQL, the same SQL on every question but for a few ids: more than running them.
`Compiled` has the ORM build and compile a queryset once per database connection, with stand-ins
for the values that change, and each call runs that SQL with its own values and reads the rows as
the ORM reads them (the same converters, the same model instances, `select_related` and `only`
alike). Nothing read is kept: every call asks the database afresh, as the queryset would.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import ModelIterable, get_related_populators

from kernel.records import storable

M = TypeVar("M")  # what the queryset gives: its model, or a tuple (values_list)

# Stand-ins for the values while the SQL is compiled: no row has such an id and no text holds a
# NUL, so a parameter equal to one is that value's place.
_INT_BASE = -4_400_000_001


def _stand_in(index: int, kind: type) -> Any:
    if kind is int:
        return _INT_BASE - index
    if kind is str:
        return f"\x00compiled-{index}\x00"
    raise TypeError(f"A compiled query takes int and str values, not {kind.__name__}")


@dataclass
class _Plan:
    sql: str
    params: list[Any]
    places: dict[int, int]  # parameter position -> the call's value index
    compiler: Any
    model_reader: Callable[[tuple], Model] | None


class Compiled(Generic[M]):
    """`build(*values)` → a queryset; `rows(*values)` its rows (tuples, as `values_list` gives
    them), `objects(*values)` its model instances; `first(*values)` the first instance or None."""

    def __init__(self, build: Callable[..., QuerySet[Any, M]], *kinds: type):
        self._build = build
        self._kinds = kinds
        self._plans: weakref.WeakKeyDictionary[Any, _Plan] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def _plan(self, connection) -> _Plan:
        with self._lock:
            plan = self._plans.get(connection)
        if plan is None:
            plan = self._compile(connection)
            with self._lock:
                self._plans[connection] = plan
        return plan

    def _compile(self, connection) -> _Plan:
        stand_ins = [_stand_in(i, kind) for i, kind in enumerate(self._kinds)]
        queryset = self._build(*stand_ins)
        compiler = queryset.query.get_compiler(connection=connection)
        sql, params = compiler.as_sql()
        index = {value: i for i, value in enumerate(stand_ins)}
        places = {
            at: index[p]
            for at, p in enumerate(params)
            if isinstance(p, int | str) and not isinstance(p, bool) and p in index
        }
        if set(places.values()) != set(range(len(stand_ins))):
            raise ValueError("A value of the compiled query did not become a parameter of its SQL")
        reader = _model_reader(compiler, connection.alias) if queryset._iterable_class is ModelIterable else None
        return _Plan(sql=sql, params=list(params), places=places, compiler=compiler, model_reader=reader)

    def rows(self, *values: Any, using: str = "default") -> list[tuple]:
        connection = connections[using]
        plan = self._plan(connection)
        params = list(plan.params)
        for at, i in plan.places.items():
            params[at] = self._kinds[i](values[i])  # as the ORM's fields make them: "12" is 12
            if not storable(params[at]):
                # An id beyond 64 bits, text no database stores: no row holds it, as the
                # ORM answers for such a lookup, and the database would refuse the parameter.
                return []
        with connection.cursor() as cursor:
            cursor.execute(plan.sql, params)
            fetched = cursor.fetchall()
        compiler = plan.compiler
        if compiler.has_extra_select:  # columns only its ordering needed, as the ORM leaves them
            fetched = [row[: compiler.col_count] for row in fetched]
        return list(compiler.results_iter([fetched], tuple_expected=True))

    def objects(self, *values: Any, using: str = "default") -> list[M]:
        plan = self._plan(connections[using])
        assert plan.model_reader is not None, "objects() reads a queryset of model instances"
        return [plan.model_reader(row) for row in self.rows(*values, using=using)]  # type: ignore[misc]

    def first(self, *values: Any, using: str = "default") -> M | None:
        found = self.objects(*values, using=using)
        return found[0] if found else None


def first_of(queryset: QuerySet[Any, M]) -> QuerySet[Any, M]:
    """The rows `queryset.first()` reads: its first by its ordering, else by primary key."""
    return (queryset if queryset.ordered else queryset.order_by("pk"))[:1]


def _model_reader(compiler, db: str) -> Callable[[tuple], Model]:
    """A row to its model instance, as Django's ModelIterable makes it (no annotations here)."""
    select, klass_info = compiler.select, compiler.klass_info
    assert not compiler.annotation_col_map, "a compiled query of model instances has no annotations"
    model_cls = klass_info["model"]
    fields = klass_info["select_fields"]
    start, end = fields[0], fields[-1] + 1
    names = [f[0].target.attname for f in select[start:end]]
    populators = get_related_populators(klass_info, select, db)  # type: ignore[call-arg]  # (stubs of a later Django)

    def read(row: tuple) -> Model:
        obj = model_cls.from_db(db, names, row[start:end])
        for populator in populators:
            populator.populate(row, obj)
        return obj

    return read
