"""Models served over Ollama's HTTP protocol, through the official `ollama` client."""

from __future__ import annotations

import functools
import json
import logging
import ssl
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self

import certifi
import httpx
import ollama
import pydantic
from django.conf import settings

from currechat.errors import ModelMissing, ProviderError
from rag.providers.base import (
    ChatEvent,
    ChatMessage,
    CompletesFromStream,
    Done,
    ModelInfo,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSpec,
)

log = logging.getLogger(__name__)
VERSION_SECONDS = 60.0  # how long a model's digest is trusted before it is looked up again
LIST_TIMEOUT = 2.0  # seconds: a status check must not hang a page on a dead server
# Query prefixes from the models' cards: some embedders are trained with asymmetric inputs.
QUERY_PREFIXES = {"snowflake-arctic-embed2": "query: ", "nomic-embed-text": "search_query: "}


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context per process: building one loads the CA bundle (~35 ms of CPU), which made
    every new client slow; a chat turn or a curation call creates one."""
    return ssl.create_default_context(cafile=certifi.where())


def make_client(host: str, timeout: float) -> ollama.Client:
    return ollama.Client(host=host, timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)), verify=_tls_context())


@contextmanager
def _translate_errors(host: str, model: str):
    """Turn the client's exceptions into ProviderError with a sentence and a retry hint."""
    try:
        yield
    except ollama.ResponseError as exc:
        if exc.status_code == 404:
            raise ModelMissing(
                f"The model server at {host} does not have the model '{model}'. Pull it there "
                f"(ollama pull {model}) or choose another model."
            ) from exc
        retryable = exc.status_code < 0 or exc.status_code >= 500 or exc.status_code == 429
        raise ProviderError(f"The model server failed: {exc.error}.", retryable=retryable) from exc
    except httpx.TimeoutException as exc:
        raise ProviderError(f"The model server at {host} did not answer in time.") from exc
    except (json.JSONDecodeError, pydantic.ValidationError) as exc:
        # A garbage line mid-stream, or a tool call whose arguments are not an object: the client
        # library rejects the whole reply, so the turn cannot go on; say so plainly.
        log.warning("Unreadable reply from the model server at %s: %s", host, exc)
        raise ProviderError(
            f"The model server at {host} sent a reply that could not be read (the model '{model}' may have "
            "produced a malformed tool call). Try again."
        ) from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise ProviderError(f"The model server at {host} cannot be reached.") from exc


def _message_payload(message: ChatMessage) -> dict[str, Any]:
    payload: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        payload["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, dict) else {}}}
            for c in message.tool_calls
        ]
    if message.tool_name:
        payload["tool_name"] = message.tool_name
    if message.images:
        payload["images"] = list(message.images)
    return payload


class _OllamaModel:
    """Built the same way for chat and embeddings: the model name plus the OLLAMA_* settings."""

    def __init__(self, model: str, *, host: str, timeout: float):
        self.name = model
        self.host = host
        self._client = make_client(host, timeout)

    @classmethod
    def from_name(cls, model: str, *, timeout: float | None = None) -> Self:
        return cls(model, host=settings.OLLAMA_HOST, timeout=timeout or settings.OLLAMA_TIMEOUT)

    @classmethod
    def is_available(cls, model: str, *, fresh: bool = False) -> bool:
        return serves(server_models(fresh=fresh) or [], model)


