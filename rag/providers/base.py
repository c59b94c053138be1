"""The provider interfaces and the plain records that cross them."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Self

from django.utils.translation import gettext as _

from kernel.errors import CurreChatError, ProviderError

log = logging.getLogger(__name__)

LIST_TIMEOUT = 2.0  # seconds to list a server's models: a status check must not hang a page on a dead server


class UnknownModel(CurreChatError):
    """A model name no provider serves (a 400 at the API)."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]

    def as_ollama(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model asked for it.

    `arguments` is the object the model sent; when what it sent cannot be used as one (text that
    is not JSON, a list), it is kept as sent and `problem` says what is wrong. A bad call is not a
    failed turn: the tool answers it with `problem`, and the model calls again in its next round.
    Providers build calls with `from_wire`, so both protocols judge arguments the same way."""

    id: str
    name: str
    arguments: Any
    problem: str = ""

    @classmethod
    def from_wire(cls, id: str, name: str, arguments: Any) -> ToolCall:
        """A call from a protocol's arguments: an object, JSON text of one (OpenAI always, some
        Ollama-protocol servers too), or anything else a model or server got wrong."""
        parsed, problem = parse_arguments(arguments)
        return cls(id=id, name=name, arguments=parsed, problem=problem)


_JSON_KINDS = {list: "a list", str: "a string", bool: "true or false", int: "a number", float: "a number"}


def parse_arguments(raw: Any) -> tuple[Any, str]:
    """(the arguments as an object, "") or (`raw` as sent, what is wrong with it).

    No arguments at all is an empty object: the tool then names the argument that is missing."""
    value = raw
    if isinstance(raw, str):
        if not raw.strip():
            return {}, ""
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return raw, f"the arguments were not valid JSON ({exc.msg} at character {exc.pos})"
    if value is None:
        return {}, ""
    if isinstance(value, dict):
        return value, ""
    kind = _JSON_KINDS.get(type(value), type(value).__name__)
    return raw, f"the arguments were {kind}, not a JSON object"


@dataclass(frozen=True)
class ChatMessage:
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_name: str | None = None
    images: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolCallEvent:
    call: ToolCall


@dataclass(frozen=True)
class Done:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tool_calls: tuple[ToolCall, ...] = field(default=())


@dataclass(frozen=True)
class Waiting:
    """Nothing has arrived for a while (the model is reading the prompt, or writing a tool call).
    Carries nothing: it lets whoever reads the stream check its own reasons to stop (a student's
    Stop, a cancelled file, a server shutting down) while the model is silent."""


ChatEvent = TextDelta | ToolCallEvent | Done | Waiting

# Where a stream's text goes when the caller takes it as it arrives (`ChatModel.stream(on_text=)`).
TextSink = Callable[[str], None]

# Told (prompt_tokens, completion_tokens, model name) of each model call made for someone, from any
# thread: how the app counts a user's tokens (chat/course/usage.py) through library code that knows no app.
UsageSink = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ModelInfo:
    name: str
    context_length: int | None


class Provider(Protocol):
    """How the registry builds any model class and asks which models its server has.

    Every provider class (chat or embedding) is built the same way, from its model name (the
    part after `<provider>:`) and the settings, so adding a provider is one class and one
    registry entry. A provider's chat and embedding classes share one server, hence one list."""

    @classmethod
    def from_name(cls, model: str, *, timeout: float | None = None) -> Self:
        """The model `model`; `timeout` (seconds) overrides the provider's default where it has one.
        Raises UnknownModel for a name the provider can never serve; never contacts a server."""
        ...

    @classmethod
    def list_models(cls) -> list[str]:
        """The models it can serve now, by their names after `<provider>:`, as its server lists them
        (none when no server is configured). Asks every time, within LIST_TIMEOUT: the registry keeps
        the list (`available_models`). Raises ProviderError when the server cannot be reached or
        its answer cannot be read."""
        ...

    @classmethod
    def serves(cls, listed: Sequence[str], model: str) -> bool:
        """Whether the name `model` is one of `listed` (what `list_models` gave): a provider knows
        which spellings of a name mean the same model."""
        ...


