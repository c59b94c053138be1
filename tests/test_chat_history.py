"""Which history the chat model reads when the conversation no longer fits its window."""

from __future__ import annotations

import pytest

from chat.turn.budget import Budget, MessageTooLong, fit_history, message_tokens
from rag.providers import ChatMessage

SYSTEM = ChatMessage("system", "You help with the statistics course.")
FILLER = " Some more words that make this answer long enough to matter for the budget." * 6


def exchange(question: str, answer: str) -> list[ChatMessage]:
    return [ChatMessage("user", question), ChatMessage("assistant", answer + FILLER)]


HISTORY = [
    *exchange("What is a confidence interval for a population mean?", "It is a range of plausible values."),
    *exchange("When is the exam?", "On Friday."),
    *exchange("How long is the exam?", "Two hours."),
    *exchange("Can I bring a calculator?", "Yes, a simple one."),
    *exchange("Where is the exam room?", "Room B."),
]


def budget_for(exchanges: int) -> Budget:
    """A budget with room for `exchanges` history exchanges (each costs the same) plus the new question."""
    cost = message_tokens(HISTORY[0]) + message_tokens(HISTORY[1])
    fixed = message_tokens(SYSTEM) + message_tokens(CURRENT)
    return Budget(window=fixed + exchanges * cost + 5, answer=0, results=0)


CURRENT = ChatMessage("user", "So how wide should the confidence interval be?")


def questions(messages: list[ChatMessage]) -> list[str]:
    return [m.content for m in messages if m.role == "user"]


def test_everything_is_kept_when_it_fits():
    kept = fit_history(SYSTEM, HISTORY, CURRENT, Budget(window=100_000, answer=0, results=0), 0)
    assert kept == [SYSTEM, *HISTORY, CURRENT]


def test_the_latest_exchanges_and_the_most_relevant_older_one_are_kept_in_order():
    kept = fit_history(SYSTEM, HISTORY, CURRENT, budget_for(3), 0)
    assert questions(kept) == [
        "What is a confidence interval for a population mean?",  # relevant, though the oldest
        "Can I bring a calculator?",
        "Where is the exam room?",
        CURRENT.content,
    ]
    assert kept[0] == SYSTEM and kept[-1] == CURRENT


def test_an_answer_is_never_kept_without_its_question():
    kept = fit_history(SYSTEM, HISTORY, CURRENT, budget_for(3), 0)
    for i, message in enumerate(kept):
        if message.role == "assistant":
            assert kept[i - 1].role == "user"


def test_with_no_relevant_older_exchange_the_most_recent_ones_fill_the_room():
    current = ChatMessage("user", "Thanks!")
    kept = fit_history(SYSTEM, HISTORY, current, budget_for(3), 0)
    assert questions(kept) == [
        "How long is the exam?",
        "Can I bring a calculator?",
        "Where is the exam room?",
        "Thanks!",
    ]


def test_a_message_too_long_for_the_window_is_refused():
    with pytest.raises(MessageTooLong):
        fit_history(SYSTEM, HISTORY, ChatMessage("user", "x" * 10_000), Budget(window=500, answer=0, results=0), 0)
