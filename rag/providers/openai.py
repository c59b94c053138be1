"""Models served over the OpenAI protocol (vLLM, llama.cpp's server, LM Studio, TGI, Azure OpenAI),
through the official `openai` client. Names are `openai:<model>`; the server is OPENAI_BASE_URL.

The protocol differs from Ollama's where it matters to us: tool calls arrive as deltas (an id and a
name first, the JSON arguments in pieces, keyed by `index`) and are assembled here; token counts come
in a final usage chunk (`stream_options.include_usage`); structured output is `response_format`
json_schema; images are data URLs in the user message's content parts; a tool result names its
call by id, which is taken from the assistant message it answers.

Chat streams are read by the process's stream reader (`wire`), event by event (`_Events`), with
the headers the SDK would send (its key among them): the SDK's own stream built a pydantic object
per event and read in the caller's thread through its HTTP client, most of the server's CPU per
streamed token, and could not go on after an unreadable event. Everything else (the model list,
embeddings, a server behind a proxy) goes through the SDK.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Self

import httpx2
import openai
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
    UnknownModel,
    text_to,
)
from rag.providers.decoders import OpenAIEvents

log = logging.getLogger(__name__)
NO_KEY = "none"  # local servers need no key, but the client insists on one


def make_client(base_url: str, timeout: float, *, api_key: str | None = None) -> openai.OpenAI:
    """Retries are ours to decide (a chat turn must not silently wait through three). The client
    runs on httpx2 (the SDK's own HTTP library), with the process's one TLS context. The key is
    OPENAI_API_KEY unless another server's is given."""
    return openai.OpenAI(
        base_url=base_url,
        api_key=(model_servers().openai_api_key if api_key is None else api_key) or NO_KEY,
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 5.0)),
        max_retries=0,
        http_client=httpx2.Client(verify=http1.tls_context()),
    )


@contextmanager
def _translate_errors(base_url: str, model: str):
    """The client's exceptions as ProviderError with a sentence and a retry hint."""
    try:
        yield
    except openai.NotFoundError as exc:
        raise _missing(base_url, model) from exc
    except openai.APIStatusError as exc:
        raise failures.failed(_message(exc), retryable=exc.status_code >= 500 or exc.status_code == 429) from exc
    except openai.APITimeoutError as exc:
        raise failures.timed_out(base_url) from exc
    except openai.APIConnectionError as exc:
        raise failures.connection_failure(exc, base_url) from exc
    except openai.APIError as exc:  # an error event mid-stream (vLLM sends one when generation fails)
        raise failures.failed(exc.message) from exc
    except json.JSONDecodeError as exc:
        # A non-streamed reply (the model list, embeddings) whose body is not JSON.
        log.warning("Unreadable reply from the model server at %s: %s", redact_url(base_url), exc)
        raise ProviderError(
            _(
                "The model server at %(host)s sent a reply that could not be read "
                "(the model '%(model)s' or a proxy in between may have garbled it). Try again."
            )
            % {"host": redact_url(base_url), "model": model},
            reason="unreadable",
        ) from exc


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body if isinstance(exc.body, dict) else {}
    detail = body.get("message") or (body.get("error") or {}).get("message") if body else None
    return str(detail or exc.message or exc.status_code)


def _image_url(data: bytes) -> str:
    kind = "image/png" if data.startswith(b"\x89PNG") else "image/jpeg" if data[:2] == b"\xff\xd8" else "image/webp"
    return f"data:{kind};base64,{base64.b64encode(data).decode()}"


def _messages_payload(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """Our messages in the OpenAI shape. A tool message answers the oldest unanswered call of
    the assistant message before it (the agent appends results in the order of the calls)."""
    payload: list[dict[str, Any]] = []
    unanswered: list[str] = []
    for m in messages:
        item: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.images:
            parts = [{"type": "image_url", "image_url": {"url": _image_url(image)}} for image in m.images]
            item["content"] = [{"type": "text", "text": m.content}, *parts]
        if m.tool_calls:
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        # Unusable arguments go back as an empty object, as to Ollama: some servers
                        # (vLLM) parse them for the chat template, and the tool result says what was wrong.
                        "arguments": "{}" if c.problem else json.dumps(c.arguments),
                    },
                }
                for c in m.tool_calls
            ]
            unanswered = [c.id for c in m.tool_calls]
        if m.role == "tool":
            item["tool_call_id"] = unanswered.pop(0) if unanswered else "call_0"
        payload.append(item)
    return payload


