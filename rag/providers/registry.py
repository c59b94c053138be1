"""Choose a model implementation by name.

Names are `<provider>:<model>`: `ollama:qwen3:8b`, `openai:Qwen/Qwen3-8B` (an OpenAI-compatible
server at OPENAI_BASE_URL), `local:all-MiniLM-L6-v2`. A bare name means
Ollama, since that is what teachers see in Ollama's own model list. The registry maps provider
kinds to dotted class paths so a deployment can add one without touching callers.

Which models exist is asked here too, the same way for every provider (`available_models`,
`is_available`): each provider lists its server's models, and the registry keeps the lists.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pkgutil import resolve_name  # the class path a deployment names, the standard library's way

from django.utils.translation import gettext as _

from kernel.errors import ProviderError
from rag import config
from rag.providers.base import ChatModel, EmbeddingModel, Provider, UnknownModel

# Provider kind -> class path. Each class is built by `from_name(model, timeout=...)`, lists the
# models it can serve (`list_models()`) and says whether a name is one of them (`serves`)
# (rag/providers/base.py Provider), so a new provider is one class and one entry here.
CHAT_PROVIDERS = {
    "ollama": "rag.providers.ollama.OllamaChatModel",
    "openai": "rag.providers.openai.OpenAIChatModel",
}
EMBEDDING_PROVIDERS = {
    "ollama": "rag.providers.ollama.OllamaEmbeddingModel",
    "openai": "rag.providers.openai.OpenAIEmbeddingModel",
    "local": "rag.providers.local.MiniLMEmbedder",
}

_embedders: dict[str, EmbeddingModel] = {}

__all__ = [
    "Listing",
    "UnknownModel",
    "available_models",
    "get_chat_model",
    "get_embedding_model",
    "is_available",
    "split_name",
]


def split_name(name: str) -> tuple[str, str]:
    provider, sep, model = name.partition(":")
    if sep and provider in CHAT_PROVIDERS | EMBEDDING_PROVIDERS:
        return provider, model
    return "ollama", name


def get_chat_model(name: str | None = None, *, timeout: float | None = None) -> ChatModel:
    """`timeout` (seconds) overrides OLLAMA_TIMEOUT for callers with a tighter budget (curation)."""
    provider, model = split_name(name or config.models().chat_model)
    if provider not in CHAT_PROVIDERS:
        raise UnknownModel(
            _("'%(name)s' is not a chat model; use an Ollama model name such as qwen3:8b or openai:<model>.")
            % {"name": name}
        )
    return resolve_name(CHAT_PROVIDERS[provider]).from_name(model, timeout=timeout)


def get_embedding_model(name: str | None = None) -> EmbeddingModel:
    """The embedder for a name; instances are kept so the local model loads once per process."""
    name = name or config.models().embedding_model
    key = f"{name}@{_servers()}"
    if key not in _embedders:
        provider, model = split_name(name)
        _embedders[key] = resolve_name(EMBEDDING_PROVIDERS[provider]).from_name(model)
    return _embedders[key]


def _servers() -> str:
    """The model servers' addresses: what a kept embedder or model list belongs to."""
    servers = config.model_servers()
    return f"{servers.ollama_host}@{servers.openai_base_url}"


def _provider(kind: str) -> type[Provider]:
    """The class that lists provider `kind`'s models (its chat and embedding classes share a server)."""
    return resolve_name(CHAT_PROVIDERS.get(kind) or EMBEDDING_PROVIDERS[kind])


# The one model-list cache of a process: provider kind -> (looked up at, servers, models or None).
_lists_lock = threading.Lock()
_lists: dict[str, tuple[float, str, list[str] | None]] = {}


# Within `one_look()` (a page's request): provider kind -> the list this request saw.
_this_look: ContextVar[dict[str, list[str] | None] | None] = ContextVar("model_lists_this_look", default=None)


@contextmanager
def one_look() -> Iterator[None]:
    """Inside, each server's list is asked for at most once (`fresh` still asks again): a page asks
    for the models three times (the status badge, its model choices, its write rules), and once the
    lists kept for HEALTH_CACHE_SECONDS were out of date (or that setting is 0), each asked the servers
    again, and the page could show two different answers."""
    token = _this_look.set({})
    try:
        yield
    finally:
        _this_look.reset(token)


