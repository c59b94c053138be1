"""The agent loop: one chat turn, from the student's message to a stored, cited answer.

Synchronous on purpose (the `rag/` core is); the websocket and SSE edges run it in a worker
thread. Every edge hands the loop an `EventSink`, so all of them see the same events.

    start_turn()  checks (length, rate limit, one turn per chat), stores the question and an
                  empty reply, and returns a Turn; raises CurreChatError before anything is stored
    run_turn()    answers: with the language model and its document_search tool, or, when no
                  model is connected, extractively (the question is the search query and the
                  answer quotes the passages). Never raises: failures end as a failed message
                  and an `error` event.
"""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from access.rules import check_may_start_chat, current, get_prompt_for_chat, get_session_for_read
from chat.course.model_choice import choose_model, offers_choice, stored_choice
from chat.insight import answers as teacher_answers
from chat.insight import stats as insight
from chat.metering.usage import UsageMeter, reserve
from chat.models import (
    AnswerMode,
    ChatSession,
    Enrollment,
    Message,
    MessageRole,
    MessageStatus,
    SourcePolicy,
)
from chat.serializers import message_dict
from chat.turn import moderation, streamsave
from chat.turn.answering import Progress, TurnFailed, answer_extractively, answer_from_teacher, answer_with_model
from chat.turn.attachments import Attachment
from chat.turn.budget import MessageTooLong
from chat.turn.citations import map_citations
from chat.turn.events import ChatEventOut, ErrorEvent, EventSink
from chat.turn.limits import StopSignal, TurnLock, check_rate, holder_alive, token_age
from chat.turn.searchable import usable_collections
from chat.turn.state import Turn, TurnAbandoned, TurnStopped
from chat.turn.tools import SearchTool
from kernel import draining, metrics
from kernel.compiled import Compiled
from kernel.errors import Conflict, CurreChatError, Forbidden, ModelMissing, ProviderError, ServiceUnavailable
from kernel.formats import number
from kernel.records import UNSTORABLE_REFUSED, unstorable_text
from rag.providers import is_available, is_available_on_second_look

log = logging.getLogger(__name__)

# A turn lock younger than this may belong to a turn still storing its question; older, with no
# unfinished reply in the chat, its turn ended without releasing it (Redis was away at the end).
LOCK_GRACE_SECONDS = 15.0


def new_session(user, prompt_id: int) -> ChatSession:
    """A new chat with a prompt the user may chat with."""
    prompt = get_prompt_for_chat(user, prompt_id)
    check_may_start_chat(user, prompt)
    return ChatSession.objects.create(prompt=prompt, user=user, visibility=prompt.chat_visibility)


def stop_turn(user, session_id: int) -> None:
    """The chat's student stops the answer being written; its text so far is kept, marked stopped.
    Raises Conflict when no answer is being written."""
    user = current(user)
    session = get_session_for_read(user, session_id)
    if session.user_id != user.pk:
        raise Forbidden(_("Only the chat's student can stop its answers."))
    try:
        if not TurnLock(session.id).held():
            raise Conflict(_("Nothing is being answered in this chat."))
        StopSignal(session.id).request()
    except redis.RedisError as exc:
        # Redis away: the turn still stops if it runs in this process (the one serving the
        # student's socket); only a turn running elsewhere cannot be reached now.
        if not StopSignal(session.id).request_here():
            raise ServiceUnavailable(
                _("Stop could not reach the chat service (Redis); try again in a moment.")
            ) from exc


def start_turn(
    session: ChatSession,
    content: str | None,
    *,
    retry: bool = False,
    regenerate: bool = False,
    attachment: Attachment | None = None,
    model: str | None = None,
) -> Turn:
    """Check and store the student's message (and the text of a file attached to it). With
    `retry`, answer the last question again after a failed answer; with `regenerate`, whatever its
    answer was (the earlier answer stays in the chat). `model` is the student's choice of the
    prompt's models for this message and the chat's next ones (None: the chat's model)."""
    retry = retry or regenerate
    chosen = choose_model(session, model)  # refused before anything is stored or counted
    text = (content or "").strip()
    if attachment is not None and not text:
        text = f"(attached “{attachment.name}”)"
    if retry:
        question = _question_to_retry(session, answered=regenerate)
    else:
        if not text:
            raise CurreChatError(_("Write a message first."))
        if unstorable_text(text):  # the pages' and API's JSON are refused at the door; a socket's or a form's here
            raise CurreChatError(str(UNSTORABLE_REFUSED))
        if len(text) > settings.CHAT_MAX_MESSAGE_CHARS:
            raise MessageTooLong(
                _(
                    "Your message has %(length)s characters; the most is %(most)s. "
                    "Shorten it or split it into several questions."
                )
                % {"length": number(len(text)), "most": number(settings.CHAT_MAX_MESSAGE_CHARS)}
            )
    served = None if retry or attachment is not None else teacher_answers.answer_for(session.prompt_id, text)
    # Before the rate limit (a refusal costs no slot); given back if anything after it refuses. A
    # teacher's answer makes no model call: nothing is set aside, and a spent budget does not refuse it.
    meter = UsageMeter(session.user_id, session.prompt_id) if served else reserve(session.user_id, session.prompt)
    lock = TurnLock(session.id)
    try:
        check_rate(session.user_id)
        fail_orphaned_replies(session)
        lock.acquire(StopSignal(session.id))  # and a Stop sent before this turn is cleared
    except BaseException:
        meter.settle()
        raise
    try:
        with transaction.atomic():
            if not retry:
                question = Message.objects.create(session=session, role=MessageRole.USER, content=text)
                if attachment is not None:
                    question.attachment_name, question.attachment_text = attachment.name, attachment.text
                    question.attachment_pages = attachment.pages
                    question.save(update_fields=["attachment_name", "attachment_text", "attachment_pages"])
            reply = Message.objects.create(session=session, role=MessageRole.ASSISTANT, status=MessageStatus.PENDING)
            if not session.title:
                session.title = _title(question.content)
            session.model = stored_choice(session, chosen)
            session.save(update_fields=["title", "model", "updated"])
            enrolled = Enrollment.objects.filter(prompt_id=session.prompt_id, student_id=session.user_id)
            # A row (of any status) makes the chat a student's, as the statistics ask at its end.
            meter.student = bool(enrolled.update(last_active=timezone.now()))
    except BaseException:
        lock.release()
        meter.settle()
        raise
    return Turn(
        session=session, question=question, reply=reply, lock=lock, model=chosen, meter=meter, teacher_answer=served
    )


def _title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 60 else line[:57].rstrip() + "…"


def _question_to_retry(session: ChatSession, *, answered: bool = False) -> Message:
    last_question = session.messages.filter(role=MessageRole.USER).last()
    if last_question is None:
        raise CurreChatError(_("There is no question to retry in this chat."))
    later = session.messages.filter(role=MessageRole.ASSISTANT, id__gt=last_question.id)
    if not answered and later.filter(status=MessageStatus.COMPLETE).exists():
        raise CurreChatError(_("The last question already has an answer; only a failed answer can be retried."))
    return last_question


UNFINISHED = [MessageStatus.PENDING, MessageStatus.STREAMING]
# Asked on every question: its SQL is compiled once (kernel/compiled.py), the rows read afresh.
_UNFINISHED = Compiled(
    lambda chat: Message.objects.filter(session_id=chat, role=MessageRole.ASSISTANT, status__in=UNFINISHED).values_list(
        "id"
    ),
    int,
)
ORPHANED = gettext_lazy("The server stopped before this answer was finished. Ask again or retry.")


