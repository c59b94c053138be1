"""Weekly token budgets: what a user's model calls cost this week, checked before every turn.

Counted from the token counts the model server reports for every call made for the user — chat
rounds, tool rounds and the curation of their searches — in Redis, so every web process and turn
thread agrees at once; each turn also adds its figures to `TokenUsage` (the statistics mirror).

Exactness under concurrency: a turn is refused when, at its start, the user's counter has reached
the budget (one atomic read). Counts are added as each model call ends (one INCRBY pipeline), so a
budget is exceeded by at most what the turns already running when it was reached go on to use.

Two limits apply to a turn, both per week: the prompt's (`Prompt.weekly_token_budget`, or the one
a teacher gave this student, `BudgetOverride`) and the user's across all prompts
(`USER_WEEKLY_TOKEN_BUDGET`). A teacher of the prompt who exempted themselves has neither there.
The week starts at USAGE_WEEK_RESET_HOUR on USAGE_WEEK_RESET_WEEKDAY in TIME_ZONE.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import dateformat, timezone
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from chat.models import BudgetOverride, Prompt, TokenUsage
from currechat import metrics
from currechat.errors import CurreChatError, InvalidInput
from currechat.redis_client import get_redis

WARNING_SHARE = 0.9  # from this share of a budget on, the chat warns


class BudgetExhausted(CurreChatError):
    status_code = 429
    code = "budget_exhausted"
    retryable = True

    def __init__(self, message: str, *, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


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
    """'Monday 2 March at 00:00 (Europe/Helsinki)', in the active language ('2. maaliskuuta klo
    0.00 (maanantai)')."""
    # A date format (Django's letters: l weekday, j day, F/E month, H/G hour, i minutes) per language.
    shape = pgettext("the moment a weekly budget starts again, as a Django date format", r"l j F \a\t H:i")
    return f"{dateformat.format(week.end, shape)} ({settings.TIME_ZONE})"


def _key(week: Week, user_id: int, prompt_id: int | None = None) -> str:
    where = f":p{prompt_id}" if prompt_id is not None else ""
    return f"{settings.REDIS_INDEX_PREFIX}:usage:{week.key}:u{user_id}{where}"


def _expiry(week: Week) -> int:
    # Kept a day past the week, so a turn running across the reset still finds its key.
    return week.seconds_left() + 86400


@dataclass(frozen=True)
class Allowance:
    """One user's standing in one prompt this week. A budget of None means no limit."""

    week: Week
    used: int  # counted against the prompt's budget (a teacher's reset starts it again)
    budget: int | None
    total_used: int  # across all prompts
    total_budget: int | None
    exempt: bool = False

    @property
    def exhausted(self) -> str | None:
        """Which limit is reached ('prompt' or 'user'), or None."""
        if self.exempt:
            return None
        if self.budget is not None and self.used >= self.budget:
            return "prompt"
        if self.total_budget is not None and self.total_used >= self.total_budget:
            return "user"
        return None

    @property
    def warning(self) -> bool:
        """From WARNING_SHARE of either limit on."""
        if self.exempt:
            return False
        shares = [u / b for u, b in ((self.used, self.budget), (self.total_used, self.total_budget)) if b]
        return any(share >= WARNING_SHARE for share in shares) or self.exhausted is not None

    def as_dict(self) -> dict:
        return {
            "week_resets_at": self.week.end.isoformat(),
            "used": self.used,
            "budget": self.budget,
            "total_used": self.total_used,
            "total_budget": self.total_budget,
            "exempt": self.exempt,
            "warning": self.warning,
            "exhausted": self.exhausted is not None,
        }


def usage_sentence(standing: Allowance) -> str:
    """The chat's usage line: '12,300 of 50,000 tokens this week', with what is left near the end."""
    n = {
        "used": number_format(standing.used, force_grouping=True),
        "budget": number_format(standing.budget or 0, force_grouping=True),
        "total_used": number_format(standing.total_used, force_grouping=True),
        "total_budget": number_format(standing.total_budget or 0, force_grouping=True),
    }
    if standing.exempt:
        return _("%(used)s tokens this week (you are exempt from this assistant's budget).") % n
    if standing.budget is not None:
        text = _("%(used)s of %(budget)s tokens this week") % n
    else:
        text = _("%(used)s tokens this week") % n
    if standing.total_budget is not None:
        text += " " + _("(%(total_used)s of %(total_budget)s across all assistants)") % n
    when = {"when": describe_reset(standing.week)}
    if standing.exhausted:
        return f"{text}. " + _("Your budget is used up; it starts again on %(when)s.") % when
    if standing.warning:
        return f"{text}. " + _("You are near your weekly budget; it starts again on %(when)s.") % when
    return f"{text}."


def budget_for(prompt: Prompt, user_id: int) -> tuple[int | None, bool]:
    """(the user's weekly budget in the prompt, whether they are exempt)."""
    override = BudgetOverride.objects.filter(prompt=prompt, user_id=user_id).first()
    if override is None:
        return prompt.weekly_token_budget, False
    if override.exempt and prompt.is_taught_by(override.user):  # exemption ends with teaching
        return None, True
    if override.weekly_token_budget is not None:
        return override.weekly_token_budget, False
    return prompt.weekly_token_budget, False


def allowance(
    user_id: int, prompt: Prompt, *, week: Week | None = None, limits: tuple[int | None, bool] | None = None
) -> Allowance:
    """`limits` is `budget_for`'s answer when the caller has it already."""
    week = week or current_week()
    budget, exempt = limits or budget_for(prompt, user_id)
    used, total = get_redis().mget([_key(week, user_id, prompt.pk), _key(week, user_id)])
    return Allowance(
        week=week,
        used=int(used or 0),
        budget=budget,
        total_used=int(total or 0),
        total_budget=settings.USER_WEEKLY_TOKEN_BUDGET,
        exempt=exempt,
    )


def check_budget(user_id: int, prompt: Prompt) -> None:
    """Raise BudgetExhausted (429, naming the reset time) when a limit is reached."""
    limits = budget_for(prompt, user_id)
    if limits[1] or (limits[0] is None and settings.USER_WEEKLY_TOKEN_BUDGET is None):
        return  # no limit applies: no counter to read (counting goes on, for the roster and statistics)
    standing = allowance(user_id, prompt, limits=limits)
    which = standing.exhausted
    if which is not None:
        spent = standing.budget if which == "prompt" else standing.total_budget
        if which == "prompt":
            used = _("You have used your %(spent)s tokens for this week in this assistant.")
        else:
            used = _("You have used your %(spent)s tokens for this week across all assistants.")
        again = _("Your budget starts again on %(when)s.") % {"when": describe_reset(standing.week)}
        metrics.BUDGET_REFUSALS.inc()
        raise BudgetExhausted(
            f"{used % {'spent': f'{spent:,}'}} {again}",
            retry_after=standing.week.seconds_left(),
        )


def check_user_budget(user_id: int) -> None:
    """Raise BudgetExhausted when the user's budget across all prompts (USER_WEEKLY_TOKEN_BUDGET)
    is spent: for model calls made outside any prompt (curated test-question runs)."""
    if settings.USER_WEEKLY_TOKEN_BUDGET is None:
        return
    week = current_week()
    used = int(get_redis().get(_key(week, user_id)) or 0)
    if used >= settings.USER_WEEKLY_TOKEN_BUDGET:
        spent = f"{settings.USER_WEEKLY_TOKEN_BUDGET:,}"
        used_sentence = _("You have used your %(spent)s tokens for this week across all assistants.")
        again = _("Your budget starts again on %(when)s.") % {"when": describe_reset(week)}
        metrics.BUDGET_REFUSALS.inc()
        raise BudgetExhausted(f"{used_sentence % {'spent': spent}} {again}", retry_after=week.seconds_left())


class UsageMeter:
    """Counts the tokens of one turn's model calls for its user, as each call ends.

    Callable as `meter(prompt_tokens, completion_tokens, model)` from any thread (curation calls run in a
    pool); the counters in Redis grow at once, the database mirror when `flush()` runs at the
    end of the turn."""

    def __init__(self, user_id: int, prompt_id: int | None, *, week: Week | None = None):
        self.user_id, self.prompt_id = user_id, prompt_id
        self.week = week or current_week()
        self.prompt_tokens = self.completion_tokens = self.calls = 0
        self._flushed = (0, 0, 0)
        self._lock = threading.Lock()

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __call__(self, prompt_tokens: int, completion_tokens: int, model: str = "") -> None:
        metrics.count_tokens(model, prompt_tokens, completion_tokens)
        spent = max(0, prompt_tokens) + max(0, completion_tokens)
        with self._lock:
            self.prompt_tokens += max(0, prompt_tokens)
            self.completion_tokens += max(0, completion_tokens)
            self.calls += 1
        if not spent:
            return
        pipe = get_redis().pipeline(transaction=False)
        # Without a prompt (a teacher's curated test-question run) only the user's total counts.
        for key in dict.fromkeys((_key(self.week, self.user_id, self.prompt_id), _key(self.week, self.user_id))):
            pipe.incrby(key, spent)
            pipe.expire(key, _expiry(self.week))
        pipe.execute()

    def flush(self) -> None:
        """Add what was counted since the last flush to this week's TokenUsage row."""
        if self.prompt_id is None:  # TokenUsage is per prompt; the Redis counter holds the rest
            return
        with self._lock:
            now = (self.prompt_tokens, self.completion_tokens, self.calls)
            delta = [a - b for a, b in zip(now, self._flushed, strict=True)]
            self._flushed = now
        if not any(delta):
            return
        with transaction.atomic():
            row, _ = TokenUsage.objects.get_or_create(
                user_id=self.user_id, prompt_id=self.prompt_id, week_start=self.week.start
            )
            TokenUsage.objects.filter(pk=row.pk).update(
                prompt_tokens=F("prompt_tokens") + delta[0],
                completion_tokens=F("completion_tokens") + delta[1],
                calls=F("calls") + delta[2],
            )


_RESET_SCRIPT = """
local spent = tonumber(redis.call('GET', KEYS[1]) or '0')
redis.call('DEL', KEYS[1])
if spent > 0 and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('DECRBY', KEYS[2], math.min(spent, tonumber(redis.call('GET', KEYS[2]))))
end
return spent
"""


def reset_week(user_id: int, prompt: Prompt) -> int:
    """Forget what the user spent in the prompt this week (also in their total across prompts);
    returns the tokens forgiven. The statistics keep them. Atomic against running turns."""
    week = current_week()
    keys = [_key(week, user_id, prompt.pk), _key(week, user_id)]
    return int(get_redis().eval(_RESET_SCRIPT, 2, *keys) or 0)


def set_budget(user_id: int, prompt: Prompt, weekly_token_budget: int | None) -> None:
    """The user's own budget in the prompt (None: the prompt's again)."""
    if weekly_token_budget is not None and weekly_token_budget < 0:
        raise InvalidInput(_("A weekly token budget is 0 or more tokens."), field="weekly_token_budget")
    BudgetOverride.objects.update_or_create(
        prompt=prompt, user_id=user_id, defaults={"weekly_token_budget": weekly_token_budget}
    )


def set_exempt(user_id: int, prompt: Prompt, exempt: bool) -> None:
    """A teacher's own exemption from the prompt's budgets (the caller checked they teach it)."""
    BudgetOverride.objects.update_or_create(prompt=prompt, user_id=user_id, defaults={"exempt": exempt})


def used_this_week(prompt: Prompt, user_ids: list[int]) -> dict[int, int]:
    """Each user's tokens counted against the prompt's budget this week (one round trip)."""
    if not user_ids:
        return {}
    week = current_week()
    values = get_redis().mget([_key(week, uid, prompt.pk) for uid in user_ids])
    return {uid: int(v or 0) for uid, v in zip(user_ids, values, strict=True)}


def budgets_of(prompt: Prompt, user_ids: list[int]) -> dict[int, int | None]:
    """Each user's weekly budget in the prompt, overrides applied (one query)."""
    budgets: dict[int, int | None] = dict.fromkeys(user_ids, prompt.weekly_token_budget)
    for row in BudgetOverride.objects.filter(prompt=prompt, user_id__in=user_ids):
        if row.weekly_token_budget is not None:
            budgets[row.user_id] = row.weekly_token_budget
    return budgets


def usage_for(user, prompts: list[Prompt]) -> dict:
    """`GET /me/usage`: the user's week in each prompt given and in total."""
    week = current_week()
    rows = [allowance(user.pk, prompt, week=week) for prompt in prompts]
    total_used = rows[0].total_used if rows else int(get_redis().get(_key(week, user.pk)) or 0)
    return {
        "week_resets_at": week.end.isoformat(),
        "prompts": [
            {
                "prompt_id": p.pk,
                "used": r.used,
                "budget": r.budget,
                "exempt": r.exempt,
                "warning": r.warning,
                "text": usage_sentence(r),
            }
            for p, r in zip(prompts, rows, strict=True)
        ],
        "total": {"used": total_used, "budget": settings.USER_WEEKLY_TOKEN_BUDGET},
    }
