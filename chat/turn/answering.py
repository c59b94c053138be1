"""How a turn's answer is made: rounds of the chat model, each tool call a search (or, without a
chat model, an extractive answer); the reply's text is streamed to the sink and saved as it grows."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.translation import gettext as _

from chat.insight import safety
from chat.insight.answers import note_served
from chat.models import AnswerMode, Guarded, Message, MessageRole, MessageStatus
from chat.turn import grounding, streamsave, tutor
from chat.turn.attachments import model_text as attachment_model_text
from chat.turn.budget import Budget, context_window, fit_history, message_tokens, tools_tokens
from chat.turn.events import EventSink, PassageView, ToolResultEvent
from chat.turn.extractive import extractive_answer
from chat.turn.leakguard import Leak
from chat.turn.tools import TOOL_NAME, SearchTool, ToolOutcome, parse_query
from kernel.compiled import Compiled
from kernel.errors import CurreChatError
from kernel.rendering import strip_citations
from rag.providers import ChatMessage, Done, TextDelta, ToolCall, get_chat_model
from rag.providers.base import ToolCallEvent

if TYPE_CHECKING:
    from chat.turn.leakguard import StreamGuard
    from chat.turn.state import Turn

log = logging.getLogger(__name__)

ROUND_SEPARATOR = "\n\n"


class TurnFailed(CurreChatError):
    """The turn ended without an answer; `code` goes into the `error` event."""

    def __init__(self, message: str, *, code: str = "model_failed", retryable: bool = True):
        super().__init__(message)
        self.code = code
        self.retryable = retryable


_thread_models = threading.local()


@dataclass
class Progress:
    """What the turn has produced so far; written to the reply message as it grows."""

    text: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    tool_results: list[dict] = field(default_factory=list)
    passages: dict[int, PassageView] = field(default_factory=dict)
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "rounds": 0})


def emit_text(reply: Message, progress: Progress, text: str, sink: EventSink) -> None:
    """Stream a piece of the answer (from the turn's thread, or from the model-stream reader)."""
    progress.text += text
    sink.emit({"type": "token", "message_id": reply.id, "text": text})
    if reply.pk is not None:  # an answer check's reply (chat/checks/play.py) is in no chat: never stored
        streamsave.note(reply, progress.text)  # after the token: a write never delays what the student sees


def as_model_reads(question: Message) -> str:
    """A student's message with the text of its attachment, if any."""
    if not question.attachment_name:
        return question.content
    return attachment_model_text(question.content, question.attachment_name, question.attachment_text)


# Read on every question: its SQL is compiled once (kernel/compiled.py), the rows read afresh.
_EARLIER = Compiled(
    lambda chat, question: (
        Message.objects.filter(session_id=chat, id__lt=question)
        .order_by("id")
        .only("session", "role", "status", "content", "attachment_name", "attachment_text")
    ),
    int,
    int,
)


def history(turn: Turn) -> list[ChatMessage]:
    """Earlier exchanges that got a complete answer, oldest first.

    Old answers lose their [n] markers: those numbers point at an earlier turn's passages, and
    the model must not cite them as if they were this turn's search results.
    """
    # Only what the model reads: not the answers' tool results, citations and usage, whose JSON
    # decoding cost more CPU than the rest of the read in a long chat (issue 44).
    if turn.session.id is None:  # an answer check's question, in no chat (chat/checks/play.py)
        return []
    messages = _EARLIER.objects(turn.session.id, turn.question.id)
    history: list[ChatMessage] = []
    pending: Message | None = None
    for message in messages:
        if message.role == MessageRole.USER:
            pending = message
        elif pending is not None and message.status == MessageStatus.COMPLETE and message.content:
            history.append(ChatMessage(role="user", content=as_model_reads(pending)))
            history.append(ChatMessage(role="assistant", content=strip_citations(message.content)))
            pending = None
    return history


def chat_model_named(name: str):
    """The chat model, kept per worker thread: its HTTP client keeps the connection to the model
    server alive between turns, and no two concurrent turns share one client's connection pool."""
    key = (name, settings.OLLAMA_HOST, settings.OLLAMA_TIMEOUT, settings.OPENAI_BASE_URL)
    models = _thread_models.__dict__.setdefault("by_key", {})
    if key not in models:
        models[key] = get_chat_model(name)
    return models[key]


def answer_with_model(turn: Turn, tool: SearchTool, progress: Progress, sink: EventSink) -> None:
    prompt = turn.session.prompt
    model = chat_model_named(turn.model)
    # Kept in memory until the reply is next saved: a write here would delay the first token. The
    # name as the prompt lists it (`openai:...` too): the chat shows which of its models answered.
    turn.reply.model, turn.reply.mode, turn.reply.status = turn.model, AnswerMode.MODEL, MessageStatus.STREAMING
    specs = [tool.spec()] if tool.offered else []
    window = context_window(model)
    budget = Budget.plan(window, has_tool=bool(specs))
    tool.tokens_left = budget.results
    rules = grounding.system_message(prompt.system_prompt, has_tool=bool(specs)) + tutor.system_part(prompt)
    system = ChatMessage(role="system", content=rules)
    current = ChatMessage(role="user", content=as_model_reads(turn.question))
    messages = fit_history(system, history(turn), current, budget, tools_tokens(specs))
    # What the conversation leaves free of the window: the number of passages per search follows it.
    used = sum(message_tokens(m) for m in messages) + tools_tokens(specs)
    tool.context_free = window - budget.answer - used
    ModelLoop(turn, model, specs, tool, progress, sink, window).run(messages)


class ModelLoop:
    """Model rounds until the model answers without calling a tool.

    The hard limit: after CHAT_MAX_TOOL_ROUNDS rounds that called tools, one last round is run
    without offering any tool, so the model must answer with what it has.
    """

    def __init__(self, turn: Turn, model, specs, tool: SearchTool, progress: Progress, sink: EventSink, window: int):
        self.turn, self.model, self.specs, self.tool = turn, model, specs, tool
        self.progress, self.sink = progress, sink
        self.options: dict = {"num_ctx": window}  # Ollama would otherwise cut the prompt to its small default
        if turn.session.prompt.temperature is not None:
            self.options["temperature"] = turn.session.prompt.temperature
        # A guided prompt's rounds pass the leak guard; what the student wrote is theirs to read.
        self.protected = tutor.protection(turn.session.prompt)
        self.students_text = tutor.students_text(turn.question) if self.protected else []

    def run(self, messages: list[ChatMessage]) -> None:
        limit = settings.CHAT_MAX_TOOL_ROUNDS
        for round_no in range(limit + 1):
            last = round_no == limit
            if last:
                messages.append(ChatMessage(role="system", content=grounding.LIMIT_NOTE))
            start = len(self.progress.text)
            try:
                calls = self._round(messages, () if last else self.specs)
            except Leak as leak:
                calls = LeakRetry(self, start).after(leak, messages, () if last else self.specs)
            said = self.progress.text[start:].removeprefix(ROUND_SEPARATOR)
            if not calls or last:
                if not said.strip():
                    if calls:
                        failure = _("The model kept searching and gave no answer after %(limit)s rounds. Try again.")
                        raise TurnFailed(failure % {"limit": limit})
                    raise TurnFailed(_("The model gave an empty answer. Try again."))
                return
            messages.append(ChatMessage(role="assistant", content=said, tool_calls=tuple(calls)))
            for call in calls:
                self.turn.check_stop()
                outcome = run_tool(self.turn.reply, self.tool, call, self.progress, self.sink)
                messages.append(ChatMessage(role="tool", content=outcome.model_text, tool_name=call.name))

    def _round(self, messages: list[ChatMessage], specs) -> list[ToolCall]:
        """One model call, its text streamed as `token` events. Returns the tool calls it made.

        The text goes out from the process's model-stream reader as it arrives (`_Text`): this
        thread sleeps until the round ends, and wakes only for a tool call, the round's end, or to
        check Stop while the model is silent (`Waiting`)."""
        calls: list[ToolCall] = []
        allowed = self.students_text + [p["text"] for p in self.progress.passages.values()]
        text = _Text(self, tutor.round_guard(self.protected, allowed))
        stream = self.model.stream(messages, tools=specs, options=self.options, on_text=text)
        try:
            for event in stream:
                self.turn.check_stop()
                if isinstance(event, TextDelta):  # a provider that hands the text back after all
                    text(event.text)
                elif isinstance(event, ToolCallEvent):
                    calls.append(event.call)
                elif isinstance(event, Done):
                    self.progress.usage["prompt_tokens"] += event.prompt_tokens
                    self.progress.usage["completion_tokens"] += event.completion_tokens
                    self.progress.usage["rounds"] += 1
                    self.turn.meter(event.prompt_tokens, event.completion_tokens, self.turn.model)
            text.end()
        finally:
            # On Stop (or any failure) the model request ends now: closing the stream closes its
            # HTTP response, so the model server sees the connection go and stops generating; and
            # no more of its text reaches the student or the reply.
            stream.close()
        return calls


class _Text:
    """A round's text as it arrives, on the model-stream reader's thread (`ChatModel.stream`'s
    `on_text`): checked against Stop, then streamed to the sink and noted for saving. Never waits:
    every answer of the process is read by that one thread."""

    def __init__(self, loop: ModelLoop, guard: StreamGuard | None = None):
        self.loop, self.started, self.guard = loop, False, guard

    def __call__(self, text: str) -> None:
        if not text:
            return
        self.loop.turn.check_stop()  # raises: the stream ends, and the turn's thread raises it in turn
        if self.guard is not None:
            text = self.guard.push(text)  # raises Leak: the stream ends, none of its words sent
        self._send(text)

    def end(self) -> None:
        """The round's stream ended: the words the guard held back are checked and sent."""
        if self.guard is not None:
            self._send(self.guard.flush())

    def _send(self, text: str) -> None:
        if not text:
            return
        turn, progress, sink = self.loop.turn, self.loop.progress, self.loop.sink
        if not self.started and progress.text:
            # An earlier round said something already: this round's text starts a new paragraph.
            emit_text(turn.reply, progress, ROUND_SEPARATOR, sink)
        self.started = True
        emit_text(turn.reply, progress, text, sink)


class LeakRetry:
    """A round whose text would have given protected material away (tutor mode): none of its
    leaking words reached the student. What it did send is taken back (a `retract` event), and the
    round is asked once more with an instruction to give a hint instead; if that leaks too, the
    student reads a sentence that the assistant cannot give the solution, with an offer of a hint."""

    def __init__(self, loop: ModelLoop, start: int):
        self.loop, self.start = loop, start

    def after(self, leak: Leak, messages: list[ChatMessage], specs) -> list[ToolCall]:
        loop, reply = self.loop, self.loop.turn.reply
        log.info("Leak guard: answer %s asked again (%s)", reply.id, leak.kind)
        self._retract()
        messages.append(ChatMessage(role="system", content=tutor.REWRITE_NOTE))
        try:
            calls = loop._round(messages, specs)
        except Leak as again:
            log.info("Leak guard: answer %s withheld (%s)", reply.id, again.kind)
            self._retract()
            reply.guard = Guarded.WITHHELD
            safety.count(reply, "leak_withheld")
            if loop.progress.text:
                emit_text(reply, loop.progress, ROUND_SEPARATOR, loop.sink)
            emit_text(reply, loop.progress, tutor.withheld_sentence(), loop.sink)
            return []
        reply.guard = Guarded.REWRITTEN
        safety.count(reply, "leak_rewritten")
        return calls

    def _retract(self) -> None:
        """Back to the text before the round, for the student's page and the stored reply."""
        progress, reply = self.loop.progress, self.loop.turn.reply
        progress.text = progress.text[: self.start]
        self.loop.sink.emit({"type": "retract", "message_id": reply.id, "text": progress.text})
        if reply.pk is not None:
            streamsave.note(reply, progress.text)


def run_tool(reply: Message, tool: SearchTool, call: ToolCall, progress: Progress, sink: EventSink) -> ToolOutcome:
    """Show the search, run it, show and store its results."""
    query, _ = parse_query(call, tool.offered)
    progress.tool_calls.append({"id": call.id, "name": call.name, "arguments": call.arguments, "query": query})
    sink.emit(
        {
            "type": "tool_call",
            "message_id": reply.id,
            "call_id": call.id,
            "name": call.name,
            "query": query,
            "arguments": call.arguments,
        }
    )
    outcome = tool.run(call)
    for passage in outcome.passages:
        progress.passages[passage["n"]] = passage
    progress.tool_results.append(outcome.record())
    reply.tool_calls, reply.tool_results = progress.tool_calls, progress.tool_results
    if reply.pk is not None:
        reply.save(update_fields=["tool_calls", "tool_results", "status", "mode", "model"])
    sink.emit(
        ToolResultEvent(
            type="tool_result",
            message_id=reply.id,
            call_id=call.id,
            query=outcome.query,
            status=outcome.status,
            error=outcome.error,
            passages=outcome.passages,
        )
    )
    return outcome


def answer_from_teacher(turn: Turn, progress: Progress, sink: EventSink) -> None:
    """The teacher's own answer to this question, with its sources: no model, no search."""
    answer = turn.teacher_answer
    assert answer is not None
    turn.reply.mode, turn.reply.status, turn.reply.model = AnswerMode.TEACHER, MessageStatus.STREAMING, ""
    turn.reply.teacher_answer = answer
    progress.passages = {source["n"]: source for source in answer.sources}
    if answer.sources:
        # Stored as a result, as a search's passages are: the student may open the cited pages.
        progress.tool_results.append({"tool_call_id": "teacher", "passages": list(answer.sources)})
    emit_text(turn.reply, progress, answer.answer, sink)
    note_served(answer)


def answer_extractively(turn: Turn, tool: SearchTool, progress: Progress, sink: EventSink) -> None:
    """No language model: the question is the search query; the answer quotes what was found."""
    turn.reply.mode, turn.reply.status, turn.reply.model = AnswerMode.EXTRACTIVE, MessageStatus.STREAMING, ""
    outcome = None
    if tool.offered:
        tool.tokens_left = 10**9  # no model context to fit: every curated passage is shown
        call = ToolCall(id="extractive", name=TOOL_NAME, arguments={"query": turn.question.content})
        outcome = run_tool(turn.reply, tool, call, progress, sink)
    emit_text(turn.reply, progress, extractive_answer(outcome, offered=tool.offered), sink)
