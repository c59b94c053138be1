"""How much of the model's context window each part of a turn may use.

The window comes from the model server (`/api/show`), capped by `CHAT_CONTEXT_TOKENS`. Token counts
are estimated from characters (chat/metering/tokens.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from chat.metering.tokens import CHARS_PER_TOKEN, estimate_tokens
from kernel.errors import CurreChatError
from kernel.ttlcache import TTLCache
from rag.providers import ChatMessage, ChatModel, ToolSpec
from rag.query import tokenize

# When the history does not fit, the latest exchanges are kept as they are (the conversation's
# thread: "and the second one?") and the room left goes to the older exchanges most relevant to
# the new message.
RECENT_EXCHANGES = 2
MESSAGE_OVERHEAD = 8  # role markers and separators a chat template adds around each message
PASSAGE_OVERHEAD = 24  # a passage's number, file, page and section lines in a tool result
FALLBACK_CONTEXT = 8192  # when the server does not say (older servers, other protocols)
_INFO_TTL = 300.0

_windows: TTLCache[str, int] = TTLCache(_INFO_TTL)  # "<server>|<model>" -> its window


class MessageTooLong(CurreChatError):
    status_code = 413
    code = "too_long"


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
    return _windows.get_or_make(
        key, lambda: min(model.info().context_length or FALLBACK_CONTEXT, settings.CHAT_CONTEXT_TOKENS)
    )


def forget_windows() -> None:
    """Tests change the fake server's window between cases."""
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


def passage_count(free_tokens: int) -> int:
    """How many passages one search gives the model when `free_tokens` of its context are free.

    A logistic curve from CHAT_PASSAGES_MIN (a small window, or a long conversation) to
    CHAT_PASSAGES_MAX (plenty of room), half way at CHAT_PASSAGES_MIDPOINT_TOKENS. It is smooth, so
    a few tokens more or less never jump the count by several passages, and it saturates: a huge
    window does not flood the model with weakly related passages."""
    low = settings.CHAT_PASSAGES_MIN
    high = max(settings.CHAT_PASSAGES_MAX, low)
    mid = settings.CHAT_PASSAGES_MIDPOINT_TOKENS
    # The scale puts the curve's steep part between half and one and a half times the midpoint.
    x = min(max((free_tokens - mid) / (mid / 4), -50.0), 50.0)
    return round(low + (high - low) / (1 + math.exp(-x)))


def passage_chars(room_tokens: int, count: int) -> int:
    """The characters each of `count` passages may grow to when `room_tokens` are left for results:
    an equal share of the room, at most CHAT_PASSAGE_TOKENS (0 when there is no room)."""
    share = room_tokens // max(count, 1) - PASSAGE_OVERHEAD
    return max(min(share, settings.CHAT_PASSAGE_TOKENS), 0) * CHARS_PER_TOKEN


def fit_history(
    system: ChatMessage, history: Sequence[ChatMessage], current: ChatMessage, budget: Budget, tools_cost: int
) -> list[ChatMessage]:
    """System message, then the history that fits, then the student's new message.

    Everything is kept when it fits. Otherwise the latest RECENT_EXCHANGES exchanges come first
    (newest first, while they fit), then older exchanges in order of relevance to the new message
    (`relevance`), each only if it still fits; the kept ones are given in their original order.
    A whole exchange is kept or dropped, so the model never sees an answer without its question.
    Raises MessageTooLong when the new message alone does not fit.
    """
    room = budget.for_messages(message_tokens(system) + tools_cost) - message_tokens(current)
    if room < 0:
        raise MessageTooLong(
            _(
                "Your message is too long for this assistant's model to read together with the course material. "
                "Shorten it or split it into several questions."
            )
        )
    exchanges = _exchanges(history)
    costs = [sum(message_tokens(m) for m in exchange) for exchange in exchanges]
    if sum(costs) <= room:
        return [system, *history, current]
    recent = list(range(len(exchanges) - 1, -1, -1))[:RECENT_EXCHANGES]
    scores = relevance(current.content, exchanges)
    older = sorted(set(range(len(exchanges))) - set(recent), key=lambda i: (-scores[i], -i))
    kept: set[int] = set()
    for position, i in enumerate(recent + older):
        if costs[i] > room:
            if position < len(recent):
                break  # the thread is broken: nothing older would read in context
            continue
        kept.add(i)
        room -= costs[i]
    return [system, *(m for i in sorted(kept) for m in exchanges[i]), current]


def relevance(question: str, exchanges: Sequence[Sequence[ChatMessage]]) -> list[float]:
    """Each exchange's relevance to `question`: the summed IDF (over the exchanges) of the
    question's words it contains, in the case-folded form search uses (rag.query.tokenize). Words
    in every exchange ("the", "please") weigh almost nothing; 0 when it shares no word."""
    words = {t for t in tokenize(question) if len(t) > 2}
    bags = [{t for m in exchange for t in tokenize(m.content)} for exchange in exchanges]
    n = len(bags)
    idf = {w: math.log(1 + n / df) for w in words if (df := sum(1 for bag in bags if w in bag))}
    return [sum(idf.get(w, 0.0) for w in words & bag) for bag in bags]


def _exchanges(history: Sequence[ChatMessage]) -> list[list[ChatMessage]]:
    """Group history into [user, assistant...] exchanges."""
    groups: list[list[ChatMessage]] = []
    for message in history:
        if message.role == "user" or not groups:
            groups.append([message])
        else:
            groups[-1].append(message)
    return groups
