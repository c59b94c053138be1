"""Models served over the OpenAI protocol (vLLM, llama.cpp's server, LM Studio, TGI, Azure OpenAI),
through the official `openai` client. Names are `openai:<model>`; the server is OPENAI_BASE_URL.

The protocol differs from Ollama's where it matters to us: tool calls arrive as deltas (an id and a
name first, the JSON arguments in pieces, keyed by `index`) and are assembled here; token counts come
in a final usage chunk (`stream_options.include_usage`); structured output is `response_format`
json_schema; images are data URLs in the user message's content parts; a tool result names its
call by id, which is taken from the assistant message it answers.

Chat streams are read here, event by event (`_sse_data`, `_stream_events`), while the SDK still makes
the request (connection, key, timeouts, status errors): its own stream built a pydantic object per
event, most of the server's CPU per streamed token, and could not go on after an unreadable event.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Self, cast

import httpx2
import openai
from django.conf import settings
from django.utils.translation import gettext as _

from kernel.errors import ModelMissing, ProviderError
from rag.providers.base import (
    LIST_TIMEOUT,
    ChatEvent,
    ChatMessage,
    CompletesFromStream,
    Done,
    ModelInfo,
    TextDelta,
    ToolCall,
    ToolCallEvent,
    ToolSpec,
    UnknownModel,
    UnreadableLines,
)
from rag.providers.ollama import _tls_context

log = logging.getLogger(__name__)
NO_KEY = "none"  # local servers need no key, but the client insists on one


def make_client(base_url: str, timeout: float) -> openai.OpenAI:
    """Retries are ours to decide (a chat turn must not silently wait through three). The client
    runs on httpx2 (the SDK's own HTTP library), with the process's one TLS context."""
    return openai.OpenAI(
        base_url=base_url,
        api_key=settings.OPENAI_API_KEY or NO_KEY,
        timeout=httpx2.Timeout(timeout, connect=min(timeout, 5.0)),
        max_retries=0,
        http_client=httpx2.Client(verify=_tls_context()),
    )


@contextmanager
def _translate_errors(base_url: str, model: str):
    """The client's exceptions as ProviderError with a sentence and a retry hint."""
    try:
        yield
    except openai.NotFoundError as exc:
        raise ModelMissing(
            _("The model server at %(host)s does not have the model '%(model)s'. Choose another model.")
            % {"host": base_url, "model": model}
        ) from exc
    except openai.APIStatusError as exc:
        retryable = exc.status_code >= 500 or exc.status_code == 429
        raise ProviderError(
            _("The model server failed: %(error)s.") % {"error": _message(exc)}, retryable=retryable
        ) from exc
    except openai.APITimeoutError as exc:
        raise ProviderError(
            _("The model server at %(host)s did not answer in time.") % {"host": base_url}, reason="timeout"
        ) from exc
    except openai.APIConnectionError as exc:
        raise ProviderError(
            _("The model server at %(host)s cannot be reached.") % {"host": base_url}, reason="unreachable"
        ) from exc
    except openai.APIError as exc:  # an error event mid-stream (vLLM sends one when generation fails)
        raise ProviderError(_("The model server failed: %(error)s.") % {"error": exc.message}) from exc
    except json.JSONDecodeError as exc:
        # A non-streamed reply (the model list, embeddings) whose body is not JSON.
        log.warning("Unreadable reply from the model server at %s: %s", base_url, exc)
        raise ProviderError(
            _(
                "The model server at %(host)s sent a reply that could not be read "
                "(the model '%(model)s' or a proxy in between may have garbled it). Try again."
            )
            % {"host": base_url, "model": model},
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


def _response_format(format: dict[str, Any] | None) -> Any:
    if format is None:
        return openai.omit
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": format}}


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def call(self, index: int) -> ToolCall:
        # Text that is not JSON (or not an object) becomes the call's `problem`: the tool says
        # what is wrong with it, so the model can try again (as for Ollama: one parser in base.py).
        return ToolCall.from_wire(self.id or f"call_{index}", self.name, "".join(self.arguments))


def _sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data of each server-sent event (its `data:` lines joined), until `[DONE]`. Comments,
    event names and ids are not used by chat-completion streams."""
    data: list[str] = []
    for line in lines:
        if line:
            if line.startswith("data:"):
                data.append(line[6:] if line.startswith("data: ") else line[5:])
            continue
        if not data:
            continue
        joined, data = "\n".join(data), []
        if joined == "[DONE]":
            return
        yield joined
    if data and (joined := "\n".join(data)) != "[DONE]":
        yield joined


def _stream_events(events: Iterable[str], host: str) -> Iterator[ChatEvent]:
    """Our events from the data of one chat-completion stream; raises ProviderError when the server
    reports an error or the stream ends without a finish reason.

    An event that is not a chat chunk is skipped and logged, as a bad line of Ollama's stream is:
    each event stands alone, so one bad event costs a token, while ending the answer would throw
    away what the student is reading. More than MAX_UNREADABLE_LINES of them mean the other end is
    not an OpenAI-compatible stream at all (a proxy's page): a sentence naming OPENAI_BASE_URL."""
    pending: dict[int, _PendingCall] = {}
    finished, usage = False, None
    unreadable = UnreadableLines(
        host,
        _(
            "The model server at %(host)s sent replies that could not be read; it may not be an "
            "OpenAI-compatible server, or a proxy in between changed them. Try again, or ask an "
            "administrator to check OPENAI_BASE_URL."
        )
        % {"host": host},
    )
    for data in events:
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError:
            chunk = None
        if isinstance(chunk, dict) and chunk.get("error"):
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise ProviderError(_("The model server failed: %(error)s.") % {"error": message})
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not isinstance(choices, list):
            unreadable.skip(data)
            continue
        usage = chunk.get("usage") or usage
        for choice in choices:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text and isinstance(text, str):
                yield TextDelta(text)
            for piece in delta.get("tool_calls") or ():
                _add_call_piece(pending, piece)
            finished = finished or choice.get("finish_reason") is not None
    if not finished:
        # A stream that ends without a finish reason was cut off: never a complete answer.
        raise ProviderError(_("The model server closed the answer before it was finished."), reason="cut")
    calls = tuple(pending[i].call(i) for i in sorted(pending))
    for made in calls:
        yield ToolCallEvent(made)
    counts = usage if isinstance(usage, dict) else {}
    prompt_tokens, completion_tokens = (counts.get(key) for key in ("prompt_tokens", "completion_tokens"))
    yield Done(
        prompt_tokens=prompt_tokens if isinstance(prompt_tokens, int) else 0,
        completion_tokens=completion_tokens if isinstance(completion_tokens, int) else 0,
        tool_calls=calls,
    )


def _add_call_piece(pending: dict[int, _PendingCall], piece: Any) -> None:
    """One tool-call delta: an id and a name first, then the JSON arguments in pieces, by `index`."""
    if not isinstance(piece, dict):
        return
    index = piece.get("index")
    call = pending.setdefault(index if isinstance(index, int) else len(pending), _PendingCall())
    call.id = piece.get("id") or call.id
    function = piece.get("function")
    if isinstance(function, dict):
        call.name = function.get("name") or call.name
        arguments = function.get("arguments")
        call.arguments.append(arguments if isinstance(arguments, str) else "")


class _OpenAIModel:
    """Built the same way for chat and embeddings: the model name plus the OPENAI_* settings."""

    def __init__(self, model: str, *, base_url: str, timeout: float):
        self.name = model
        self.host = base_url
        self._client = make_client(base_url, timeout)

    @classmethod
    def from_name(cls, model: str, *, timeout: float | None = None) -> Self:
        if not settings.OPENAI_BASE_URL:
            raise UnknownModel(
                _("'openai:%(model)s' needs an OpenAI-compatible server: set OPENAI_BASE_URL.") % {"model": model}
            )
        if not model:
            raise UnknownModel(_("Name the model after 'openai:', e.g. openai:Qwen/Qwen3-8B."))
        return cls(model, base_url=settings.OPENAI_BASE_URL, timeout=timeout or settings.OPENAI_TIMEOUT)

    @classmethod
    def list_models(cls) -> list[str]:
        """The ids OPENAI_BASE_URL lists at /v1/models; none while no server is configured."""
        base_url = settings.OPENAI_BASE_URL
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


class OpenAIChatModel(CompletesFromStream, _OpenAIModel):
    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        format: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Iterator[ChatEvent]:
        started = False
        try:
            with _translate_errors(self.host, self.name):
                request = self._client.chat.completions.with_streaming_response.create(
                    model=self.name,
                    messages=cast(Any, _messages_payload(messages)),
                    tools=cast(Any, [t.as_ollama() for t in tools]) or openai.omit,
                    stream=True,
                    stream_options={"include_usage": True},
                    # Of Ollama's options only these have an OpenAI twin; num_ctx has none (the
                    # server's context is fixed when it starts).
                    temperature=(options or {}).get("temperature", openai.omit),
                    max_tokens=(options or {}).get("num_predict", openai.omit),
                    response_format=_response_format(format),
                )
                # Leaving the `with` (Stop, or any failure) closes the response now: the server
                # sees the connection go and stops generating.
                with request as response:
                    started = True
                    yield from _stream_events(_sse_data(response.iter_lines()), self.host)
        except httpx2.TimeoutException as exc:
            raise ProviderError(
                _("The model server at %(host)s did not answer in time.") % {"host": self.host}, reason="timeout"
            ) from exc
        except httpx2.TransportError as exc:
            if not started:
                raise ProviderError(
                    _("The model server at %(host)s cannot be reached.") % {"host": self.host}, reason="unreachable"
                ) from exc
            raise ProviderError(_("The model server closed the answer before it was finished."), reason="cut") from exc

    def info(self) -> ModelInfo:
        """The context window where the server's model list says it (vLLM: `max_model_len`,
        LM Studio: `context_length`); the protocol has no field for it. Read from the list, not
        `/v1/models/{id}`, which not every server has and which ids with a slash confuse."""
        with _translate_errors(self.host, self.name):
            listed = {m.id: m for m in self._client.models.list()}
        extra = listed[self.name].model_extra or {} if self.name in listed else {}
        length = extra.get("max_model_len") or extra.get("context_length")
        return ModelInfo(name=self.name, context_length=int(length) if length else None)


class OpenAIEmbeddingModel(_OpenAIModel):
    query_prefix = ""

    def __init__(self, model: str, *, base_url: str, timeout: float):
        super().__init__(model, base_url=base_url, timeout=timeout)
        self._dimensions: int | None = None

    @property
    def version(self) -> str:
        return ""  # the protocol has no digest: a redeployed model must get a new name

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = len(self.embed_batch(["dimension probe"])[0])
        return self._dimensions

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        with _translate_errors(self.host, self.name):
            response = self._client.embeddings.create(model=self.name, input=list(texts))
        vectors = [list(item.embedding) for item in sorted(response.data, key=lambda d: d.index)]
        if len(vectors) != len(texts):
            raise ProviderError(
                _("The model server returned %(vectors)s embeddings for %(texts)s texts.")
                % {"vectors": len(vectors), "texts": len(texts)}
            )
        self._dimensions = len(vectors[0])
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_batch([self.query_prefix + text])[0]
