"""What a streamed model answer is, between the providers, the process's reader (`wire`) and the
HTTP client that reads it (`http1`): the request, the protocol's decoder and refusal, and what the
client needs of a reading. Its own module, below both, so the client imports it plainly and the
reader and the client do not import each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kernel.errors import ProviderError
from rag.providers.base import ChatEvent


@dataclass(frozen=True)
class Request:
    url: str  # absolute http(s) URL
    body: bytes  # JSON
    headers: tuple[tuple[str, str], ...]
    connect_timeout: float
    read_timeout: float  # the longest silence allowed while the answer is awaited or streams
    host: str  # the server as the sentences name it (OLLAMA_HOST, OPENAI_BASE_URL)


class Decoder(Protocol):
    """A protocol's reading of one streamed reply, line by line (without the line's end)."""

    finished: bool  # the reply said it is complete: what follows is not read

    def line(self, line: str) -> Iterable[ChatEvent]:
        """The events of one line; raises ProviderError when the server reports an error."""
        ...

    def end(self) -> Iterable[ChatEvent]:
        """The last events, at the reply's end; raises ProviderError when it was cut short."""
        ...


class Refusal(Protocol):
    def __call__(self, status: int, body: str) -> ProviderError:
        """A non-200 answer as the protocol's sentence."""
        ...


class Abandoned(Exception):  # noqa: N818 — the reader closed the stream; not an error to report
    pass


class Reading(Protocol):
    """One request as the HTTP client reads it (`wire._Reading`): its events go on through
    `deliver`, and it ends once, with `finish` or `fail`."""

    request: Request
    raw: bytes  # the request as sent
    decoder: Decoder
    refusal: Refusal
    over: bool  # the answer ended (complete, failed or abandoned)
    sent_again: bool  # once, on a new connection, after one closed before answering
    connection: Any  # the client's connection reading it, for dropping it when abandoned

    def deliver(self, events: Iterable[ChatEvent]) -> None:
        """Hand the events on; raises `Abandoned` when nobody reads them any more."""
        ...

    def finish(self) -> None: ...

    def fail(self, error: BaseException) -> None: ...
