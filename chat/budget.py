"""How much of the model's context window each part of a turn may use.

The window comes from the model server (`/api/show`), capped by `CHAT_CONTEXT_TOKENS`. Token counts
are estimated from characters: we cannot load every model's tokenizer, so the estimate is set on
the generous side (3 characters a token; English averages about 4) to err towards leaving room.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings

from currechat.errors import CurreChatError
from rag.providers import ChatMessage, ChatModel, ToolSpec

CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds around each message
FALLBACK_CONTEXT = 8192  # when the server does not say (older servers, other protocols)
_INFO_TTL = 300.0

_lock = threading.Lock()
_windows: dict[str, tuple[float, int]] = {}


class MessageTooLong(CurreChatError):
    status_code = 413
    code = "too_long"


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def message_tokens(message: ChatMessage) -> int:
    calls = sum(estimate_tokens(str(c.arguments)) + 8 for c in message.tool_calls)
    return estimate_tokens(message.content) + calls + MESSAGE_OVERHEAD


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return sum(estimate_tokens(t.description + str(t.parameters)) + 16 for t in tools)


def context_window(model: ChatModel) -> int:
    """The window to plan for, from the model server, cached per model for a few minutes.

    A model server that cannot be asked raises ProviderError: the turn fails like any model error.
    """
    key = f"{settings.OLLAMA_HOST}|{model.name}"
    now = time.monotonic()
    with _lock:
        cached = _windows.get(key)
        if cached and now - cached[0] < _INFO_TTL:
            return cached[1]
    reported = model.info().context_length or FALLBACK_CONTEXT
    window = min(reported, settings.CHAT_CONTEXT_TOKENS)
    with _lock:
        _windows[key] = (now, window)
    return window


def forget_windows() -> None:
    """Tests change the fake server's window between cases."""
    with _lock:
        _windows.clear()


@dataclass(frozen=True)
class Budget:
    window: int
    answer: int  # kept free for the model's reply
    results: int  # for this turn's search results (0 when no tool is offered)

    @classmethod
    def plan(cls, window: int, *, has_tool: bool) -> Budget:
        answer = min(settings.CHAT_ANSWER_RESERVE_TOKENS, window // 4)
        results = min(settings.CHAT_RESULTS_RESERVE_TOKENS, int(window * 0.4)) if has_tool else 0
        return cls(window=window, answer=answer, results=results)

    def for_messages(self, fixed: int) -> int:
        """Tokens left for history and the new message after the system part and reserves."""
        return self.window - self.answer - self.results - fixed


def fit_history(
    system: ChatMessage, history: Sequence[ChatMessage], current: ChatMessage, budget: Budget, tools_cost: int
) -> list[ChatMessage]:
    """System message, then as much recent history as fits, then the student's new message.

    History is dropped oldest first, a whole exchange at a time so the model never sees an answer
    without its question. Raises MessageTooLong when the new message alone does not fit.
    """
    room = budget.for_messages(message_tokens(system) + tools_cost) - message_tokens(current)
    if room < 0:
        raise MessageTooLong(
            "Your message is too long for this assistant's model to read together with the course material. "
            "Shorten it or split it into several questions."
        )
    kept: list[ChatMessage] = []
    for exchange in reversed(_exchanges(history)):
        cost = sum(message_tokens(m) for m in exchange)
        if cost > room:
            break
        kept[:0] = exchange
        room -= cost
    return [system, *kept, current]


def _exchanges(history: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Group history into [user, assistant...] exchanges."""
    groups: list[list[ChatMessage]] = []
    for message in history:
        if message.role == "user" or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups
