"""What a user may still use of their weekly token budgets, in numbers and in plain words, and
what teachers change of them: reset a student's week, a budget of their own, exempt themselves.
The counting itself is chat/metering/usage.py's."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.utils.translation import gettext as _

from chat.metering.usage import RESET_SCRIPT, WARNING_SHARE, Week, budget_for, count_key, current_week, describe_reset
from chat.models import BudgetOverride, Prompt
from kernel.errors import InvalidInput
from kernel.formats import percent
from kernel.records import check_fits
from kernel.redis_client import get_redis


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

    @property
    def share(self) -> float | None:
        """The larger share used of the two limits (0..1, capped), None when neither applies."""
        if self.exempt:
            return None
        limits = ((self.used, self.budget), (self.total_used, self.total_budget))
        shares = [u / b if b else 1.0 for u, b in limits if b is not None]
        return min(max(shares), 1.0) if shares else None

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
            "share": self.share,
        }


def usage_sentence(standing: Allowance) -> str:
    """The chat's usage line in plain words, a share of the week's allowance ('You have used 45% of
    this week's allowance.'), with when it starts again near the end. Students never read "tokens":
    a token count means nothing to them, a share of what they may use does."""
    if standing.exempt:
        return _("You have no weekly limit in this assistant (you exempted yourself).")
    share = standing.share
    if share is None:
        return _("You have no weekly limit in this assistant.")
    when = {"when": describe_reset(standing.week)}
    if standing.exhausted:
        return _("You have used this week's allowance. It starts again on %(when)s.") % when
    text = _("You have used %(percent)s of this week's allowance.") % {"percent": percent(share)}
    if standing.warning:
        text += " " + _("It starts again on %(when)s.") % when
    return text


def allowance(
    user_id: int, prompt: Prompt, *, week: Week | None = None, limits: tuple[int | None, bool] | None = None
) -> Allowance:
    """`limits` is `budget_for`'s answer when the caller has it already."""
    week = week or current_week()
    budget, exempt = limits or budget_for(prompt, user_id)
    used, total = get_redis().mget([count_key(week, user_id, prompt.pk), count_key(week, user_id)])
    return Allowance(
        week=week,
        used=int(used or 0),
        budget=budget,
        total_used=int(total or 0),
        total_budget=settings.USER_WEEKLY_TOKEN_BUDGET,
        exempt=exempt,
    )


def reset_week(user_id: int, prompt: Prompt) -> int:
    """Forget what the user spent in the prompt this week (also in their total across prompts);
    returns the tokens forgiven. The statistics keep them. Atomic against running turns."""
    week = current_week()
    keys = [count_key(week, user_id, prompt.pk), count_key(week, user_id)]
    return int(get_redis().eval(RESET_SCRIPT, 2, *keys) or 0)


def set_budget(user_id: int, prompt: Prompt, weekly_token_budget: int | None) -> None:
    """The user's own budget in the prompt (None: the prompt's again)."""
    if weekly_token_budget is not None and weekly_token_budget < 0:
        raise InvalidInput(_("A weekly token budget is 0 or more tokens."), field="weekly_token_budget")
    check_fits(BudgetOverride, {"weekly_token_budget": weekly_token_budget})
    BudgetOverride.objects.update_or_create(
        prompt=prompt, user_id=user_id, defaults={"weekly_token_budget": weekly_token_budget}
    )


KEEP = object()  # `change_student_budget`: leave the student's own budget as it is


def change_student_budget(prompt: Prompt, user_id: int, *, reset: bool = False, weekly_token_budget=KEEP) -> None:
    """A teacher's change to one student's week (the caller checked they teach the prompt): the one
    write the roster page and `POST /prompts/{id}/students/{n}/budget` both make. `reset` forgets
    what they used this week; `weekly_token_budget` gives them a budget of their own (None: the
    prompt's again). Raises InvalidInput when neither is asked or the budget is negative."""
    if weekly_token_budget is KEEP and not reset:
        raise InvalidInput(_("Reset the week or give a weekly budget."), field="weekly_token_budget")
    if weekly_token_budget is not KEEP:
        set_budget(user_id, prompt, weekly_token_budget)
    if reset:
        reset_week(user_id, prompt)


def set_exempt(user_id: int, prompt: Prompt, exempt: bool) -> None:
    """A teacher's own exemption from the prompt's budgets (the caller checked they teach it)."""
    BudgetOverride.objects.update_or_create(prompt=prompt, user_id=user_id, defaults={"exempt": exempt})


def used_this_week(prompt: Prompt, user_ids: list[int]) -> dict[int, int]:
    """Each user's tokens counted against the prompt's budget this week (one round trip)."""
    if not user_ids:
        return {}
    week = current_week()
    values = get_redis().mget([count_key(week, uid, prompt.pk) for uid in user_ids])
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
    total_used = rows[0].total_used if rows else int(get_redis().get(count_key(week, user.pk)) or 0)
    return {
        "week_resets_at": week.end.isoformat(),
        "prompts": [
            {
                "prompt_id": p.pk,
                "used": r.used,
                "budget": r.budget,
                "exempt": r.exempt,
                "warning": r.warning,
                "exhausted": r.exhausted is not None,
                "share": r.share,
                "text": usage_sentence(r),
            }
            for p, r in zip(prompts, rows, strict=True)
        ],
        "total": {"used": total_used, "budget": settings.USER_WEEKLY_TOKEN_BUDGET},
    }
