"""How each protocol's streamed reply is read, line by line (`streams.Decoder`): Ollama's NDJSON lines
(`OllamaLines`) and the OpenAI protocol's server-sent events (`OpenAIEvents`).

Run on the process's model-stream reader for every token of every answer, so the common line (a
token and nothing else) takes the shortest way; any other line is checked part by part.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.utils.translation import gettext_lazy

from rag.providers import failures
from rag.providers.base import ChatEvent, Done, TextDelta, ToolCall, ToolCallEvent
from rag.providers.failures import UnreadableLines


def loads(raw: str) -> Any:
    """One line's JSON: orjson (about 4x faster than the standard library, per token), and the
    standard library for what orjson refuses (NaN, numbers past 64 bits). Raises ValueError."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


@dataclass(frozen=True)
class _Part:
    """One line of `/api/chat`'s stream, as far as we use it."""

    text: str
    calls: tuple[ToolCall, ...]
    done: bool
    prompt_tokens: int
    completion_tokens: int


def _part(line: dict[str, Any]) -> _Part | None:
    """The line's content, or None when it is not shaped like a chat part at all."""
    message = line.get("message") or {}
    if not isinstance(message, dict) or not isinstance(line.get("done", False), bool):
        return None
    text = message.get("content") or ""
    raw_calls = message.get("tool_calls") or []
    if not isinstance(text, str) or not isinstance(raw_calls, list):
        return None
    calls = []
    for raw in raw_calls:
        function = raw.get("function") if isinstance(raw, dict) else None
        if not isinstance(function, dict):
            return None
        call_id = raw.get("id") if isinstance(raw.get("id"), str) and raw.get("id") else uuid.uuid4().hex[:12]
        calls.append(ToolCall.from_wire(call_id, str(function.get("name") or ""), function.get("arguments")))
    counts = [line.get(key) for key in ("prompt_eval_count", "eval_count")]
    prompt_tokens, completion_tokens = (n if isinstance(n, int) else 0 for n in counts)
    return _Part(text, tuple(calls), bool(line.get("done")), prompt_tokens, completion_tokens)


def _plain_text(line: Any) -> str | None:
    """The text of a line that holds only text (no tool calls, not the last line), else None."""
    if type(line) is not dict or line.get("done") is not False or "error" in line:
        return None
    message = line.get("message")
    if type(message) is not dict or message.get("tool_calls"):
        return None
    text = message.get("content")
    return text if type(text) is str else None


# What a reply of too many unreadable lines ends with, for each protocol (`UnreadableLines`).
NOT_OLLAMA = gettext_lazy(
    "The model server at %(host)s sent replies that could not be read; it may not be an Ollama "
    "server, or a proxy in between changed them. Try again, or ask an administrator to check "
    "OLLAMA_HOST."
)


class OllamaLines:
    """Our events from the lines of one `/api/chat` reply (a `streams.Decoder`); raises ProviderError
    when the server reports an error or the reply ends before `done`.

    A line that is not a chat part is skipped and logged, and the reply goes on. NDJSON lines stand
    alone, so one bad line does not spoil the next; Ollama sends a token or a tool call per line, so
    skipping one costs a word (or a call the model is then asked to repeat), while ending the reply
    would throw away an answer the student is already reading and cost a whole new generation.
    More than MAX_UNREADABLE_LINES bad lines mean the other end is not an Ollama stream at all (a
    proxy's error page, the wrong port): that reply ends with a sentence saying to try again."""

    def __init__(self, host: str):
        self.finished = False
        self.calls: list[ToolCall] = []
        self.unreadable = UnreadableLines(host, NOT_OLLAMA)

    def line(self, raw: str) -> list[ChatEvent]:
        if not raw.strip():
            return []
        try:
            line = loads(raw)
        except ValueError:
            line = None
        text = _plain_text(line)
        if text is not None:  # most lines: a token and nothing else
            return [TextDelta(text)] if text else []
        if isinstance(line, dict) and line.get("error"):
            raise failures.failed(line["error"])
        part = _part(line) if isinstance(line, dict) else None
        if part is None:
            self.unreadable.skip(raw)
            return []
        events: list[ChatEvent] = [TextDelta(part.text)] if part.text else []
        for call in part.calls:
            self.calls.append(call)
            events.append(ToolCallEvent(call))
        if part.done:
            self.finished = True
            events.append(Done(part.prompt_tokens, part.completion_tokens, tuple(self.calls)))
        return events

    def end(self) -> list[ChatEvent]:
        if not self.finished:
            # A stream that ends without `done` was cut off: never pass it off as a complete answer.
            raise failures.cut()
        return []


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def call(self, index: int) -> ToolCall:
        # Text that is not JSON (or not an object) becomes the call's `problem`: the tool says
        # what is wrong with it, so the model can try again (as for Ollama: one parser in base.py).
        return ToolCall.from_wire(self.id or f"call_{index}", self.name, "".join(self.arguments))


