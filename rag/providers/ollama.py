"""Models served over Ollama's HTTP protocol.

Chat replies are read by the process's stream reader (`wire`), line by line from `/api/chat`'s
NDJSON stream (`_Lines`), not by the official `ollama` client: the client validates each whole line
and rejects the whole reply for one bad part (a tool call whose arguments are not an object, a
garbage line), before the agent could let the model try again; and it reads in the caller's thread,
at several times the CPU per token. Embeddings and the model list still go through the client."""

from __future__ import annotations

import base64
import functools
import json
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self

import httpx
import ollama
import pydantic
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from kernel.addresses import redact_url
from kernel.errors import ModelMissing, ProviderError, Sentence
from rag.config import model_servers
from rag.providers import failures, http1, streams, wire
from rag.providers.base import (
    LIST_TIMEOUT,
    ChatEvent,
    ChatMessage,
    ChatModel,
    Embeddings,
    ModelInfo,
    StreamOptions,
    text_to,
)
from rag.providers.decoders import OllamaLines

log = logging.getLogger(__name__)
VERSION_SECONDS = 60.0  # how long a model's digest is trusted before it is looked up again
# Query prefixes from the models' cards: some embedders are trained with asymmetric inputs.
QUERY_PREFIXES = {"snowflake-arctic-embed2": "query: ", "nomic-embed-text": "search_query: "}


def _headers() -> dict[str, str]:
    key = model_servers().ollama_api_key
    return {"authorization": f"Bearer {key}"} if key else {}


def _timeout(timeout: float) -> httpx.Timeout:
    return httpx.Timeout(timeout, connect=min(timeout, 5.0))


def make_client(host: str, timeout: float) -> ollama.Client:
    return ollama.Client(host=host, timeout=_timeout(timeout), verify=http1.tls_context(), headers=_headers())


def make_http_client(host: str, timeout: float) -> httpx.Client:
    """The chat model's own HTTP client, set up as `make_client`'s (the process's one TLS context,
    the same timeouts and key); kept by its model, so a thread's turns reuse its connection."""
    return httpx.Client(
        base_url=host,
        timeout=_timeout(timeout),
        verify=http1.tls_context(),
        follow_redirects=True,
        headers={"content-type": "application/json", "accept": "application/json", **_headers()},
    )


def _refusal(host: str, model: str, status: int, text: str) -> ProviderError:
    """A non-200 answer as the client's ResponseError would have been translated."""
    try:
        detail = json.loads(text).get("error") or text
    except (ValueError, AttributeError):
        detail = text
    return _from_response_error(ollama.ResponseError(str(detail), status), host, model)


def _transport_error(exc: Exception, host: str, *, mid_answer: bool = False) -> ProviderError:
    """A connection that failed or timed out, as a ProviderError (its `reason` for plain words)."""
    if isinstance(exc, httpx.TimeoutException):
        return failures.timed_out(host)
    if mid_answer:  # the connection dropped while the answer streamed
        return failures.cut()
    return failures.connection_failure(exc, host)


def _from_response_error(exc: ollama.ResponseError, host: str, model: str) -> ProviderError:
    """Also made on the model-stream reader's thread: sentences translated when read (`Sentence`)."""
    if exc.status_code == 404:
        return ModelMissing(
            Sentence(
                gettext_lazy(
                    "The model server at %(host)s does not have the model '%(model)s'. Pull it there "
                    "(ollama pull %(model)s) or choose another model."
                ),
                host=redact_url(host),
                model=model,
            )
        )
    retryable = exc.status_code < 0 or exc.status_code >= 500 or exc.status_code == 429
    return failures.failed(exc.error, retryable=retryable)


@contextmanager
def _translate_errors(host: str, model: str):
    """Turn the client's exceptions into ProviderError with a sentence and a retry hint."""
    try:
        yield
    except ollama.ResponseError as exc:
        raise _from_response_error(exc, host, model) from exc
    except (json.JSONDecodeError, pydantic.ValidationError) as exc:
        # Embeddings or the model list in a shape the client does not accept.
        log.warning("Unreadable reply from the model server at %s: %s", redact_url(host), exc)
        raise ProviderError(
            _("The model server at %(host)s sent a reply that could not be read. Try again.")
            % {"host": redact_url(host)},
            reason="unreadable",
        ) from exc
    except (ConnectionError, httpx.TransportError) as exc:
        raise _transport_error(exc, host) from exc


