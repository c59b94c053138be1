"""Weekly token budgets: what a user's model calls cost this week, checked before every turn.

Counted from the token counts the model server reports for every call made for the user — chat
rounds, tool rounds and the curation of their searches — in Redis, so every web process and turn
thread agrees at once; each turn also adds its figures to `TokenUsage` (the statistics mirror).

Exactness under concurrency: a turn (or a curated search) starts by setting an estimate aside
(`reserve`: one Lua script checks the count plus what running work holds against the budget and
holds the estimate, so every web process agrees). Counts are added as each model call ends, taken
from what the work holds; when it ends, `UsageMeter.settle` gives back what it did not use. However
many chats a student opens at once, a budget is overshot by at most one estimate.

Two limits apply to a turn, both per week: the prompt's (`Prompt.weekly_token_budget`, or the one
a teacher gave this student, `BudgetOverride`) and the user's across all prompts
(`USER_WEEKLY_TOKEN_BUDGET`). A teacher of the prompt who exempted themselves has neither there.
The week starts at USAGE_WEEK_RESET_HOUR on USAGE_WEEK_RESET_WEEKDAY in TIME_ZONE.
"""

from __future__ import annotations

import logging
import math
import threading
import uuid
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from time import time as now_seconds
from zoneinfo import ZoneInfo

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from chat.models import BudgetOverride, Enrollment, Prompt, PromptDay, TokenUsage

# The refusal is declared where curated searches meet this meter (collections_app/metering.py).
from collections_app.metering import BudgetExhausted as BudgetExhausted
from kernel import metrics
from kernel.compiled import Compiled, first_of
from kernel.formats import moment
from kernel.outages import defer_until_redis
from kernel.redis_client import get_redis, quick_redis

log = logging.getLogger(__name__)

WARNING_SHARE = 0.9  # from this share of a budget on, the chat warns
# Work that holds part of a budget is let go after this long without a model call reporting in (its
# process died); the longest a chat turn may hold its chat (chat.turn.limits.TURN_LOCK_SECONDS).
RESERVATION_LEASE_SECONDS = 600
HELD_RETRY_SECONDS = 10  # refused because the rest of a budget is held by running work


@dataclass(frozen=True)
class Week:
    start: datetime  # aware, in TIME_ZONE
    end: datetime

    @property
    def key(self) -> str:
        return self.start.strftime("%Y%m%dT%H")

    def seconds_left(self, now: datetime | None = None) -> int:
        return max(1, math.ceil((self.end - (now or timezone.now())).total_seconds()))


def current_week(now: datetime | None = None) -> Week:
    """The budget week `now` falls in. Boundaries are wall-clock times in TIME_ZONE, so a week
    that crosses a daylight-saving change is an hour shorter or longer, as people expect."""
    zone = ZoneInfo(settings.TIME_ZONE)
    local = (now or timezone.now()).astimezone(zone)
    hour = time(settings.USAGE_WEEK_RESET_HOUR)
    start_day = local.date() - timedelta(days=(local.weekday() - settings.USAGE_WEEK_RESET_WEEKDAY) % 7)
    start = datetime.combine(start_day, hour, tzinfo=zone)
    if start > local:  # the reset day, before the reset hour: still last week
        start_day -= timedelta(days=7)
        start = datetime.combine(start_day, hour, tzinfo=zone)
    return Week(start=start, end=datetime.combine(start_day + timedelta(days=7), hour, tzinfo=zone))


def describe_reset(week: Week) -> str:
    """When the week's budgets start again, as the active language writes a moment, with the zone it
    is in: 'Mar 2, 2026, 6:00 AM (Europe/Helsinki)', '2.3.2026 klo 6.00 (Europe/Helsinki)'."""
    return moment(week.end, zone=True)


def count_key(week: Week, user_id: int, prompt_id: int | None = None) -> str:
    where = f":p{prompt_id}" if prompt_id is not None else ""
    return f"{settings.REDIS_INDEX_PREFIX}:usage:{week.key}:u{user_id}{where}"


def _expiry(week: Week) -> int:
    # Kept a day past the week, so a turn running across the reset still finds its key.
    return week.seconds_left() + 86400


# Read on every question: its SQL is compiled once (kernel/compiled.py), the row read afresh.
_OVERRIDE = Compiled(
    lambda prompt, user: first_of(BudgetOverride.objects.filter(prompt_id=prompt, user_id=user)), int, int
)