class ChatModel(Protocol):
    """A chat or vision-language model.

    `stream()` yields `TextDelta`s as they arrive, a `ToolCallEvent` per tool call, `Waiting`
    while nothing arrives, and ends with one `Done`. It raises `ProviderError` (with `retryable`)
    when the server fails, also mid-stream. Closing the iterator ends the request at once.

    With `on_text`, the text is not yielded: each piece goes to `on_text` as soon as it arrives, in
    order, possibly from another thread (the process's stream reader, `rag/providers/wire.py`), and
    always before the events that follow it are yielded; never after the iterator was closed. So
    the caller's thread wakes only for tool calls, `Done`, `Waiting` and errors, not per token. An
    exception raised by `on_text` ends the request, and the iterator raises it.

    A provider subclasses it and writes `_stream` (and `info`): `stream()` and `complete()` are
    written here once, their keywords handed on as one `StreamOptions`.
    """

    name: str

    def stream(
        self,
        messages: Sequence[ChatMessage],
        *,
        tools: Sequence[ToolSpec] = (),
        format: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        on_text: TextSink | None = None,
    ) -> Iterator[ChatEvent]:
        return self._stream(messages, StreamOptions(tools, format, options, on_text))

    def _stream(self, messages: Sequence[ChatMessage], asked: StreamOptions) -> Iterator[ChatEvent]:
        raise NotImplementedError

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        format: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
    ) -> str:
        """The whole reply as one string (for structured output, the JSON text)."""
        parts: list[str] = []  # gathered as the text arrives: this thread wakes once, at the end
        for _event in self._stream(messages, StreamOptions(format=format, options=options, on_text=parts.append)):
            pass
        return "".join(parts)

    def info(self) -> ModelInfo: ...


class EmbeddingModel(Protocol):
    """Turns texts into vectors. Documents and queries may need different prefixes."""

    name: str

    @property
    def dimensions(self) -> int: ...

    @property
    def version(self) -> str:
        """What identifies the weights behind the name ("" if nothing can): a model pulled again
        under the same name gives different vectors, which must not meet cached ones."""
        ...

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def text_to(events: Iterator[ChatEvent], on_text: TextSink | None) -> Iterator[ChatEvent]:
    """`stream(on_text=)` for a provider that reads its stream in the caller's thread: the text
    goes to `on_text` here, the other events are yielded."""
    if on_text is None:
        yield from events
        return
    for event in events:
        if isinstance(event, TextDelta):
            on_text(event.text)
        else:
            yield event


@dataclass(frozen=True)
class StreamOptions:
    """What one `stream()` call asks beyond the messages (its keywords, as one value)."""

    tools: Sequence[ToolSpec] = ()
    format: dict[str, Any] | None = None  # a JSON schema the reply must follow
    options: dict[str, Any] | None = None  # Ollama's model options (temperature, num_predict, num_ctx)
    on_text: TextSink | None = None


class Embeddings:
    """An embedding model's `embed_batch`, `embed_query` and `dimensions`, written once: the provider
    embeds a non-empty list in `_embed`; a reply with another number of vectors is refused, and the
    vectors' length is the model's dimensions (asked with a probe when no batch told it yet)."""

    name: str
    query_prefix: str = ""
    _dimensions: int | None = None

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = len(self.embed_batch(["dimension probe"])[0])
        return self._dimensions

    def _embed(self, texts: list[str]) -> list[list[float]]:
        raise NotImplementedError

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._embed(list(texts))
        if len(vectors) != len(texts):
            raise ProviderError(
                _("The model server returned %(vectors)s embeddings for %(texts)s texts.")
                % {"vectors": len(vectors), "texts": len(texts)}
            )
        self._dimensions = len(vectors[0])
        return vectors

    def embed_query(self, text: str) -> list[float]:
        return self.embed_batch([self.query_prefix + text])[0]