def _message_payload(message: ChatMessage) -> dict[str, Any]:
    payload: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        # Ollama accepts only an object here: a call whose arguments were unusable goes back empty
        # (its tool result, which follows, says what was wrong).
        payload["tool_calls"] = [
            {"function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, dict) else {}}}
            for c in message.tool_calls
        ]
    if message.tool_name:
        payload["tool_name"] = message.tool_name
    if message.images:
        payload["images"] = [base64.b64encode(image).decode() for image in message.images]
    return payload


class _OllamaModel:
    """Built the same way for chat and embeddings: the model name plus the OLLAMA_* settings."""

    def __init__(self, model: str, *, host: str, timeout: float):
        self.name = model
        self.host = host
        self.timeout = timeout

    @classmethod
    def from_name(cls, model: str, *, timeout: float | None = None) -> Self:
        servers = model_servers()
        return cls(model, host=servers.ollama_host, timeout=timeout or servers.ollama_timeout)

    @classmethod
    def list_models(cls) -> list[str]:
        """The models OLLAMA_HOST has, as `ollama list` names them."""
        host = model_servers().ollama_host
        with _translate_errors(host, "(list)"), make_client(host, LIST_TIMEOUT) as client:
            return [m.model for m in client.list().models if m.model]

    @classmethod
    def serves(cls, listed: Sequence[str], model: str) -> bool:
        """A name without a tag means `:latest`, as in Ollama."""
        wanted = {model, f"{model}:latest"} if ":" not in model else {model}
        return bool(wanted.intersection(listed))


class OllamaChatModel(ChatModel, _OllamaModel):
    @functools.cached_property
    def _http(self) -> httpx.Client:
        """For `info()` and a proxied server's streams; made when first needed (a curation call
        builds a model and streams through the process's reader, `wire`, only)."""
        return make_http_client(self.host, self.timeout)

    def _stream(self, messages: Sequence[ChatMessage], asked: StreamOptions) -> Iterator[ChatEvent]:
        body: dict[str, Any] = {"model": self.name, "messages": [_message_payload(m) for m in messages], "stream": True}
        tools = [t.as_ollama() for t in asked.tools]
        for key, value in (("tools", tools), ("format", asked.format), ("options", asked.options)):
            if value:
                body[key] = value
        url = self.host.rstrip("/") + "/api/chat"
        if wire.proxied(url):
            return text_to(self._stream_proxied(body), asked.on_text)
        request = streams.Request(
            url=url,
            body=json.dumps(body).encode(),
            headers=(("Accept", "application/x-ndjson"), *_headers().items()),
            connect_timeout=min(self.timeout, 5.0),
            read_timeout=self.timeout,
            host=self.host,
        )
        refusal = functools.partial(_refusal, self.host, self.name)
        return wire.stream(request, OllamaLines(self.host), refusal, asked.on_text)

    def _stream_proxied(self, body: dict[str, Any]) -> Iterator[ChatEvent]:
        """Through httpx in this thread, which goes through the proxy the environment names."""
        started = False
        try:
            # Closed early (the student pressed Stop, or the agent failed): leaving the `with`
            # ends the HTTP response now, not at garbage collection, so the server stops generating.
            with self._http.stream("POST", "/api/chat", json=body) as response:
                if response.status_code != 200:
                    raise _refusal(self.host, self.name, response.status_code, response.read().decode(errors="replace"))
                started = True
                yield from wire.decoded(response.iter_lines(), OllamaLines(self.host))
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.host, mid_answer=started) from exc

    def info(self) -> ModelInfo:
        try:
            response = self._http.post("/api/show", json={"model": self.name})
        except httpx.TransportError as exc:
            raise _transport_error(exc, self.host) from exc
        if response.status_code != 200:
            raise _refusal(self.host, self.name, response.status_code, response.text)
        try:
            shown = response.json()
            model_info, parameters = shown.get("model_info") or {}, shown.get("parameters") or ""
        except (ValueError, AttributeError) as exc:
            raise ProviderError(
                _("The model server at %(host)s sent a reply that could not be read.") % {"host": self.host},
                reason="unreadable",
            ) from exc
        context = None
        for key, value in model_info.items():
            if key.endswith(".context_length"):
                context = int(value)
        # A deployment's num_ctx parameter caps what the model was trained for.
        for line in parameters.splitlines():
            fields = line.split()
            if len(fields) == 2 and fields[0] == "num_ctx":
                context = min(context or int(fields[1]), int(fields[1]))
        return ModelInfo(name=self.name, context_length=context)


class OllamaEmbeddingModel(Embeddings, _OllamaModel):
    """An embedding model on an Ollama server. `query_prefix` (from the model's card) is
    prepended to queries only."""

    def __init__(self, model: str, *, host: str, timeout: float):
        super().__init__(model, host=host, timeout=timeout)
        self._client = make_client(host, timeout)
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

    def _embed(self, texts: list[str]) -> list[list[float]]:
        with _translate_errors(self.host, self.name):
            response = self._client.embed(model=self.name, input=texts)
        return [list(v) for v in response.embeddings]


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
