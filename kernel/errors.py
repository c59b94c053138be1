"""The error hierarchy. Each error carries a sentence a user can act on; logs keep the detail."""

from __future__ import annotations

import threading
from typing import Any, Literal

_thread = threading.local()


class Sentence:
    """A sentence translated in the language of the thread that reads it: for errors that may be
    made on a thread serving everyone, with no user's language (the model-stream reader,
    rag/providers/wire.py). Mark the text with `gettext_lazy`. A ProviderError made on any other
    thread translates its Sentence at once, as `_()` would have; one made on such a thread keeps it
    until `settled` in the asker's thread."""

    def __init__(self, text: Any, **params: Any):
        self.text, self.params = text, params

    def __str__(self) -> str:
        return str(self.text) % self.params if self.params else str(self.text)

    def __repr__(self) -> str:
        return repr(str(self))


def translate_when_read() -> None:
    """Called by a thread that serves everyone: errors made on it keep their Sentence untranslated."""
    _thread.lazy = True


def settled(error: BaseException) -> BaseException:
    """`error`, its Sentence translated in this thread's language (it was made on one that serves everyone)."""
    if error.args and isinstance(error.args[0], Sentence):
        error.args = (str(error.args[0]), *error.args[1:])
    return error


class CurreChatError(Exception):
    """Base class. `str(error)` is shown to users, so write it as a sentence they can act on.

    `status_code` is its HTTP status, `code` its machine-readable name (the `code` of websocket
    `error` events and of API error bodies), `retryable` whether the same request may succeed later.
    """

    status_code = 400
    code = "bad_request"
    retryable = False


class NotFound(CurreChatError):
    status_code = 404
    code = "not_allowed"  # to the asker, "not there" and "not yours" look the same on purpose


class Forbidden(CurreChatError):
    """The user may see the object but not do this with it (a student opening a collection's settings)."""

    status_code = 403
    code = "not_allowed"


class NotAuthenticated(CurreChatError):
    status_code = 401
    code = "not_allowed"


class Conflict(CurreChatError):
    status_code = 409
    code = "conflict"


class ServiceUnavailable(CurreChatError):
    """A backing service (Redis, the model server) cannot be reached right now."""

    status_code = 503
    code = "unavailable"
    retryable = True


class ProviderError(CurreChatError):
    """A model server failed. `retryable` says whether trying again may help; `reason` says what
    kind of failure it was, so that people who should not see the server's address and its own
    words (students) can be told in plain language (chat.turn.agent)."""

    status_code = 503
    code = "model_failed"

    def __init__(
        self,
        message: str | Sentence,
        *,
        retryable: bool = True,
        reason: Literal["failed", "timeout", "unreachable", "unreadable", "cut", "missing"] = "failed",
    ):
        lazy = isinstance(message, Sentence) and getattr(_thread, "lazy", False)
        super().__init__(message if lazy else str(message))
        self.retryable = retryable
        self.reason = reason


class ModelMissing(ProviderError):
    """The model server answers but does not have the model asked for (it was removed or renamed):
    the sentence names the server and model for teachers and logs; students get a plain one."""

    code = "model_missing"

    def __init__(self, message: str | Sentence):
        super().__init__(message, retryable=False, reason="missing")


class InvalidInput(CurreChatError):
    """A value a user gave breaks a rule. `field` names the form field or API property it came from."""

    status_code = 400
    code = "invalid"

    def __init__(self, message: str, *, field: str | None = None):
        super().__init__(message)
        self.field = field
