"""The `document_search` tool: its spec as the model sees it, and running the model's calls
(check the call, search, number the passages for citation).

A bad call (unknown tool, missing or wrong-typed argument) is not an exception: it becomes a tool
result that tells the model what was wrong, so it can correct itself in the next round.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import redis
from django.conf import settings
from django.utils.translation import gettext as _

from chat.metering.tokens import CHARS_PER_TOKEN, estimate_tokens
from chat.turn import grounding
from chat.turn.budget import PASSAGE_OVERHEAD, passage_chars, passage_count
from chat.turn.events import PassageView, passage_view
from collections_app.documents import documents_in
from kernel import metrics
from kernel.errors import CurreChatError
from kernel.redis_client import get_index_redis
from rag.documents import Document, named_in
from rag.providers import ToolCall, ToolSpec
from rag.providers.base import UsageSink
from rag.results import Passage

if TYPE_CHECKING:
    from rag.context import Assembly

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 500
TOOL_NAME = "document_search"


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced: the text the model reads and the record the student sees."""

    call_id: str
    query: str | None
    status: Literal["ok", "nothing_relevant", "error"]
    model_text: str
    error: str = ""
    passages: list[PassageView] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dropped: int = 0  # passages curation (or the similarity threshold) left out: teachers' statistics

    def record(self) -> dict[str, Any]:
        """As stored in Message.tool_results."""
        return {
            "tool_call_id": self.call_id,
            "query": self.query,
            "status": self.status,
            "error": self.error,
            "passages": self.passages,
            "notes": self.notes,
            "dropped": self.dropped,
        }


def parse_query(call: ToolCall, offered: bool) -> tuple[str | None, str]:
    """The call's query, or None and a sentence for the model saying what is wrong."""
    if not offered or call.name != TOOL_NAME:
        available = f"the only tool is {TOOL_NAME}" if offered else "no tools are available"
        return None, f"Error: there is no tool named {call.name!r}; {available}."
    arguments = call.arguments
    usage = f'Call {TOOL_NAME} with {{"query": "<words to search for>"}}.'
    if call.problem:
        # Arguments the provider could not read as an object (rag/providers/base.parse_arguments).
        return None, f'Error: {call.problem}. Call {TOOL_NAME} again with {{"query": "<words to search for>"}}.'
    if not isinstance(arguments, dict) or "query" not in arguments:
        return None, f"Error: the argument 'query' is missing. {usage}"
    query = arguments["query"]
    if not isinstance(query, str):
        return None, f"Error: 'query' must be a string, not {type(query).__name__}. {usage}"
    query = " ".join(query.split())
    if not query:
        return None, f"Error: 'query' is empty. {usage}"
    return query[:MAX_QUERY_CHARS], ""


class PassageRegistry:
    """Numbers passages across one turn, so [n] means the same passage in every search result."""

    def __init__(self) -> None:
        self.by_chunk: dict[str, PassageView] = {}

    def number(self, passage: Passage) -> PassageView:
        if passage.chunk_id not in self.by_chunk:
            self.by_chunk[passage.chunk_id] = passage_view(passage, len(self.by_chunk) + 1)
        return self.by_chunk[passage.chunk_id]


