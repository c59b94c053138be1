"""The collections a turn searches: the prompt's usable collections, read fresh on every turn.

`Prompt.usable_collections()` is the rule (attached, and owned or co-owned by one of the prompt's
active teachers). Building that queryset, with its nested subqueries, cost more of a question's
CPU than any other step before the model call (issue 44, docs/BENCHMARKS.md). Its SQL is the same
for every prompt but for two ids, so it is compiled by the ORM once per process and database, and
each turn runs it with its own prompt's ids. Nothing read is kept: a co-teacher removed, a user
deactivated or a collection detached is seen by the next question, as before.
"""

from __future__ import annotations

import threading

from django.db import connection

from chat.models import Prompt
from collections_app.models import Collection

# Stand-ins for the prompt's id and its owner's id while the SQL is compiled: no row has a
# negative id, so a parameter equal to one of them is that id's place.
_PROMPT, _OWNER = -4401, -4402
_compiled: dict[str, tuple[str, tuple]] = {}
_lock = threading.Lock()


def _template() -> tuple[str, tuple]:
    with _lock:
        if connection.vendor not in _compiled:
            query = Prompt(pk=_PROMPT, owner_id=_OWNER).usable_collections().query
            _compiled[connection.vendor] = query.sql_with_params()
        return _compiled[connection.vendor]


def usable_collections(prompt: Prompt) -> list[Collection]:
    """`prompt.usable_collections()`, in its order, with less CPU."""
    sql, params = _template()
    ids = {_PROMPT: prompt.pk, _OWNER: prompt.owner_id}
    return list(Collection.objects.raw(sql, [ids.get(p, p) if isinstance(p, int) else p for p in params]))
