"""Choose a model implementation by name.

Names are `<provider>:<model>`: `ollama:qwen3:8b`, `openai:Qwen/Qwen3-8B` (an OpenAI-compatible
server at OPENAI_BASE_URL), `local:all-MiniLM-L6-v2`. A bare name means
Ollama, since that is what teachers see in Ollama's own model list. The registry maps provider
kinds to dotted class paths so a deployment can add one without touching callers.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string
from django.utils.translation import gettext as _

from rag.providers.base import ChatModel, EmbeddingModel, Provider, UnknownModel

# Provider kind -> class path. Each class is built by `from_name(model, timeout=...)` and answers
# `is_available(model)` (rag/providers/base.py Provider), so a new provider is one class and
# one entry here.
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

__all__ = ["UnknownModel", "get_chat_model", "get_embedding_model", "is_available", "split_name"]


def split_name(name: str) -> tuple[str, str]:
    provider, sep, model = name.partition(":")
    if sep and provider in CHAT_PROVIDERS | EMBEDDING_PROVIDERS:
        return provider, model
    return "ollama", name


def get_chat_model(name: str | None = None, *, timeout: float | None = None) -> ChatModel:
    """`timeout` (seconds) overrides OLLAMA_TIMEOUT for callers with a tighter budget (curation)."""
    provider, model = split_name(name or settings.CHAT_MODEL)
    if provider not in CHAT_PROVIDERS:
        raise UnknownModel(
            _("'%(name)s' is not a chat model; use an Ollama model name such as qwen3:8b or openai:<model>.")
            % {"name": name}
        )
    return import_string(CHAT_PROVIDERS[provider]).from_name(model, timeout=timeout)


def get_embedding_model(name: str | None = None) -> EmbeddingModel:
    """The embedder for a name; instances are kept so the local model loads once per process."""
    name = name or settings.EMBEDDING_MODEL
    key = f"{name}@{settings.OLLAMA_HOST}@{settings.OPENAI_BASE_URL}"
    if key not in _embedders:
        provider, model = split_name(name)
        _embedders[key] = import_string(EMBEDDING_PROVIDERS[provider]).from_name(model)
    return _embedders[key]


def is_available(name: str, *, fresh: bool = False) -> bool:
    """Whether the model `name` (chat, VLM, curation or embedding) can be used right now.

    Asks the provider that serves the name: Ollama lists its models (the list is kept for
    HEALTH_CACHE_SECONDS per process; `fresh` looks again), a local embedder is always there.
    Never raises: an unreachable server or an unknown name is simply "not available"."""
    provider, model = split_name(name)
    paths = {path for path in (CHAT_PROVIDERS.get(provider), EMBEDDING_PROVIDERS.get(provider)) if path}
    classes: list[type[Provider]] = [import_string(path) for path in sorted(paths)]
    return any(cls.is_available(model, fresh=fresh) for cls in classes)


def warm_up_local_embedder(name: str | None = None) -> float | None:
    """Load an in-process embedder now and embed one word, so the first student's search does
    not wait for it (about 4 s on our machines). Returns the seconds it took; None for models
    that run on a server, which loads them itself."""
    import time

    name = name or settings.EMBEDDING_MODEL
    if split_name(name)[0] != "local":
        return None
    started = time.perf_counter()
    get_embedding_model(name).embed_query("warm-up")
    return time.perf_counter() - started
