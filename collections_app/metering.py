"""What a curated search needs from a meter: the seam between searches and the weekly budgets.

A curated search asks a model once per passage, and those calls are charged to the person searching
like a chat turn's (the page's and the API's search, `search.metered_search`; a curated run of a
collection's test questions, `checks._curation_meter`). The budgets are the chat app's, which sits
above this one, so this app only says what it needs (`Reserve`, `SearchMeter`, `BudgetExhausted`),
as `rag.ingest.job.IngestTracker` says what ingestion needs of a file's record. The project shell
plugs the chat app's meter in at start (`currechat/apps.py`: `chat.metering.usage.reserve`).
"""

from __future__ import annotations

from typing import Any, Protocol

from kernel.errors import CurreChatError


class BudgetExhausted(CurreChatError):
    """A budget has no room for the work (429): used up until the week's reset, or the rest of it
    set aside for work still running. `retry_after` says in seconds when to ask again."""

    status_code = 429
    code = "budget_exhausted"
    retryable = True

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class SearchMeter(Protocol):
    """Counts one search's model calls for the person searching (a `rag.providers.UsageSink`)."""

    def __call__(self, prompt_tokens: int, completion_tokens: int, model: str = "") -> None:
        """One model call ended: count its tokens (from any thread)."""
        ...

    def settle(self) -> None:
        """The search ended: what was set aside for it and not used goes back. Never raises."""
        ...

    def flush(self) -> None:
        """Store what was counted (the statistics' mirror of the budget's counts)."""
        ...


class Reserve(Protocol):
    def __call__(self, user_id: int, prompt: Any) -> SearchMeter:
        """Set an estimate of one search's tokens aside from the user's weekly budgets and return the
        meter that counts its calls. `prompt` is the chat app's prompt the search goes through (None:
        only the user's budget across prompts). Raises BudgetExhausted when a budget has no room."""
        ...


_plugged: list[Reserve] = []


def plug_in(reserve_with: Reserve) -> None:
    """Called once at start by the project shell (a second call replaces the first)."""
    _plugged[:] = [reserve_with]


def reserve(user_id: int, prompt: Any) -> SearchMeter:
    """The plugged-in meter's `Reserve`; raises BudgetExhausted (429) when a budget has no room."""
    if not _plugged:
        raise RuntimeError("No meter is plugged in: the project shell does it at start (currechat/apps.py).")
    return _plugged[0](user_id, prompt)
