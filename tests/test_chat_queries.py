"""The SQL queries of one chat turn, counted and pinned: an added query fails here first.

A question's own server CPU is mostly the queries it makes (building them, running them, reading
their rows), before the model is called and after its answer (issue 44, docs/BENCHMARKS.md).
"""

from __future__ import annotations

import threading

import pytest
from django.db.backends.utils import CursorWrapper

from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn

pytestmark = pytest.mark.django_db(transaction=True)


class QueryLog:
    """Every statement run on any connection of any thread. A turn's queries run in pool threads
    whose connections outlive a test (CONN_MAX_AGE), so neither a per-thread CaptureQueriesContext
    nor a `connection_created` hook sees them all: the wrapper is installed where every
    connection's cursor runs its statements."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.statements: list[str] = []
        self.at_model_call: int | None = None

    def install(self, monkeypatch) -> None:
        original = getattr(CursorWrapper, "_execute_with_wrappers")  # noqa: B009  (private: no stub)
        log = self

        def counted(cursor, sql, params, many, executor):
            # A transaction's BEGIN (IMMEDIATE) is a statement of its own on SQLite only (PostgreSQL's driver opens
            # it inside the next statement): leave it out, so both databases count the same work.
            if not sql.lstrip().upper().startswith("BEGIN"):
                with log.lock:
                    log.statements.append(sql)
            return original(cursor, sql, params, many, executor)

        monkeypatch.setattr(CursorWrapper, "_execute_with_wrappers", counted)

    def mark_model_call(self) -> None:
        with self.lock:
            self.at_model_call = len(self.statements)

    def reset(self) -> None:
        with self.lock:
            self.statements, self.at_model_call = [], None


async def _ask(ws, ollama, log: QueryLog, question: str) -> tuple[list[str], list[str]]:
    """One question answered by the model: the statements before its call and after its answer."""

    def respond(body: dict) -> Reply:
        log.mark_model_call()
        return Reply(content="An answer.")

    ollama.script(respond)
    log.reset()
    await ws.send_json_to({"type": "user_message", "content": question})
    events = await receive_turn(ws)
    assert events[-1]["type"] == "message_done", events[-1]
    with log.lock:
        assert log.at_model_call is not None
        return log.statements[: log.at_model_call], log.statements[log.at_model_call :]


async def test_a_question_makes_a_fixed_number_of_queries(student, session, ollama, monkeypatch):
    log = QueryLog()
    log.install(monkeypatch)
    ws, connected, _ = await connect_ws(student, session.id)
    assert connected
    _, first_after = await _ask(ws, ollama, log, "What is a mean?")  # the chat's first question
    before, after = await _ask(ws, ollama, log, "And a median?")  # a chat going on: the usual case
    await ws.disconnect()
    listing = "\n".join(["before the model:", *before, "after the answer:", *after])
    # Before the model is called, in the turn's one thread hop (chat/turn/runner.py, agent.start_turn):
    #  1 the browser session, 2 its user (signed in still: kernel/sessions.signed_in; the same user
    #    is the one the permission check judges), 3 the chat with its prompt, 4 the student's
    #    enrollment (enrolled still: their own chat is theirs to write in; access/rules.py),
    #  5 a teacher's answer to this question, 6 the student's budget override,
    #  7 replies left unfinished by a crash, then in one transaction (its BEGIN and COMMIT not
    #  counted) 8 the question, 9 the empty reply, 10 the chat's title/model/updated, 11 the
    #    enrollment's last activity (the rows it updates also tell the statistics at the end that
    #    this is a student's chat),
    #  12 the prompt's collections its teachers may still use (its SQL compiled once per process,
    #    run afresh every turn: chat/turn/searchable.py), 13 the chat's history for the model.
    #  (A student's "do they teach it?" makes no query: they cannot, Prompt.is_taught_by.)
    #  (3-7 and 13, and 2 after the answer, run SQL the ORM compiled once: kernel/compiled.py.)
    assert len(before) == 13, listing
    # After the answer: 1 the reply saved, then the teachers' statistics (chat/insight/stats.py; a
    #  student's chat, as the turn's start found, not asked again by them or the token meter):
    #  2 the question and earlier answers, 3 today's counts with the turn's tokens (one UPDATE: no
    #  transaction for an answer without sources or gaps); then the token meter
    #  (chat/metering/usage.py): 4 the week's tokens (today's went with the counts; one UPDATE: no
    #  transaction).
    assert len(after) == 4, listing
    # The student's first question of the week (and the prompt's first of the day): the same, but
    # today's counts have no row yet (their UPDATE finds none, then a read, an INSERT and the UPDATE
    # again, chat/models/days.py) and the week's tokens are one INSERT with the figures after their
    # UPDATE found no row (not a read, an empty row and another UPDATE).
    assert len(first_after) == 8, "\n".join(first_after)


async def test_a_chat_socket_opens_with_a_fixed_number_of_queries(student, session, monkeypatch):
    from channels.db import database_sync_to_async
    from django.test import Client

    from tests.websockets import open_websocket

    browser = Client()
    await database_sync_to_async(browser.force_login)(student)
    log = QueryLog()
    log.install(monkeypatch)
    ws, connected, _ = await open_websocket(student, f"/ws/chats/{session.id}/", client=browser)
    assert connected
    with log.lock:
        listing = "\n".join(log.statements)
        count = len(log.statements)
    await ws.disconnect()
    # Every chat page opens one (issue 44): 1 the browser session, 2 its user (channels'
    # AuthMiddleware), 3 the chat with its prompt if the user may read it (access/rules.py
    # get_session_for_read: one query; a refusal reads the chat once more to say why).
    assert count == 3, listing


@pytest.mark.django_db
def test_the_collections_a_turn_searches_follow_every_change_at_once(owner, co_owner, other_teacher, collection):
    """The turn's compiled query (chat/turn/searchable.py) says what `Prompt.usable_collections`
    says, on the next call after each change: nothing of a prompt is kept between turns."""
    from accounts.models import Role
    from chat.models import Prompt
    from chat.turn.searchable import usable_collections
    from collections_app.models import Collection

    theirs = Collection.objects.create(name="Otto's notes", language="english", owner=other_teacher)
    prompt = Prompt.objects.create(owner=co_owner, name="Cora's course")
    prompt.collections.add(collection, theirs)

    def searched() -> list[str]:
        prompt.refresh_from_db()
        assert usable_collections(prompt) == list(prompt.usable_collections())  # same rows, same order
        return [c.name for c in usable_collections(prompt)]

    assert searched() == ["Statistics 101"]  # Cora co-owns it; Otto's is nobody's here
    prompt.co_teachers.add(other_teacher)
    assert searched() == ["Otto's notes", "Statistics 101"]
    collection.co_owners.remove(co_owner)  # co-ownership ended
    assert searched() == ["Otto's notes"]
    other_teacher.role = Role.STUDENT  # demoted: he teaches nothing any more
    other_teacher.save()
    assert searched() == []
    prompt.collections.remove(theirs)
    collection.co_owners.add(co_owner)
    assert searched() == ["Statistics 101"]
    co_owner.is_active = False  # the prompt's only teacher deactivated
    co_owner.save()
    assert searched() == []


@pytest.mark.django_db
def test_the_compiled_queries_of_a_question_read_what_the_orm_reads(session, student):
    """Every compiled query of a question (kernel/compiled.py) gives the rows its queryset gives,
    and sees each change at once: it keeps the SQL, never the rows."""
    from access.rules import _CHAT_WITH_PROMPT, _ENROLLED
    from chat.insight.answers import answer_for, save_answer
    from chat.insight.stats import _LAST_BEFORE
    from chat.metering.usage import budget_for
    from chat.models import BudgetOverride, Enrollment, EnrollmentStatus, Message, MessageRole, MessageStatus
    from chat.turn.agent import _UNFINISHED
    from chat.turn.answering import _EARLIER

    prompt = session.prompt
    read = _CHAT_WITH_PROMPT.first(str(session.pk))  # as a URL gives it
    assert read is not None
    assert (read, read.prompt, read.prompt.name) == (session, prompt, prompt.name)
    assert _CHAT_WITH_PROMPT.first(session.pk + 1000) is None
    assert _ENROLLED.first(prompt.pk, student.pk) == Enrollment.objects.get(prompt=prompt, student=student)
    Enrollment.objects.filter(prompt=prompt, student=student).update(status=EnrollmentStatus.REMOVED)
    assert _ENROLLED.first(prompt.pk, student.pk) is None  # removed: seen by the next message
    assert budget_for(prompt, student.pk) == (prompt.weekly_token_budget, False)
    BudgetOverride.objects.create(prompt=prompt, user=student, weekly_token_budget=1234)
    assert budget_for(prompt, student.pk) == (1234, False)
    assert answer_for(prompt.pk, "When is the exam?") is None
    made = save_answer(prompt, prompt.owner, question="When is the exam?", answer="On Friday.")
    assert answer_for(prompt.pk, "  when is the EXAM ") == made

    question = Message.objects.create(session=session, role=MessageRole.USER, content="Mean?")
    reply = Message.objects.create(session=session, role=MessageRole.ASSISTANT, status=MessageStatus.PENDING)
    later = Message.objects.create(session=session, role=MessageRole.USER, content="Median?")
    assert _UNFINISHED.rows(session.pk) == [(reply.pk,)]
    earlier = _EARLIER.objects(session.pk, later.pk)
    assert earlier == [question, reply] and [m.content for m in earlier] == ["Mean?", ""]
    fields = ("session", "role", "status", "content", "attachment_name", "attachment_text")
    orm = session.messages.filter(id__lt=later.pk).order_by("id").only(*fields)
    assert [m.get_deferred_fields() for m in earlier] == [m.get_deferred_fields() for m in orm]  # read as `only`
    assert _LAST_BEFORE.rows(session.pk, question.pk) == []  # the chat's first message: nothing before
    assert _LAST_BEFORE.rows(session.pk, later.pk) == [(question.pk, reply.pk)]