def fail_orphaned_replies(session: ChatSession) -> None:
    """Mark answers left unfinished by a crashed or restarted server as failed (keeping the text
    they had streamed), and free a chat whose turn lock has no turn behind it any more.

    A reply is written while its chat's turn lock is held by a live process. The lock is broken
    when its holder is gone, or when it outlived its turn (no unfinished reply, and older than
    LOCK_GRACE_SECONDS: Redis was away when the turn tried to release it). Ids are read before the
    lock is checked, and the update re-checks the status, so a turn that starts or finishes
    meanwhile is never touched.
    """
    ids = [row[0] for row in _UNFINISHED.rows(session.id)]
    lock = TurnLock(session.id)
    token = lock.current()
    if token is not None and (not holder_alive(token) or (not ids and token_age(token) > LOCK_GRACE_SECONDS)):
        if lock.break_stale(token):
            log.warning("Chat %s: broke the turn lock of a turn that is gone (%s)", session.id, token)
        token = lock.current()
    if ids and token is None:
        Message.objects.filter(id__in=ids, status__in=UNFINISHED).update(
            status=MessageStatus.FAILED, error=str(ORPHANED)
        )


def run_turn(turn: Turn, sink: EventSink) -> Message:
    """Answer the turn's question, emitting events to `sink`; returns the stored reply.

    The last event (`message_done` or `error`) goes out only after everything of the turn is
    stored and its lock released: a client that hears it may at once read the chat or ask again."""
    with translation.override(turn.language), draining.running_turn():
        return _run_turn(turn, sink)


def _run_turn(turn: Turn, sink: EventSink) -> Message:
    reply, progress = turn.reply, Progress()
    final: ChatEventOut
    try:
        if turn.teacher_answer is not None:
            answer_from_teacher(turn, progress, sink)
        else:
            _answer(turn, progress, sink)
        _finish(reply, progress, MessageStatus.COMPLETE, turn.meter)
        final = {"type": "message_done", "message": message_dict(reply)}
    except TurnStopped:
        _finish(reply, progress, MessageStatus.STOPPED, turn.meter)
        log.info("Chat turn %s stopped by the student", reply.id)
        final = {"type": "message_done", "message": message_dict(reply)}
    except TurnAbandoned:
        final = _fail(turn, progress, TurnFailed(str(ORPHANED)))
    except ProviderError as exc:
        # The provider's sentence names the server and repeats its words (and, for a model gone
        # after the availability check, its "ollama pull" advice): for the logs. The student is
        # told what happened in plain language, in their language. A model gone may be back, or
        # another chosen, so Retry is offered for it too.
        retryable = exc.retryable or isinstance(exc, ModelMissing)
        plain = TurnFailed(_model_failed(exc, turn), code=exc.code, retryable=retryable)
        final = _fail(turn, progress, plain, detail=exc)
    except (TurnFailed, MessageTooLong) as exc:
        final = _fail(turn, progress, exc)
    except Exception as exc:  # noqa: BLE001  (the turn's boundary: log it, store it failed, tell the student)
        log.exception("Chat turn %s failed", reply.id)
        final = _fail(turn, progress, TurnFailed(_("Something went wrong while answering. Try again.")), detail=exc)
    finally:
        turn.meter.settle()  # what the turn held and did not use goes back to the budgets
        _mirror_usage(turn)
        turn.stop.forget_here()
        turn.lock.release()
    sink.emit(final)
    return reply


def _answer(turn: Turn, progress: Progress, sink: EventSink) -> None:
    prompt = turn.session.prompt
    # Only the collections a teacher of the prompt may still use (co-ownership can end).
    searchable = [] if prompt.source_policy == SourcePolicy.NO_SEARCH else usable_collections(prompt)
    tool = SearchTool(
        searchable, curate=prompt.curation_enabled, results_budget=0, usage=turn.meter, question=turn.question.content
    )
    if moderation.screen_question(turn, progress, sink):  # flagged: a caring answer, no model turn
        return
    # A single failed look at the model list (the model server slow for a moment, a kept
    # failure of the last few seconds) must not make this answer quotes: one fresh look first.
    if is_available_on_second_look(turn.model):
        answer_with_model(turn, tool, progress, sink)
        moderation.screen_answer(turn, progress, sink)
    else:
        tool.curate = prompt.curation_enabled and is_available(settings.CURATION_MODEL)
        answer_extractively(turn, tool, progress, sink)


