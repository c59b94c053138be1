"""Choose a model implementation by name.

Names are `<provider>:<model>`: `ollama:qwen3:8b`, `local:all-MiniLM-L6-v2`. A bare name means
Ollama, since that is what teachers see in Ollama's own model list. The registry maps provider
kinds to dotted class paths so a deployment can add one without touching callers.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.module_loading import import_string

from currechat.errors import CurreChatError
from rag.providers.base import ChatModel, EmbeddingModel

CHAT_PROVIDERS = {"ollama": "rag.providers.ollama.OllamaChatModel"}
EMBEDDING_PROVIDERS = {
    "ollama": "rag.providers.ollama.OllamaEmbeddingModel",
    "local": "rag.providers.local.MiniLMEmbedder",
}
LOCAL_EMBEDDERS = {"all-MiniLM-L6-v2"}
# Query prefixes from the models' cards: some embedders are trained with asymmetric inputs.
QUERY_PREFIXES = {"snowflake-arctic-embed2": "query: ", "nomic-embed-text": "search_query: "}

_embedders: dict[str, EmbeddingModel] = {}


class UnknownModel(CurreChatError):
    pass


def split_name(name: str) -> tuple[str, str]:
    provider, sep, model = name.partition(":")
    if sep and provider in CHAT_PROVIDERS | EMBEDDING_PROVIDERS:
        return provider, model
    return "ollama", name


def get_chat_model(name: str | None = None, *, timeout: float | None = None) -> ChatModel:
    """`timeout` (seconds) overrides OLLAMA_TIMEOUT for callers with a tighter budget (curation)."""
    provider, model = split_name(name or settings.CHAT_MODEL)
    if provider not in CHAT_PROVIDERS:
        raise UnknownModel(f"'{name}' is not a chat model; use an Ollama model name such as qwen3:8b.")
    cls = import_string(CHAT_PROVIDERS[provider])
    return cls(model, host=settings.OLLAMA_HOST, timeout=timeout or settings.OLLAMA_TIMEOUT)


def get_embedding_model(name: str | None = None) -> EmbeddingModel:
    """The embedder for a name; instances are kept so the local model loads once per process."""
    name = name or settings.EMBEDDING_MODEL
    key = f"{name}@{settings.OLLAMA_HOST}"
    if key not in _embedders:
        provider, model = split_name(name)
        if provider == "local":
            if model not in LOCAL_EMBEDDERS:
                raise UnknownModel(f"There is no local embedding model '{model}'; use local:all-MiniLM-L6-v2.")
            _embedders[key] = import_string(EMBEDDING_PROVIDERS["local"])()
        else:
            base = model.split(":")[0]
            _embedders[key] = import_string(EMBEDDING_PROVIDERS["ollama"])(
                model,
                host=settings.OLLAMA_HOST,
                timeout=settings.OLLAMA_TIMEOUT,
                query_prefix=QUERY_PREFIXES.get(base, ""),
            )
    return _embedders[key]


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
