"""Sliding-window rate limits kept in Redis, so every web process and worker counts together.

One window is a sorted set of event times under one key. `SlidingWindow.hit` records an event
unless the window is full; `check` only asks whether it is full (for login, where only failures
count, see currechat/views.py); `clear` forgets a key (a successful login forgives the failures
of that account). A refusal is `RateLimited` (429) with `retry_after` seconds, which the API and
the pages send as a `Retry-After` header.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from django.conf import settings
from django.utils.translation import gettext as _

from kernel.errors import CurreChatError, NotFound
from kernel.formats import number
from kernel.redis_client import get_redis

T = TypeVar("T")


class RateLimited(CurreChatError):
    status_code = 429
    code = "rate_limited"
    retryable = True

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


# Atomically: drop the times that left the window, then either refuse (returning the oldest time
# still in it, so the caller can say when a slot frees) or, when ARGV[4] is not empty, record one.
_SCRIPT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1] - ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
end
if ARGV[4] ~= '' then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 1)
end
return false
"""


@dataclass(frozen=True)
class SlidingWindow:
    """At most `limit` events per `window` seconds per key; `limit` 0 turns the limit off.

    The window slides, so "N in the last W seconds" is true at every moment (a fixed window lets
    twice the limit through around its boundary). A refused event is not counted. One round trip.
    """

    name: str
    limit: int
    window: int
    message: str  # formatted with {limit}, {window} and {retry_after}

    def key(self, who: object) -> str:
        return f"{settings.REDIS_INDEX_PREFIX}:rate:{self.name}:{who}"

    def hit(self, who: object) -> None:
        """Count one event for `who`, or raise RateLimited when the window is already full."""
        self._run(who, record=True)

    def check(self, who: object) -> None:
        """Raise RateLimited when the window of `who` is full; count nothing."""
        self._run(who, record=False)

    def clear(self, who: object) -> None:
        get_redis().delete(self.key(who))

    def _run(self, who: object, *, record: bool) -> None:
        if self.limit <= 0:
            return
        now = time.time()
        member = f"{time.time_ns()}:{uuid.uuid4().hex}" if record else ""
        oldest = get_redis().eval(_SCRIPT, 1, self.key(who), repr(now), self.window, self.limit, member)
        if oldest is not None:
            retry_after = max(1, math.ceil(float(oldest) + self.window - now))
            raise RateLimited(
                self.message.format(
                    limit=number(self.limit), window=number(self.window), retry_after=number(retry_after)
                ),
                retry_after=retry_after,
            )


def client_address(request) -> str:
    """The address a request came from. Behind a proxy (CLIENT_IP_HEADER, e.g. X-Forwarded-For),
    the right-most address the proxy appended; otherwise the socket's peer."""
    header = settings.CLIENT_IP_HEADER
    if header:
        forwarded = request.META.get("HTTP_" + header.upper().replace("-", "_"), "")
        hops = [hop.strip() for hop in forwarded.split(",") if hop.strip()]
        if hops:
            return hops[-1]
    return request.META.get("REMOTE_ADDR") or "unknown"


def _window(name: str, message: str) -> SlidingWindow:
    limit, window = getattr(settings, f"RATE_{name.upper()}")
    return SlidingWindow(name, limit, window, message)


# The sentences are translated when a window is made, in the language of the request at hand.
def login_by_account() -> SlidingWindow:
    return _window("login_account", _("Too many failed logins for this account. Try again in {retry_after} seconds."))


def login_by_address() -> SlidingWindow:
    return _window("login_address", _("Too many failed logins from your network. Try again in {retry_after} seconds."))


def signup_by_address() -> SlidingWindow:
    return _window("signup_address", _("Too many new accounts from your network. Try again in {retry_after} seconds."))


def join_by_address() -> SlidingWindow:
    return _window(
        "join_address", _("Too many join-code attempts from your network. Try again in {retry_after} seconds.")
    )


def reset_by_address() -> SlidingWindow:
    return _window(
        "reset_address", _("Too many password reset requests from your network. Try again in {retry_after} seconds.")
    )


def reset_by_email() -> SlidingWindow:
    return _window(
        "reset_email", _("Too many password reset requests for this address. Try again in {retry_after} seconds.")
    )


def address_confirmation_by_user() -> SlidingWindow:
    """Links asked for to confirm one's address (RATE_ADDRESS_CONFIRMATION): each is a mail to an
    address the asker typed, so nobody can use CurreChat to flood someone's mailbox."""
    return _window(
        "address_confirmation",
        _("Too many confirmation links asked for. Try again in {retry_after} seconds."),
    )


def teacher_lookup_by_user() -> SlidingWindow:
    """A teacher's look-ups of other teachers in the co-teacher picker (RATE_TEACHER_LOOKUP)."""
    return _window(
        "teacher_lookup",
        _(
            "You have looked up teachers {limit} times in the last {window} seconds, the most allowed. "
            "Try again in {retry_after} seconds."
        ),
    )


def search_by_user() -> SlidingWindow:
    """A person's curated searches in the pages (and their test questions)."""
    return search_window(curated=True, by_program=False)


def search_window(*, curated: bool, by_program: bool) -> SlidingWindow:
    """The search allowance a search counts against, per user: a program with an API token has its
    own, so it cannot use up the one of its owner's pages; a search without curation asks no model
    and costs little, so it has its own, larger one (RATE_SEARCH_USER[_UNCURATED] for the pages,
    RATE_SEARCH_TOKEN[_UNCURATED] for programs)."""
    name = ("search_token" if by_program else "search_user") + ("" if curated else "_uncurated")
    if by_program:
        message = _(
            "Your programs (API tokens) have run {limit} such searches in the last {window} seconds, the most "
            "allowed. Try again in {retry_after} seconds."
        )
    else:
        message = _(
            "You have run {limit} searches in the last {window} seconds, the most allowed. "
            "Try again in {retry_after} seconds."
        )
    return _window(name, message)


def limit_failures(window: SlidingWindow, who: object, attempt: Callable[[], T], *, failure=NotFound) -> T:
    """Run `attempt` unless `who` already used up `window` with failures; a `failure` it raises
    counts one (guessing join codes is what this stops; the successes of a class behind one
    school address count nothing)."""
    window.check(who)
    try:
        return attempt()
    except failure:
        with contextlib.suppress(RateLimited):
            window.hit(who)
        raise