def _model_failed(exc: ProviderError, turn: Turn) -> str:
    """What a student reads when the model server failed, by the kind of failure."""
    if exc.reason == "missing" and offers_choice(turn.session.prompt):
        return _("The assistant is not available with this model right now. Choose another model, or try again later.")
    if exc.reason == "timeout":
        return _("The assistant took too long to answer. Try again in a minute.")
    if exc.reason in ("unreachable", "missing"):
        return _("The assistant is not available right now. Try again in a few minutes.")
    if exc.reason == "unreadable":
        return _("The assistant's answer could not be read. Try again.")
    if exc.reason == "cut":
        return _("The assistant stopped before the answer was finished. Try again.")
    if exc.retryable:
        return _("The assistant could not answer this time. Try again in a minute.")
    return _("The assistant cannot answer this question. Tell your teacher if it keeps happening.")


def _mirror_usage(turn: Turn) -> None:
    metrics.TURNS.labels(status=turn.reply.status, mode=turn.reply.mode).inc()
    try:
        turn.meter.flush()
    except Exception:  # noqa: BLE001  (statistics only: the budget counters in Redis are already right)
        log.exception("Could not store the token usage of chat turn %s", turn.reply.id)


# What a turn writes on its reply (here and as it answers: answering.py, moderation.py): not its
# chat, role, time or attachment, set when it was created. Fewer columns to write on every answer.
_ANSWER_FIELDS = [
    "content", "tool_calls", "tool_results", "citations", "token_usage", "status", "error",
    "model", "mode", "guard", "teacher_answer",
]  # fmt: skip


def _finish(reply: Message, progress: Progress, status: str, meter: UsageMeter) -> None:
    streamsave.forget(reply)  # no streamed write after this final one
    reply.content = progress.text
    reply.tool_calls = progress.tool_calls
    reply.tool_results = progress.tool_results
    reply.citations = map_citations(progress.text, progress.passages)
    if reply.mode == AnswerMode.TEACHER and not reply.citations:  # a teacher's sources, cited or not
        reply.citations = list(progress.passages.values())
    reply.token_usage = progress.usage
    reply.status = status
    reply.save(update_fields=_ANSWER_FIELDS)
    # Teachers' statistics and material gaps; never raises. Whether the chat is a student's was
    # read at the turn's start (`start_turn`), and the turn's tokens go into today's row with its
    # counts, in one write: the token meter's flush (the turn's next step) leaves them out.
    today = timezone.localdate(reply.created) == timezone.localdate()
    tokens = meter.unflushed_tokens() if today else 0
    meter.student = insight.record_answer(reply, tokens=tokens, student=meter.student)
    if meter.student:
        meter.counted_in_statistics(tokens)


def _fail(turn: Turn, progress: Progress, exc: Exception, detail=None) -> ErrorEvent:
    """Store the reply as failed (never complete); the `error` event that ends the turn."""
    reply = turn.reply
    log.info("Chat turn %s failed: %s", reply.id, detail or exc)
    failure = detail if isinstance(detail, ProviderError) else exc
    if isinstance(failure, ProviderError):
        metrics.MODEL_ERRORS.labels(retryable=str(failure.retryable).lower()).inc()
    reply.error = str(exc)
    try:
        _finish(reply, progress, MessageStatus.FAILED, turn.meter)
    except Exception:  # noqa: BLE001  (the database failed too: still tell the student; a read marks it later)
        log.exception("Could not store failed chat turn %s", reply.id)
    code = exc.code if isinstance(exc, CurreChatError) else "model_failed"
    retryable = exc.retryable if isinstance(exc, CurreChatError) else True
    return {"type": "error", "message_id": reply.id, "code": code, "detail": str(exc), "retryable": retryable}
