"""How a model server's failures are told: the same sentences for every protocol and path.

Some are made on the process's model-stream reader (rag/providers/wire.py), a thread with no
user's language: they are `Sentence`s, translated in the language of whoever reads them.
"""

from __future__ import annotations

import logging
import ssl
from typing import Any

from django.utils.translation import gettext_lazy

from kernel.addresses import redact_url
from kernel.errors import ProviderError, Sentence

log = logging.getLogger(__name__)

# Lines (events) of one reply that may be skipped as unreadable before the stream is taken for
# something other than a model server's (a proxy's error page, the wrong port).
MAX_UNREADABLE_LINES = 3


class UnreadableLines:
    """Skips a streamed reply's unreadable lines, both protocols alike. Each line (event) stands
    alone, so skipping one costs a token, while ending the reply would throw away an answer the
    student is already reading; more than MAX_UNREADABLE_LINES mean the other end is not a model
    server's stream at all, and the reply ends with `failure`, a sentence saying what to check
    (marked with `gettext_lazy`; `%(host)s` in it is the server's address without credentials)."""

    def __init__(self, host: str, failure: Any):
        self.host, self.count = redact_url(host), 0
        self.failure = Sentence(failure, host=self.host)

    def skip(self, raw: object) -> None:
        self.count += 1
        log.warning("Skipped an unreadable line from the model server at %s: %.200r", self.host, raw)
        if self.count > MAX_UNREADABLE_LINES:
            raise ProviderError(self.failure, reason="unreadable")


# The sentences of a failed connection, the same for every protocol; they name the server without
# the credentials its address may carry (kernel/addresses.py). Made on the reader's thread,
# which has no user's language, they are translated when read (`Sentence`), in the asker's.
def unreachable(host: str) -> ProviderError:
    sentence = Sentence(gettext_lazy("The model server at %(host)s cannot be reached."), host=redact_url(host))
    return ProviderError(sentence, reason="unreachable")


def untrusted(host: str) -> ProviderError:
    sentence = Sentence(
        gettext_lazy(
            "The certificate of the model server at %(host)s is not trusted. If your organisation's own "
            "certificate authority signed it, the administrator sets MODEL_SERVER_CA_FILE to that "
            "authority's certificate."
        ),
        host=redact_url(host),
    )
    return ProviderError(sentence, reason="unreachable")


def connection_failure(exc: BaseException, host: str) -> ProviderError:
    """A connection that could not be made (by the reader, or by httpx under the `ollama` and `openai`
    clients): the certificate's fault when its TLS verification failed, itself or somewhere in the
    chain of causes, else the server is unreachable."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return untrusted(host)
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return unreachable(host)


def timed_out(host: str) -> ProviderError:
    return ProviderError(
        Sentence(gettext_lazy("The model server at %(host)s did not answer in time."), host=redact_url(host)),
        reason="timeout",
    )


def not_http(host: str) -> ProviderError:
    sentence = Sentence(
        gettext_lazy("The model server at %(host)s sent an answer that is not HTTP; check its address."),
        host=redact_url(host),
    )
    return ProviderError(sentence, reason="unreadable")


def cut() -> ProviderError:
    sentence = Sentence(gettext_lazy("The model server closed the answer before it was finished."))
    return ProviderError(sentence, reason="cut")


def failed(error: object, *, retryable: bool = True) -> ProviderError:
    """The server's own report of a failure, mid-answer or as its refusal."""
    sentence = Sentence(gettext_lazy("The model server failed: %(error)s."), error=error)
    return ProviderError(sentence, retryable=retryable)


def reader_stopped() -> ProviderError:
    """The loop that read the answer stopped under it: its process is shutting down."""
    sentence = Sentence(gettext_lazy("This server stopped reading the answer as it shut down. Ask again."))
    return ProviderError(sentence, reason="cut")