NOT_OPENAI = gettext_lazy(
    "The model server at %(host)s sent replies that could not be read; it may not be an "
    "OpenAI-compatible server, or a proxy in between changed them. Try again, or ask an "
    "administrator to check OPENAI_BASE_URL."
)


class OpenAIEvents:
    """Our events from the server-sent events of one chat-completion stream (a `streams.Decoder`);
    raises ProviderError when the server reports an error or the stream ends without a finish
    reason. An event's `data:` lines are joined; comments, event names and ids are not used by
    chat-completion streams; `[DONE]` ends the stream.

    An event that is not a chat chunk is skipped and logged, as a bad line of Ollama's stream is:
    each event stands alone, so one bad event costs a token, while ending the answer would throw
    away what the student is reading. More than MAX_UNREADABLE_LINES of them mean the other end is
    not an OpenAI-compatible stream at all (a proxy's page): a sentence naming OPENAI_BASE_URL."""

    def __init__(self, host: str):
        self.finished = False  # `[DONE]` came
        self.data: list[str] = []
        self.pending: dict[int, _PendingCall] = {}
        self.reason_given, self.usage = False, None
        self.unreadable = UnreadableLines(host, NOT_OPENAI)

    def line(self, line: str) -> list[ChatEvent]:
        if line:
            if line.startswith("data:"):
                self.data.append(line[6:] if line.startswith("data: ") else line[5:])
            return []
        return self._event()

    def end(self) -> list[ChatEvent]:
        events = self._event()  # a last event without its blank line
        if not self.reason_given:
            # A stream that ends without a finish reason was cut off: never a complete answer.
            raise failures.cut()
        calls = tuple(self.pending[i].call(i) for i in sorted(self.pending))
        counts: dict[str, Any] = self.usage if isinstance(self.usage, dict) else {}
        prompt_tokens, completion_tokens = (counts.get(key) for key in ("prompt_tokens", "completion_tokens"))
        done = Done(
            prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
            completion_tokens=completion_tokens if isinstance(completion_tokens, int) else 0,
            tool_calls=calls,
        )
        return [*events, *(ToolCallEvent(made) for made in calls), done]

    def _event(self) -> list[ChatEvent]:
        if not self.data or self.finished:
            return []
        data, self.data = "\n".join(self.data), []
        if data == "[DONE]":
            self.finished = True
            return []
        try:
            chunk = loads(data)
        except ValueError:
            chunk = None
        if isinstance(chunk, dict) and chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise failures.failed(message)
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not isinstance(choices, list):
            self.unreadable.skip(data)
            return []
        self.usage = chunk.get("usage") or self.usage
        events: list[ChatEvent] = []
        for choice in choices:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text and isinstance(text, str):
                events.append(TextDelta(text))
            for piece in delta.get("tool_calls") or ():
                _add_call_piece(self.pending, piece)
            self.reason_given = self.reason_given or choice.get("finish_reason") is not None
        return events


def _add_call_piece(pending: dict[int, _PendingCall], piece: Any) -> None:
    """One tool-call delta: an id and a name first, then the JSON arguments in pieces, by `index`."""
    if not isinstance(piece, dict):
        return
    index = piece.get("index")
    call = pending.setdefault(index if isinstance(index, int) else len(pending), _PendingCall())
    call.id = piece.get("id") or call.id
    function = piece.get("function")
    if isinstance(function, dict):
        call.name = function.get("name") or call.name
        arguments = function.get("arguments")
        call.arguments.append(arguments if isinstance(arguments, str) else "")
