"""The error hierarchy. Each error carries a sentence a user can act on; logs keep the detail."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal


def _nowhere() -> bool:
    return False


_serving_everyone: Callable[[], bool] = _nowhere


class Sentence:
    """A sentence translated in the language of whoever reads it: for errors that may be made where
    no user's language is active, by code that serves everyone (the model-stream reader,
    rag/providers/wire.py). Mark the text with `gettext_lazy`. A ProviderError made anywhere else
    translates its Sentence at once, as `_()` would have; one made there keeps it until `settled`
    in the asker's thread."""

    def __init__(self, text: Any, **params: Any):
        self.text, self.params = text, params

    def __str__(self) -> str:
        return str(self.text) % self.params if self.params else str(self.text)

    def __repr__(self) -> str:
        return repr(str(self))


def translate_when_read(serving_everyone: Callable[[], bool]) -> None:
    """`serving_everyone()` tells whether the code running now serves everyone (the model-stream
    reader's loop): errors made there keep their Sentence untranslated until `settled`."""
    global _serving_everyone
    _serving_everyone = serving_everyone


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


class NotAllowed(CurreChatError):
    """Refused for who the asker is, or is not. One code for the three kinds on purpose: a program
    tells them apart by the status only, and "not there" and "not yours" look the same (404)."""

    code = "not_allowed"


class NotFound(NotAllowed):
    status_code = 404


class Forbidden(NotAllowed):
    """The user may see the object but not do this with it (a student opening a collection's settings)."""

    status_code = 403


class NotAuthenticated(NotAllowed):
    status_code = 401


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
        lazy = isinstance(message, Sentence) and _serving_everyone()
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