def budget_for(prompt: Prompt, user_id: int) -> tuple[int | None, bool]:
    """(the user's weekly budget in the prompt, whether they are exempt)."""
    override = _OVERRIDE.first(prompt.pk, user_id)
    if override is None:
        return prompt.weekly_token_budget, False
    if override.exempt and prompt.is_taught_by(override.user):  # exemption ends with teaching
        return None, True
    if override.weekly_token_budget is not None:
        return override.weekly_token_budget, False
    return prompt.weekly_token_budget, False


def reserve(user_id: int, prompt: Prompt | None, *, week: Week | None = None) -> UsageMeter:
    """Set an estimate of one piece of work's tokens (a chat turn, a curated search) aside from the
    user's budgets, in one atomic step with the check that they have room; returns the meter that
    counts the work's model calls and, at its end, `settle`s the estimate with the real count.

    `prompt` is the one the work is charged to (None: only the user's budget across prompts, as for
    a teacher searching their own collection). Raises BudgetExhausted (429): naming the reset time
    when a budget is used up; asking to wait when the rest of it is set aside for work still running.

    Why an estimate: counts arrive only as each model call ends, so turns started together would all
    pass a check of the count alone. With the estimate held from the start, work is let in only
    while the count plus what running work holds is below the budget, so however many chats a
    student opens at once, the budget is overshot by at most one estimate (while no piece of work
    costs more than its estimate; the costliest one this week raises the next estimates)."""
    week = week or current_week()
    budget, exempt = budget_for(prompt, user_id) if prompt is not None else (None, False)
    user_budget = None if exempt else settings.USER_WEEKLY_TOKEN_BUDGET
    meter = UsageMeter(user_id, prompt.pk if prompt is not None else None, week=week)
    if budget is None and user_budget is None:
        return meter  # no limit applies: nothing to set aside (counting goes on, for the roster and statistics)
    estimate = _estimate(week, user_id, meter.prompt_id)
    scopes = meter.scopes()
    budgets = [budget if scope is not None else user_budget for scope in scopes]
    keys = [key for scope in scopes for key in (count_key(week, user_id, scope), _held_key(week, user_id, scope))]
    now_ms = int(now_seconds() * 1000)
    args: list[str | int] = [meter.id, estimate, now_ms + RESERVATION_LEASE_SECONDS * 1000, _expiry(week), now_ms]
    args += [-1 if b is None else b for b in budgets]
    code, which = get_redis().eval(_RESERVE, len(keys), *keys, *args)
    if code:
        metrics.BUDGET_REFUSALS.inc()
        raise _refusal(int(code), scopes[int(which) - 1], week)
    meter.reserved = estimate
    return meter


def _refusal(code: int, scope: int | None, week: Week) -> BudgetExhausted:
    """The 429 of `reserve`: code 1, a budget is used up; code 2, the rest of it is set aside."""
    if code == 2:
        sentence = _(
            "Answers or searches still running for you may use the rest of your budget for this week. "
            "Try again when they have finished."
        )
        return BudgetExhausted(sentence, retry_after=HELD_RETRY_SECONDS)
    if scope is not None:
        used = _("You have used this week's allowance in this assistant.")
    else:
        used = _("You have used this week's allowance across all assistants.")
    again = _("It starts again on %(when)s.") % {"when": describe_reset(week)}
    return BudgetExhausted(f"{used} {again}", retry_after=week.seconds_left())


def _held_key(week: Week, user_id: int, prompt_id: int | None) -> str:
    """What running work holds of a budget: {meter id: "tokens:deadline in ms"}."""
    return f"{count_key(week, user_id, prompt_id)}:held"


def _largest_key(week: Week, user_id: int, prompt_id: int | None) -> str:
    return f"{count_key(week, user_id, prompt_id)}:largest"


def _estimate(week: Week, user_id: int, prompt_id: int | None) -> int:
    largest = get_redis().get(_largest_key(week, user_id, prompt_id))
    return max(settings.USAGE_RESERVE_TOKENS, int(largest or 0))


