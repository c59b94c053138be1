"""The text of every answer streaming in this process, written to the replies about once a second,
in one statement for all of them, by a thread of its own.

So that a crashed or killed process loses at most a second of what its students already saw, the
streamed text is stored as it grows. Written by each turn for itself, that was an UPDATE per
streaming answer per second: with 200 chats streaming, a twelfth of the web process's CPU. Now
each turn only notes its text (`note`, called as each piece arrives, on the process's model-stream
reader: it must never wait for the database), and the writer thread, running while any text is
noted, writes all the noted texts at once every STREAM_SAVE_SECONDS.

A write never overtakes the end of an answer: it changes only replies still pending or streaming,
and a turn forgets its note (`forget`) before its final save.
"""

from __future__ import annotations

import logging
import os
import time
from typing import NamedTuple, cast

from django.db import connection
from django.db.models import Field

from chat.models import Message, MessageStatus
from kernel.threads import DaemonThread

log = logging.getLogger(__name__)

# Streamed text is written at most this often, so a crashed process loses at most this much of
# what the student already saw (never before the first token: it is sent first).
STREAM_SAVE_SECONDS = 1.0


class _Noted(NamedTuple):  # a plain tuple: one is made per streamed piece
    text: str
    mode: str
    model: str


class _Saves:
    def __init__(self) -> None:
        self._noted: dict[int, _Noted] = {}
        self._writer = DaemonThread("stream-saves", self._run)  # its lock guards _noted too
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        """A forked child has none of the parent's answers (nor its thread: kernel.threads)."""
        self._noted = {}

    def note(self, reply: Message, text: str) -> None:
        with self._writer.lock:
            self._noted[reply.pk] = _Noted(text, reply.mode, reply.model)
            self._writer.start_locked()

    def forget(self, reply: Message) -> None:
        with self._writer.lock:
            self._noted.pop(reply.pk, None)

    def _run(self) -> None:
        try:
            while True:
                time.sleep(STREAM_SAVE_SECONDS)
                with self._writer.lock:
                    noted, self._noted = self._noted, {}
                    if not noted:
                        self._writer.end_locked()  # a later note starts another
                        return
                _write(noted)
        finally:
            connection.close()  # this thread's own


def _write(noted: dict[int, _Noted]) -> None:
    """One statement run for every noted reply (psycopg sends them in one pipeline). Plain SQL:
    built by the ORM (a CASE branch per reply and field), the statement cost the writer a fifth of
    the web process's CPU with 200 answers streaming. A failed write is not retried: each turn notes
    its whole text again with its next piece, and its final save stores everything."""
    quote = connection.ops.quote_name
    fields = (cast(Field, Message._meta.get_field(name)) for name in ("content", "mode", "model", "status", "id"))
    content, mode, model, status, key = (quote(field.column or field.name) for field in fields)
    table = quote(Message._meta.db_table)
    # Only the model's own table and column names go in by formatting; every value is a parameter.
    sets = f"{content} = %s, {mode} = %s, {model} = %s, {status} = %s"
    sql = f"UPDATE {table} SET {sets} WHERE {key} = %s AND {status} IN (%s, %s)"  # noqa: S608
    streaming, pending = MessageStatus.STREAMING.value, MessageStatus.PENDING.value
    rows = [(n.text, n.mode, n.model, streaming, pk, pending, streaming) for pk, n in noted.items()]
    try:
        with connection.cursor() as cursor:
            cursor.executemany(sql, rows)
    except Exception:  # noqa: BLE001 — the final saves still store everything
        log.warning("Could not save the streamed text of %d chat replies", len(rows), exc_info=True)


_saves = _Saves()


def note(reply: Message, text: str) -> None:
    """The reply's text so far (and its mode and model); stored within about a second. Never
    waits for the database."""
    _saves.note(reply, text)


def forget(reply: Message) -> None:
    """Before the reply's final save: its noted text is not written any more."""
    _saves.forget(reply)
