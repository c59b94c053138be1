"""Safety checks (moderation) of a text, through the same providers as the other models.

Two kinds, chosen by name (`get_moderation_model`, from MODERATION_MODEL):
- `moderation:<model>`: an OpenAI-compatible moderation endpoint (`POST /v1/moderations`) at
  MODERATION_BASE_URL (default OPENAI_BASE_URL), through the `openai` client as the other calls of
  that protocol;
- `guard:<chat model>`: a guard classifier served as a chat model (Llama Guard on Ollama,
  `guard:llama-guard3:1b`, or on the OpenAI-compatible server, `guard:openai:<model>`): it reads
  the text as a user's message and answers "safe", or "unsafe" and its categories (S1..S14).

A failure raises ProviderError (whether a retry may help, as for every provider); what to do when
the check cannot be reached is the caller's policy (MODERATION_WHEN_DOWN).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Protocol

from django.utils.translation import gettext as _

from rag.config import model_servers
from rag.providers.base import ChatMessage, Done, UnknownModel
from rag.providers.openai import _translate_errors, make_client
from rag.providers.registry import get_chat_model

SELF_HARM = "self-harm"
# Llama Guard 3's hazard categories (its model card), as the moderation endpoint names them.
_GUARD_CATEGORIES = {
    "S1": "violence", "S2": "illicit", "S3": "sexual", "S4": "sexual/minors", "S5": "defamation",
    "S6": "specialized-advice", "S7": "privacy", "S8": "intellectual-property", "S9": "violence/weapons",
    "S10": "hate", "S11": SELF_HARM, "S12": "sexual", "S13": "elections", "S14": "code-interpreter-abuse",
}  # fmt: skip


@dataclass(frozen=True)
class Verdict:
    flagged: bool
    categories: tuple[str, ...] = ()  # the flagged ones, e.g. ("self-harm", "self-harm/intent")
    prompt_tokens: int = 0  # as the server counted them (0: it did not say)
    completion_tokens: int = 0

    @property
    def self_harm(self) -> bool:
        return any(c.startswith(SELF_HARM) for c in self.categories)


class ModerationModel(Protocol):
    name: str

    def moderate(self, text: str) -> Verdict:
        """Whether `text` is flagged. Raises ProviderError when the check could not be made."""
        ...


class EndpointModeration:
    """An OpenAI-compatible `/v1/moderations` endpoint."""

    def __init__(self, model: str, *, base_url: str, api_key: str, timeout: float):
        if not base_url:
            raise UnknownModel(_("'moderation:%(model)s' needs a server: set MODERATION_BASE_URL.") % {"model": model})
        self.name, self.host, self.api_key, self.timeout = model, base_url, api_key, timeout

    @cached_property
    def _client(self):
        # One client (and its connection pool) per configured endpoint and process, as the chat
        # providers keep theirs: get_moderation_model hands out the same instance (_endpoint).
        return make_client(self.host, self.timeout, api_key=self.api_key)

    def moderate(self, text: str) -> Verdict:
        with _translate_errors(self.host, self.name):
            response = self._client.moderations.create(model=self.name, input=text)
        result = response.results[0]
        categories = result.categories.model_dump(by_alias=True)
        flagged = tuple(sorted(name for name, hit in categories.items() if hit))
        return Verdict(flagged=bool(result.flagged), categories=flagged)


class GuardModeration:
    """A guard classifier served as a chat model: "safe", or "unsafe" and a line of categories."""

    def __init__(self, chat_model):
        self.model = chat_model
        self.name = chat_model.name

    def moderate(self, text: str) -> Verdict:
        parts: list[str] = []
        prompt_tokens = completion_tokens = 0
        options = {"temperature": 0}
        for event in self.model.stream([ChatMessage(role="user", content=text)], options=options, on_text=parts.append):
            if isinstance(event, Done):
                prompt_tokens += event.prompt_tokens
                completion_tokens += event.completion_tokens
        return _guard_verdict("".join(parts), prompt_tokens, completion_tokens)


def _guard_verdict(answer: str, prompt_tokens: int, completion_tokens: int) -> Verdict:
    words = answer.strip().lower()
    flagged = words.startswith(("unsafe", "yes"))  # Llama Guard; ShieldGemma and Granite Guardian say yes/no
    codes = re.findall(r"\bS\d{1,2}\b", answer.upper()) if flagged else []
    categories = tuple(dict.fromkeys(_GUARD_CATEGORIES.get(c, c.lower()) for c in codes))
    return Verdict(flagged, categories, prompt_tokens, completion_tokens)


@lru_cache(maxsize=8)
def _endpoint(model: str, base_url: str, api_key: str, timeout: float) -> EndpointModeration:
    return EndpointModeration(model, base_url=base_url, api_key=api_key, timeout=timeout)


def get_moderation_model(name: str | None = None) -> ModerationModel | None:
    """The safety check MODERATION_MODEL names; None when none is configured."""
    servers = model_servers()
    name = (servers.moderation_model if name is None else name).strip()
    if not name:
        return None
    kind, _sep, model = name.partition(":")
    if kind == "moderation" and model:
        return _endpoint(model, servers.moderation_base_url, servers.moderation_api_key, servers.moderation_timeout)
    if kind == "guard" and model:
        return GuardModeration(get_chat_model(model, timeout=servers.moderation_timeout))
    raise UnknownModel(
        _("'%(name)s' is not a safety check; use moderation:<model> or guard:<chat model>.") % {"name": name}
    )