# A budget is checked against what was counted plus what running work still holds (entries past
# their deadline belonged to work whose process died: dropped here). ARGV: meter id, estimate,
# deadline, key expiry, now, then one budget per key pair (-1: none). Returns {0, 0} when the
# estimate was set aside, {1, pair} when that budget is used up, {2, pair} when it is held.
_RESERVE = """
local now = tonumber(ARGV[5])
local function held(key)
  local total, entries = 0, redis.call('HGETALL', key)
  for i = 1, #entries, 2 do
    local tokens, deadline = string.match(entries[i + 1], '(%d+):(%d+)')
    if tonumber(deadline) < now then redis.call('HDEL', key, entries[i]) else total = total + tonumber(tokens) end
  end
  return total
end
local pairs_ = #KEYS / 2
for i = 1, pairs_ do
  local budget = tonumber(ARGV[5 + i])
  if budget >= 0 then
    local spent = tonumber(redis.call('GET', KEYS[2 * i - 1]) or '0')
    if spent >= budget then return {1, i} end
    if spent + held(KEYS[2 * i]) >= budget then return {2, i} end
  end
end
for i = 1, pairs_ do
  redis.call('HSET', KEYS[2 * i], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
  redis.call('EXPIRE', KEYS[2 * i], ARGV[4])
end
return {0, 0}
"""

# One model call's tokens: added to each count, taken from what the meter still holds (never
# raised again: calls of one piece of work may report out of order; an entry already settled stays
# gone). ARGV: meter id, tokens, tokens still held (-1: the meter holds nothing), deadline, expiry.
_CONSUME = """
for i = 1, #KEYS / 2 do
  redis.call('INCRBY', KEYS[2 * i - 1], ARGV[2])
  redis.call('EXPIRE', KEYS[2 * i - 1], ARGV[5])
  local entry = redis.call('HGET', KEYS[2 * i], ARGV[1])
  if entry and tonumber(ARGV[3]) >= 0 then
    local before = tonumber(string.match(entry, '(%d+):'))
    local left = math.min(before, tonumber(ARGV[3]))
    if left > 0 then redis.call('HSET', KEYS[2 * i], ARGV[1], left .. ':' .. ARGV[4])
    else redis.call('HDEL', KEYS[2 * i], ARGV[1]) end
  end
end
return 0
"""

_RAISE_LARGEST = """
if tonumber(ARGV[1]) > tonumber(redis.call('GET', KEYS[1]) or '0') then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
end
return 0
"""


