"""Playing one answer check's question through the chat turn, as a teacher's preview would.

The answer is made by the turn's own machinery (chat/turn/answering.py): the prompt's model (or,
without one, the extractive answer), its instructions under the grounding rules, the
`document_search` tool over its usable collections with its curation switch, the same round and
search limits, and the citations mapped as in a chat. What differs is where it goes: the question
and the reply are messages of no chat (never saved: `run_tool` and the stream writer store only a
reply that has a row), so nothing reaches a student's chat, the teachers' chat lists or the
statistics (chat/insight/stats.record_answer is never called for them). Model calls are counted by
the run's meter, against the budget of the teacher who pays for the run.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Q

from chat.metering.usage import UsageMeter
from chat.models import AnswerMode, Message, MessageRole, MessageStatus, Prompt, SourcePolicy
from chat.turn.answering import Progress, TurnFailed, answer_extractively, answer_with_model
from chat.turn.citations import map_citations
from chat.turn.tools import SearchTool
from collections_app.models import Collection
from kernel.errors import CurreChatError, ProviderError
from rag.providers import is_available, is_available_on_second_look

log = logging.getLogger(__name__)

DRAFT_KEYS = ("model", "system_prompt", "curation", "collection_ids")


@dataclass(frozen=True)
class Config:
    """What the questions are played with: the live prompt, or a draft's changes over it."""

    prompt: Prompt  # an unsaved copy carrying a draft's instructions and model; never saved
    model: str
    collections: list[Collection]
    curate: bool

    @classmethod
    def of(cls, prompt: Prompt, draft: dict[str, Any] | None = None) -> Config:
        draft = draft or {}
        view = copy.copy(prompt)
        if "system_prompt" in draft:
            view.system_prompt = draft["system_prompt"]
        if "model" in draft:
            view.chat_model = draft["model"]
        curate = bool(draft.get("curation", prompt.curation_enabled))
        view.curation_enabled = curate
        if prompt.source_policy == SourcePolicy.NO_SEARCH:
            collections: list[Collection] = []
        elif "collection_ids" in draft:
            # Only collections one of the prompt's teachers may still use, as for the live prompt.
            teachers = prompt.teachers()
            usable = Collection.objects.filter(Q(owner__in=teachers) | Q(co_owners__in=teachers))
            collections = list(usable.filter(pk__in=draft["collection_ids"]).distinct().order_by("pk"))
        else:
            collections = list(prompt.usable_collections())
        return cls(view, view.chat_model, collections, curate)


@dataclass
class Played:
    """One played question: the answer and the record of its searches and citations."""

    text: str
    tool_calls: list[dict]
    tool_results: list[dict]
    cited: list[dict]
    mode: str
    error: str = ""
    file_names: dict[int, str] = field(default_factory=dict)

    @property
    def extractive(self) -> bool:
        return self.mode == AnswerMode.EXTRACTIVE


@dataclass
class _CheckChat:
    prompt: Prompt
    id: None = None  # no chat: no earlier messages (chat/turn/answering.history)


@dataclass
class CheckTurn:
    """What the answering loop reads of a turn (chat/turn/state.Turn), for a question of no chat.
    No Stop button and no draining web process: the run's worker answers every question through."""

    session: _CheckChat
    question: Message
    reply: Message
    model: str
    meter: UsageMeter

    def check_stop(self) -> None:
        return None


class _Nowhere:
    """The turn's events: nobody watches an answer check's stream; the run stores its outcome."""

    def emit(self, event) -> None:
        return None


def play(config: Config, question: str, meter: UsageMeter) -> Played:
    """Answer `question` as a chat with `config` would. Never raises for a failed answer: its
    sentence is the result's `error`."""
    reply = Message(role=MessageRole.ASSISTANT, status=MessageStatus.PENDING)
    turn = CheckTurn(
        _CheckChat(config.prompt), Message(role=MessageRole.USER, content=question), reply, config.model, meter
    )
    tool = SearchTool(config.collections, curate=config.curate, results_budget=0, usage=meter, question=question)
    progress, error = Progress(), ""
    try:
        if is_available_on_second_look(config.model):
            answer_with_model(turn, tool, progress, _Nowhere())  # type: ignore[arg-type]
        else:
            tool.curate = config.curate and is_available(settings.CURATION_MODEL)
            answer_extractively(turn, tool, progress, _Nowhere())  # type: ignore[arg-type]
    except ProviderError as exc:
        log.info("Answer check %r: the model failed: %s", question, exc)
        error = str(exc)  # teachers read the model server's own words (as on the health page)
    except (TurnFailed, CurreChatError) as exc:
        error = str(exc)
    cited = [dict(p) for p in map_citations(progress.text, progress.passages)]
    return Played(progress.text, progress.tool_calls, progress.tool_results, cited, reply.mode, error)