def _response_format(format: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": format}}


def _refusal(host: str, model: str, status: int, text: str) -> ProviderError:
    """A non-200 answer to a chat request, as `_translate_errors` words the SDK's status errors."""
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    error = body.get("error", body) if isinstance(body, dict) else None
    detail = (error.get("message") if isinstance(error, dict) else error) or text.strip()[:300] or status
    if status == 404:
        return _missing(host, model)
    return failures.failed(detail, retryable=status >= 500 or status == 429)


def _missing(host: str, model: str) -> ModelMissing:
    """Also made on the model-stream reader's thread: translated when read (`Sentence`)."""
    sentence = gettext_lazy("The model server at %(host)s does not have the model '%(model)s'. Choose another model.")
    return ModelMissing(Sentence(sentence, host=redact_url(host), model=model))


class _OpenAIModel:
    """Built the same way for chat and embeddings: the model name plus the OPENAI_* settings."""

    def __init__(self, model: str, *, base_url: str, timeout: float):
        self.name = model
        self.host = base_url
        self.timeout = timeout

    @functools.cached_property
    def _client(self) -> openai.OpenAI:
        return make_client(self.host, self.timeout)

    @classmethod
    def from_name(cls, model: str, *, timeout: float | None = None) -> Self:
        servers = model_servers()
        if not servers.openai_base_url:
            raise UnknownModel(
                _("'openai:%(model)s' needs an OpenAI-compatible server: set OPENAI_BASE_URL.") % {"model": model}
            )
        if not model:
            raise UnknownModel(_("Name the model after 'openai:', e.g. openai:Qwen/Qwen3-8B."))
        return cls(model, base_url=servers.openai_base_url, timeout=timeout or servers.openai_timeout)

    @classmethod
    def list_models(cls) -> list[str]:
        """The ids OPENAI_BASE_URL lists at /v1/models; none while no server is configured."""
        base_url = model_servers().openai_base_url
        if not base_url:
            return []
        client = make_client(base_url, LIST_TIMEOUT)
        try:
            with _translate_errors(base_url, "(list)"):
                return [m.id for m in client.models.list()]
        finally:
            client.close()

    @classmethod
    def serves(cls, listed: Sequence[str], model: str) -> bool:
        return model in listed


class OpenAIChatModel(ChatModel, _OpenAIModel):
    def _stream(self, messages: Sequence[ChatMessage], asked: StreamOptions) -> Iterator[ChatEvent]:
        body: dict[str, Any] = {
            "model": self.name,
            "messages": _messages_payload(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if asked.tools:
            body["tools"] = [t.as_ollama() for t in asked.tools]
        # Of Ollama's options only these have an OpenAI twin; num_ctx has none (the server's
        # context is fixed when it starts).
        for ours, theirs in (("temperature", "temperature"), ("num_predict", "max_tokens")):
            if ours in (asked.options or {}):
                body[theirs] = (asked.options or {})[ours]
        if asked.format is not None:
            body["response_format"] = _response_format(asked.format)
        url = str(self._client.base_url).rstrip("/") + "/chat/completions"
        if wire.proxied(url):
            return text_to(self._stream_proxied(body), asked.on_text)
        # The SDK's own headers, its key among them: what it would have sent with this request.
        sdk = {**self._client.default_headers, **self._client.auth_headers}
        headers = {name: value for name, value in sdk.items() if isinstance(value, str)}
        request = streams.Request(
            url=url,
            body=json.dumps(body).encode(),
            headers=tuple({**headers, "Accept": "text/event-stream"}.items()),
            connect_timeout=min(self.timeout, 5.0),
            read_timeout=self.timeout,
            host=self.host,
        )
        return wire.stream(
            request, OpenAIEvents(self.host), functools.partial(_refusal, self.host, self.name), asked.on_text
        )

    def _stream_proxied(self, body: dict[str, Any]) -> Iterator[ChatEvent]:
        """Through the SDK in this thread, which goes through the proxy the environment names."""
        started = False
        try:
            with _translate_errors(self.host, self.name):
                request = self._client.chat.completions.with_streaming_response.create(**body)
                # Leaving the `with` (Stop, or any failure) closes the response now: the server
                # sees the connection go and stops generating.
                with request as response:
                    started = True
                    yield from wire.decoded(response.iter_lines(), OpenAIEvents(self.host))
        except httpx2.TimeoutException as exc:
            raise failures.timed_out(self.host) from exc
        except httpx2.TransportError as exc:
            raise (failures.cut() if started else failures.connection_failure(exc, self.host)) from exc

    def info(self) -> ModelInfo:
        """The context window where the server's model list says it (vLLM: `max_model_len`,
        LM Studio: `context_length`); the protocol has no field for it. Read from the list, not
        `/v1/models/{id}`, which not every server has and which ids with a slash confuse."""
        with _translate_errors(self.host, self.name):
            listed = {m.id: m for m in self._client.models.list()}
        extra = listed[self.name].model_extra or {} if self.name in listed else {}
        length = extra.get("max_model_len") or extra.get("context_length")
        return ModelInfo(name=self.name, context_length=int(length) if length else None)


class OpenAIEmbeddingModel(Embeddings, _OpenAIModel):
    def __init__(self, model: str, *, base_url: str, timeout: float):
        super().__init__(model, base_url=base_url, timeout=timeout)
        self._dimensions: int | None = None

    @property
    def version(self) -> str:
        return ""  # the protocol has no digest: a redeployed model must get a new name

    def _embed(self, texts: list[str]) -> list[list[float]]:
        with _translate_errors(self.host, self.name):
            response = self._client.embeddings.create(model=self.name, input=texts)
        return [list(item.embedding) for item in sorted(response.data, key=lambda d: d.index)]