class SearchTool:
    """document_search over a prompt's collections, within this turn's budget for results."""

    def __init__(
        self,
        collections: Sequence,
        *,
        curate: bool,
        results_budget: int,
        usage: UsageSink | None = None,
        context_free: int = 10**9,
        question: str = "",
    ):
        self.collections = list(collections)
        # Documents the student's question names get passages of their own in every search of the
        # turn, as do those a query names (rag/documents.py): read once, at the first search.
        self.question = question
        self._documents: list[Document] | None = None
        self.usage = usage  # told the tokens of the search's curation calls
        self.curate = curate
        # Two budgets, both spent by every passage given to the model: the turn's reserve for results
        # (a hard cap) and the context still free (the number of passages per search follows it).
        self.tokens_left = results_budget
        self.context_free = context_free
        self.registry = PassageRegistry()
        self.searches = 0

    @property
    def offered(self) -> bool:
        return bool(self.collections)

    def spec(self) -> ToolSpec:
        """The tool exactly as DESIGN.md gives it, its description filled from the collections."""
        titles = ", ".join(f"'{c.name}'" for c in self.collections)
        names = sorted({c.language.capitalize() for c in self.collections if c.language})
        language = " or ".join(names) if names else "the language of the documents"
        which = "is the language" if " or " not in language else "are the languages"
        return ToolSpec(
            name=TOOL_NAME,
            description=(
                f"Search documents in the materials (titled {titles}). Prefer {language}, which {which} used in "
                "the documents. If multiple queries are needed, call this tool multiple times, once for each query."
            ),
            parameters={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "The query to search for"}},
                "required": ["query"],
            },
        )

    def run(self, call: ToolCall) -> ToolOutcome:
        query, problem = parse_query(call, self.offered)
        if query is None:
            return ToolOutcome(call.id, None, "error", problem, error=problem.removeprefix("Error: "))
        if self.searches >= settings.CHAT_MAX_SEARCHES:
            text = "Error: the search limit for this answer is reached. Answer with the passages you have."
            return ToolOutcome(call.id, query, "error", text, error=_("Search limit reached."))
        self.searches += 1
        try:
            outcome = self._search(query)
        except (CurreChatError, redis.RedisError) as exc:
            log.warning("document_search failed for %r: %s", query, exc)
            detail = str(exc) if isinstance(exc, CurreChatError) else _("The search index cannot be reached.")
            return ToolOutcome(call.id, query, "error", f"Error: the search failed ({detail})", error=detail)
        if outcome.nothing_relevant or not outcome.results:
            return ToolOutcome(
                call.id,
                query,
                "nothing_relevant",
                grounding.nothing_found(query),
                notes=outcome.notes,
                dropped=len(outcome.dropped),
            )
        return self._numbered(call.id, query, outcome)

    def _search(self, query: str):
        """The search's passages as the model reads them (`context_for`)."""
        from rag.search import search_collections  # imported late: the search modules own their own deps

        outcome = search_collections(
            self.collections,
            query,
            limit=settings.CHAT_SEARCH_LIMIT,
            further=further_hits(self.curate),
            curate=self.curate,
            usage=self.usage,
            named=self.named(query),
        )
        metrics.observe_search(outcome.status, outcome.timings_ms)
        if outcome.nothing_relevant or not outcome.results:
            return outcome
        room = min(self.tokens_left, self.context_free)
        assembly = context_for(get_index_redis(), outcome.results, room, self.context_free)
        notes = list(outcome.notes)
        if assembly.no_room:
            notes.append(f"{assembly.no_room} passage(s) left out: no room in the model's context.")
        # Nothing fits: the best hit goes on, so the budget check below says there is no room.
        return replace(outcome, results=assembly.passages or outcome.results[:1], notes=notes)

    def named(self, query: str) -> list[Document]:
        """The documents the question or the query names (the question's first)."""
        if self._documents is None:
            self._documents = documents_in(self.collections)
        return named_in(f"{self.question}\n{query}", self._documents)

    def _numbered(self, call_id: str, query: str, outcome) -> ToolOutcome:
        """Number the passages and keep as many as the turn's results budget allows."""
        kept: list[PassageView] = []
        notes = list(outcome.notes)
        for passage in outcome.results:
            cost = estimate_tokens(passage.text) + PASSAGE_OVERHEAD
            if cost > min(self.tokens_left, self.context_free):
                notes.append(f"{len(outcome.results) - len(kept)} passage(s) left out: no room in the model's context.")
                break
            self.tokens_left -= cost
            self.context_free -= cost
            kept.append(self.registry.number(passage))
        if not kept:
            text = "Error: no room is left for more passages. Answer with the passages you already have."
            return ToolOutcome(call_id, query, "error", text, error=_("No room for more passages."), notes=notes)
        text = grounding.format_passages(query, kept)
        return ToolOutcome(call_id, query, "ok", text, passages=kept, notes=notes, dropped=len(outcome.dropped))


def further_hits(curate: bool) -> int:
    """How many ranked hits a search hands the assembly beyond its CHAT_SEARCH_LIMIT passages: none
    when curation judges each one (a model call apiece), else up to CHAT_SEARCH_CANDIDATES in all,
    so room the context has left can go to further hits rather than stay empty."""
    return 0 if curate else max(settings.CHAT_SEARCH_CANDIDATES - settings.CHAT_SEARCH_LIMIT, 0)


def context_for(client: redis.Redis, hits: Sequence[Passage], room: int, free: int) -> Assembly:
    """The passages a search gives the model with `room` tokens left for results and `free` tokens
    of its context free (rag/context.py): room planned for as many passages as the free context
    calls for (chat/turn/budget.passage_count), each hit grown within its section up to an equal share.
    The first CHAT_SEARCH_LIMIT hits are placed first (what a search gave before the assembly);
    near-duplicates and sections too short for their share leave their room to further hits or to
    the text around the strongest hits, whichever the search scores higher."""
    from rag.context import assemble  # imported late, as the search is

    count = passage_count(free)
    return assemble(
        client,
        hits,
        count=count,
        max_chars=passage_chars(room, count),
        room_chars=room * CHARS_PER_TOKEN,
        overhead_chars=(PASSAGE_OVERHEAD + 1) * CHARS_PER_TOKEN,  # estimate_tokens rounds up
        first=settings.CHAT_SEARCH_LIMIT,
    )