class OllamaChatModel(CompletesFromStream, _OllamaModel):
    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        format: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Iterator[ChatEvent]:
        calls: list[ToolCall] = []
        with _translate_errors(self.host, self.name):
            parts = self._client.chat(
                model=self.name,
                messages=[_message_payload(m) for m in messages],
                tools=[t.as_ollama() for t in tools] or None,
                format=format,
                options=options,
                stream=True,
            )
            try:
                for part in parts:
                    if part.message.content:
                        yield TextDelta(part.message.content)
                    for raw in part.message.tool_calls or ():
                        call = ToolCall(
                            id=uuid.uuid4().hex[:12], name=raw.function.name, arguments=raw.function.arguments
                        )
                        calls.append(call)
                        yield ToolCallEvent(call)
                    if part.done:
                        yield Done(
                            prompt_tokens=part.prompt_eval_count or 0,
                            completion_tokens=part.eval_count or 0,
                            tool_calls=tuple(calls),
                        )
                        return
            finally:
                # Closed early (the student pressed Stop): end the HTTP response now, not at
                # garbage collection, so the server stops generating.
                close = getattr(parts, "close", None)
                if close is not None:
                    close()
        # A stream that ends without `done` was cut off: never pass it off as a complete answer.
        raise ProviderError("The model server closed the answer before it was finished.")

    def info(self) -> ModelInfo:
        with _translate_errors(self.host, self.name):
            shown = self._client.show(self.name)
        context = None
        for key, value in (shown.modelinfo or {}).items():
            if key.endswith(".context_length"):
                context = int(value)
        # A deployment's num_ctx parameter caps what the model was trained for.
        for line in (shown.parameters or "").splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == "num_ctx":
                context = min(context or int(fields[1]), int(fields[1]))
        return ModelInfo(name=self.name, context_length=context)


class OllamaEmbeddingModel(_OllamaModel):
    """An embedding model on an Ollama server. `query_prefix` (from the model's card) is
    prepended to queries only."""

    def __init__(self, model: str, *, host: str, timeout: float):
        super().__init__(model, host=host, timeout=timeout)
        self.query_prefix = QUERY_PREFIXES.get(model.split(":")[0], "")
        self._dimensions: int | None = None
        self._version: tuple[float, str] | None = None  # (looked up at, digest)

    @property
    def version(self) -> str:
        """The model's digest on the server (looked up at most once a minute); "" if unknown."""
        now = time.monotonic()
        if self._version is None or now - self._version[0] > VERSION_SECONDS:
            self._version = (now, model_digest(self._client, self.name))
        return self._version[1]

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = len(self.embed_batch(["dimension probe"])[0])
        return self._dimensions

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with _translate_errors(self.host, self.name):
            response = self._client.embed(model=self.name, input=list(texts))
        vectors = [list(v) for v in response.embeddings]
        if len(vectors) != len(texts):
            raise ProviderError(f"The model server returned {len(vectors)} embeddings for {len(texts)} texts.")
        self._dimensions = len(vectors[0])
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_batch([self.query_prefix + text])[0]


def model_digest(client: ollama.Client, name: str) -> str:
    """The digest the server lists for a model ("" when it cannot say)."""
    wanted = {name, f"{name}:latest"}
    try:
        for model in client.list().models:
            if model.model in wanted:
                return model.digest or ""
    except Exception:  # noqa: BLE001 — a missing version only means a coarser cache key
        log.warning("Could not read the digest of %s", name, exc_info=True)
    return ""


def list_models(host: str, timeout: float = LIST_TIMEOUT) -> list[str]:
    """Names of the models the server has; raises ProviderError when it cannot be reached."""
    with _translate_errors(host, "(list)"):
        return [m.model for m in make_client(host, timeout).list().models if m.model]


_listing_lock = threading.Lock()
_listing: tuple[float, str, list[str] | None] | None = None  # (looked up at, host, models)


def server_models(*, fresh: bool = False) -> list[str] | None:
    """The models OLLAMA_HOST lists, or None when it cannot be reached.

    Kept for HEALTH_CACHE_SECONDS per process, so the status badge, the search and the agent,
    which all ask on every request, ping the server at most once in that time."""
    global _listing
    host = settings.OLLAMA_HOST
    with _listing_lock:
        cached = _listing
    if not fresh and cached and cached[1] == host and time.monotonic() - cached[0] < settings.HEALTH_CACHE_SECONDS:
        return cached[2]
    try:
        models: list[str] | None = list_models(host)
    except ProviderError:
        models = None
    with _listing_lock:
        _listing = (time.monotonic(), host, models)
    return models


def serves(available: Sequence[str], model: str) -> bool:
    """Whether `model` is in a server's list; a name without a tag means `:latest`, as in Ollama."""
    wanted = {model, f"{model}:latest"} if ":" not in model else {model}
    return bool(wanted.intersection(available))