class UsageMeter:
    """Counts the tokens of one piece of work's model calls (a turn, a search) for its user, as
    each call ends, and holds what `reserve` set aside for it until `settle`.

    Callable as `meter(prompt_tokens, completion_tokens, model)` from any thread (curation calls run in a
    pool); the counters in Redis grow at once, the database mirror when `flush()` runs at the
    end of the turn. `prompt_id` None counts against the user's total only."""

    def __init__(self, user_id: int, prompt_id: int | None, *, week: Week | None = None):
        self.user_id, self.prompt_id = user_id, prompt_id
        self.week = week or current_week()
        self.id = uuid.uuid4().hex
        self.reserved = 0  # tokens `reserve` set aside; 0: none
        self.prompt_tokens = self.completion_tokens = self.calls = 0
        self._flushed = (0, 0, 0)
        self._settled = False
        self._lock = threading.Lock()
        # Whether the user is a student of the prompt (their tokens go to its statistics), when the
        # work already looked (a turn's statistics, just before its flush); None: `flush` looks.
        self.student: bool | None = None
        self._in_statistics = 0  # tokens not flushed yet that the turn's statistics already counted

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def scopes(self) -> list[int | None]:
        """The counters the work counts against: its prompt's (if any), then the user's total."""
        return [self.prompt_id, None] if self.prompt_id is not None else [None]

    def _keys(self, name=count_key) -> list[str]:
        return [name(self.week, self.user_id, scope) for scope in self.scopes()]

    def __call__(self, prompt_tokens: int, completion_tokens: int, model: str = "") -> None:
        metrics.count_tokens(model, prompt_tokens, completion_tokens)
        spent = max(0, prompt_tokens) + max(0, completion_tokens)
        with self._lock:
            self.prompt_tokens += max(0, prompt_tokens)
            self.completion_tokens += max(0, completion_tokens)
            self.calls += 1
            still_held = max(0, self.reserved - self.tokens) if self.reserved and not self._settled else -1
        if not spent:
            return
        keys = [key for pair in zip(self._keys(), self._keys(_held_key), strict=True) for key in pair]
        deadline = int(now_seconds() * 1000) + RESERVATION_LEASE_SECONDS * 1000
        args = (self.id, spent, still_held, deadline, _expiry(self.week))
        try:
            self._consume(keys, args)
        except redis.RedisError:
            # The answer goes on (a Redis blink must not end it); the count reaches Redis as soon as
            # it answers again, and `flush` stores it in the database meanwhile.
            log.warning("Token counts of user %s wait for Redis", self.user_id)
            defer_until_redis(lambda: self._consume(keys, args))

    @staticmethod
    def _consume(keys: list[str], args: tuple) -> None:
        # One script: the spent count and what the work still holds change together or not at all.
        quick_redis().eval(_CONSUME, len(keys), *keys, *args)

    def settle(self) -> None:
        """The work ended: what it held and did not use goes back to the budgets, and its real cost
        raises the next estimates if it was the costliest this week. Never raises: while Redis is
        away the release waits for it (kernel/outages.defer_until_redis); an entry left behind by a
        process that died lapses after RESERVATION_LEASE_SECONDS."""
        with self._lock:
            if self._settled:
                return
            self._settled = True
        try:
            self._release()
        except redis.RedisError:
            log.warning("Tokens set aside for user %s go back when Redis answers", self.user_id)
            defer_until_redis(self._release)
        except Exception:  # noqa: BLE001  (the budget stays right; only the estimate lapses later)
            log.warning("Could not settle the tokens set aside for user %s", self.user_id, exc_info=True)

    def _release(self) -> None:
        if self.reserved:
            pipe = quick_redis().pipeline(transaction=False)
            for key in self._keys(_held_key):
                pipe.hdel(key, self.id)
            pipe.execute()
        if self.tokens > settings.USAGE_RESERVE_TOKENS:
            largest = _largest_key(self.week, self.user_id, self.prompt_id)
            quick_redis().eval(_RAISE_LARGEST, 1, largest, self.tokens, _expiry(self.week))

    def flush(self, day: date | None = None) -> None:
        """Add what was counted since the last flush to this week's TokenUsage row and, for a
        student of the prompt, to today's tokens in its statistics (work charged to no prompt has
        none). The statistics count these same model calls, so a student's tokens there and against
        their budget agree: chat rounds, tool rounds and the curation of their searches alike.
        `day` is the day the calls were made (today unless given)."""
        with self._lock:
            now = (self.prompt_tokens, self.completion_tokens, self.calls)
            delta = [a - b for a, b in zip(now, self._flushed, strict=True)]
            self._flushed = now
            in_statistics, self._in_statistics = self._in_statistics, 0
        if not any(delta) or self.prompt_id is None:
            return
        tokens = delta[0] + delta[1] - in_statistics
        to_day = bool(tokens or not in_statistics) and self._is_student(self.prompt_id)
        # The week's row and today's change together; a turn's flush, whose tokens went to today's
        # row with its statistics, makes one UPDATE: no transaction to open (issue 44).
        with transaction.atomic() if to_day else nullcontext():
            week = TokenUsage.objects.filter(user_id=self.user_id, prompt_id=self.prompt_id, week_start=self.week.start)
            added = {
                "prompt_tokens": F("prompt_tokens") + delta[0],
                "completion_tokens": F("completion_tokens") + delta[1],
                "calls": F("calls") + delta[2],
            }
            if not week.update(**added):  # the week's first call: its row, made with the figures
                self._first_of_week(week, added, delta)
            if to_day:
                PromptDay.add(self.prompt_id, day or timezone.localdate(), tokens=tokens)

    def _first_of_week(self, week, added: dict, delta: list[int]) -> None:
        """The week's row, inserted with the figures: not read, made empty and updated (two
        statements fewer on a student's first question of a week, issue 44). Another process that
        made it first (the unique constraint) gets the UPDATE after all."""
        try:
            # Its own transaction, or a savepoint in the statistics' one: a refused INSERT spoils neither.
            with transaction.atomic():
                TokenUsage.objects.create(
                    user_id=self.user_id,
                    prompt_id=self.prompt_id,
                    week_start=self.week.start,
                    prompt_tokens=delta[0],
                    completion_tokens=delta[1],
                    calls=delta[2],
                )
        except IntegrityError:
            week.update(**added)

    def unflushed_tokens(self) -> int:
        with self._lock:
            return self.tokens - self._flushed[0] - self._flushed[1]

    def counted_in_statistics(self, tokens: int) -> None:
        """`tokens` of those not flushed yet went to today's statistics with the turn's own counts
        (chat/insight/stats.record_answer): `flush` leaves them out there, not from the week's row."""
        with self._lock:
            self._in_statistics += tokens

    def _is_student(self, prompt_id: int) -> bool:
        if self.student is None:
            self.student = Enrollment.objects.filter(prompt_id=prompt_id, student_id=self.user_id).exists()
        return self.student


RESET_SCRIPT = """
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('DEL', KEYS[1])
if spent > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DECRBY', KEYS[2], math.min(spent, tonumber(redis.call('GET', KEYS[2]))))
end
return spent
"""
