"""The typed events of a chat turn, and the sinks that carry them.

One agent loop emits these events; the websocket, the `text/event-stream` API and the JSON API
differ only in the sink they hand it. Events are typed messages, never markers hidden in text.
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired, Protocol, TypedDict, cast

from kernel.rendering import render_markdown
from rag.results import Passage


class PassageView(TypedDict):
    """A passage as the student (and the API) sees it; `n` is its citation number in the turn.

    `html` is the text rendered as answers are (sanitised Markdown and math), so every page shows a
    passage the same way; views stored before it existed get it from `chat.serializers.with_html` when read. Every
    other key is a field of `rag.results.Passage` with the same type (a test checks it); build one
    with `passage_view`, never by hand."""

    n: int
    chunk_id: str
    collection_id: int
    file_id: int
    file_name: str
    page: int | None
    page_end: int | None
    section: str
    text: str
    score: float
    curation_score: float | None
    html: str


_VIEW_FIELDS = tuple(name for name in PassageView.__annotations__ if name not in ("n", "html"))


def passage_view(passage: Passage, n: int) -> PassageView:
    """`passage` as the student sees it, cited as [n]: the shape of websocket events, the chat API
    and `Message.tool_results`."""
    view = {"n": n} | {name: getattr(passage, name) for name in _VIEW_FIELDS}
    return cast(PassageView, view | {"html": render_markdown(passage.text)})


class TokenEvent(TypedDict):
    type: Literal["token"]
    message_id: int
    text: str


class ToolCallEventOut(TypedDict):
    type: Literal["tool_call"]
    message_id: int
    call_id: str
    name: str
    query: str | None  # None when the model sent no usable query
    arguments: Any


class ToolResultEvent(TypedDict):
    type: Literal["tool_result"]
    message_id: int
    call_id: str
    query: str | None
    status: Literal["ok", "nothing_relevant", "error"]
    error: str
    passages: list[PassageView]


class RetractEvent(TypedDict):
    """The answer streamed so far is replaced by `text` (what it was before the round the leak
    guard stopped, chat/turn/tutor.py): a new answer follows."""

    type: Literal["retract"]
    message_id: int
    text: str


class MessageDoneEvent(TypedDict):
    type: Literal["message_done"]
    message: dict[str, Any]  # chat.serializers.message_dict of the finished assistant message


class ErrorEvent(TypedDict):
    type: Literal["error"]
    message_id: int | None  # None when the turn never started (rate limit, message too long)
    code: str  # "model_failed", "rate_limited", "too_long", "busy", "not_allowed", "bad_request"
    detail: str  # a sentence the student can act on
    retryable: bool
    # True when the socket's browser session signs its user in no more and the socket closes (4403)
    # next: the page tries once with the browser's cookie as it is now, and sends the message again.
    signed_out: NotRequired[bool]


ChatEventOut = TokenEvent | ToolCallEventOut | ToolResultEvent | RetractEvent | MessageDoneEvent | ErrorEvent


class EventSink(Protocol):
    """Receives a turn's events in order: from the thread that runs the turn, and the streamed text
    from the process's model-stream reader while that thread waits (never both at once). Must not
    block: the reader carries every answer of the process."""

    def emit(self, event: ChatEventOut) -> None: ...


class ListSink:
    """Keeps every event (the JSON API and tests)."""

    def __init__(self) -> None:
        self.events: list[ChatEventOut] = []

    def emit(self, event: ChatEventOut) -> None:
        self.events.append(event)

    def of_type(self, kind: str) -> list[ChatEventOut]:
        return [e for e in self.events if e["type"] == kind]


class CallbackSink:
    """Hands each event to a function (the websocket and SSE edges pass one that enqueues it)."""

    def __init__(self, callback) -> None:
        self._callback = callback

    def emit(self, event: ChatEventOut) -> None:
        self._callback(event)


def sse_frame(event: ChatEventOut) -> bytes:
    """One server-sent event: the event's type as `event:`, the JSON as `data:`."""
    return f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode()