def _listed(kind: str, *, fresh: bool) -> list[str] | None:
    """Provider `kind`'s models, or None when its server cannot be reached. Kept for
    HEALTH_CACHE_SECONDS per process, so the status badge, search and the agent, which all ask on
    every request, reach each server at most once in that time; inside `one_look`, a request reads
    one list per server however stale it grows meanwhile; `fresh` asks again."""
    look = _this_look.get()
    if not fresh and look is not None and kind in look:
        return look[kind]
    servers = _servers()
    with _lists_lock:
        kept = _lists.get(kind)
    models: list[str] | None
    if not fresh and kept and kept[1] == servers and time.monotonic() - kept[0] < config.models().health_cache_seconds:
        models = kept[2]
    else:
        try:
            models = _provider(kind).list_models()
        except ProviderError:
            models = None
        with _lists_lock:
            _lists[kind] = (time.monotonic(), servers, models)
    if look is not None:
        look[kind] = models
    return models


def why_unreachable(kind: str) -> str | None:
    """Why provider `kind`'s server does not list its models now, in a sentence (None: it does),
    asked afresh: for an operator's command, not for every page."""
    try:
        _provider(kind).list_models()
    except ProviderError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class Listing:
    """What the providers can serve, at one look (`available_models`)."""

    models: Mapping[str, list[str] | None]  # provider kind -> names after `<kind>:`; None: server unreachable

    def reachable(self, kind: str) -> bool:
        """Provider `kind`'s server answered (one with no server configured answers with no models)."""
        return self.models.get(kind) is not None

    def of(self, kind: str) -> list[str]:
        """Provider `kind`'s models, by their names after `<kind>:` (none when unreachable)."""
        return list(self.models.get(kind) or [])

    def names(self) -> list[str]:
        """The chat providers' models by the names settings and prompts take: Ollama's as its own
        list shows them (a bare name means Ollama), the others' as `<kind>:<model>`. Servers do not
        say which models can chat, so their embedders are among them (`languages.looks_like_embedder`)."""
        return [model if kind == "ollama" else f"{kind}:{model}" for kind in CHAT_PROVIDERS for model in self.of(kind)]


def available_models(*, fresh: bool = False) -> Listing:
    """Every provider's models now, the one answer health, pages and write rules ask for.
    Never raises: a server that cannot be reached lists nothing (`Listing.reachable`)."""
    return Listing({kind: _listed(kind, fresh=fresh) for kind in CHAT_PROVIDERS | EMBEDDING_PROVIDERS})


def is_available(name: str, *, fresh: bool = False) -> bool:
    """Whether the model `name` (chat, VLM, curation or embedding) can be used right now: the list
    of the provider that serves the name has it (`available_models`; `fresh` asks that provider's
    server again). A local embedder is always there. Never raises: an unreachable server or an
    unknown name is simply "not available"."""
    kind, model = split_name(name)
    listed = _listed(kind, fresh=fresh)
    return listed is not None and _provider(kind).serves(listed, model)


def is_available_on_second_look(name: str) -> bool:
    """`is_available`, but a kept failure to reach the server (a model server busy for a moment,
    remembered for HEALTH_CACHE_SECONDS) gets one fresh look before the model counts as missing:
    for the callers that would otherwise do without it (an answer in quotes, a search uncurated).
    A server that answered without the model is not asked again; one that is down refuses at once;
    one that never answers costs one more LIST_TIMEOUT."""
    if is_available(name):
        return True
    kind, _model = split_name(name)
    with _lists_lock:
        kept = _lists.get(kind)
    if kept is not None and kept[2] is not None:  # the server answered, and the model is not in its list
        return False
    return is_available(name, fresh=True)


def import_providers() -> None:
    """Import every provider's class, and with them the client libraries they use (the openai and
    ollama SDKs, httpx, pydantic). Imported by the first model list or model a process asks for,
    they cost about a second with the interpreter held, in which no other request or streamed
    answer of that process moves."""
    for kind in CHAT_PROVIDERS | EMBEDDING_PROVIDERS:
        _provider(kind)  # a kind's chat and embedding classes share a module


def load_local_embedder(name: str | None = None) -> float | None:
    """Load an in-process embedder's weights without running it (a worker, before it forks its job
    processes: they share the loaded weights instead of each loading them again). Returns the
    seconds it took; None for models that run on a server."""
    name = name or config.models().embedding_model
    if split_name(name)[0] != "local":
        return None
    started = time.perf_counter()
    model = get_embedding_model(name)
    load = getattr(model, "load", None)
    if load is not None:
        load()
    return time.perf_counter() - started


def warm_up_local_embedder(name: str | None = None) -> float | None:
    """Load an in-process embedder now and embed one word, so the first student's search does
    not wait for it (about 4 s on our machines). Returns the seconds it took; None for models
    that run on a server, which loads them itself."""
    name = name or config.models().embedding_model
    loaded = load_local_embedder(name)
    if loaded is None:
        return None
    started = time.perf_counter()
    get_embedding_model(name).embed_query("warm-up")
    return loaded + time.perf_counter() - started
