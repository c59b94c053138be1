"""What a prompt's teachers read and what its students use: per-day aggregates, material gaps,
feedback, token usage and budget overrides."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.days import PromptDayCounts
from chat.models.prompts import Message, Prompt

# --- Teacher insight: aggregates, material gaps, feedback ------------------------------------------
# Statistics read these small tables, never the messages: a prompt's statistics cost the same with
# 10,000 or 100,000 messages, and they outlive the chats that retention or a student deletes.


class PromptDay(PromptDayCounts):
    """What happened in a prompt's student chats on one (local) day, counted as each answer ends."""

    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="day_stats")
    day = models.DateField(_("day"))
    chats = models.IntegerField(_("chats"), default=0)  # chats whose first answer ended that day
    questions = models.IntegerField(_("questions"), default=0)
    answers = models.IntegerField(_("answers"), default=0)
    tokens = models.BigIntegerField(_("tokens"), default=0)
    searches = models.IntegerField(_("searches"), default=0)
    # answers with >= 1 "nothing relevant" search
    answers_nothing_relevant = models.IntegerField(_("answers where nothing relevant was found"), default=0)
    passages_kept = models.IntegerField(_("passages kept"), default=0)  # after curation
    passages_dropped = models.IntegerField(_("passages dropped"), default=0)  # by curation or the threshold
    feedback_up = models.IntegerField(_("thumbs up"), default=0)
    feedback_down = models.IntegerField(_("thumbs down"), default=0)

    class Meta(PromptDayCounts.Meta):
        verbose_name = _("day's statistics")
        verbose_name_plural = _("daily statistics")
        constraints = [models.UniqueConstraint(fields=["prompt", "day"], name="unique_prompt_day")]


class SourceDay(models.Model):
    """How often answers on one day cited one file's section (for "most cited sources")."""

    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="source_stats")
    day = models.DateField(_("day"))
    file_id = models.IntegerField(_("file ID"))  # no foreign key: the count outlives a deleted file
    file_name = models.CharField(_("file name"), max_length=255)
    section = models.CharField(_("section"), max_length=300, blank=True)
    citations = models.IntegerField(_("citations"), default=0)

    class Meta:
        verbose_name = _("sources cited on a day")
        verbose_name_plural = _("sources cited by day")
        constraints = [
            models.UniqueConstraint(fields=["prompt", "day", "file_id", "section"], name="unique_source_day")
        ]


class MaterialGap(models.Model):
    """Searches that found nothing relevant, grouped by their stemmed words: a question the
    material does not answer. Handled gaps come back when asked again after `handled_at`."""

    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="gaps")
    key = models.CharField(_("key"), max_length=500)  # sorted distinct Snowball stems of the query's content words
    query = models.CharField(_("query"), max_length=500)  # the latest wording, as searched
    count = models.IntegerField(_("count"), default=0)
    first_asked = models.DateTimeField(_("first asked"))
    last_asked = models.DateTimeField(_("last asked"))
    handled_at = models.DateTimeField(_("handled at"), null=True, blank=True)
    # A student's question that led to it; gone with its chat (deleted by its student or retention).
    example = models.ForeignKey(
        Message, verbose_name=_("example question"), null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        verbose_name = _("material gap")
        verbose_name_plural = _("material gaps")
        constraints = [models.UniqueConstraint(fields=["prompt", "key"], name="unique_gap_key")]
        indexes = [models.Index(fields=["prompt", "-last_asked"], name="gap_recent")]

    def __str__(self) -> str:
        return self.query

    @property
    def handled(self) -> bool:
        return self.handled_at is not None and self.handled_at >= self.last_asked


class FeedbackRating(models.TextChoices):
    UP = "up", _("Helpful")
    DOWN = "down", _("Not helpful")


class Feedback(models.Model):
    """A student's thumbs up or down (and optional comment) on one answer in their own chat."""

    message = models.OneToOneField(
        Message, verbose_name=_("message"), on_delete=models.CASCADE, related_name="feedback"
    )
    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="feedback")
    rating = models.CharField(_("rating"), max_length=8, choices=FeedbackRating.choices)
    comment = models.TextField(_("comment"), blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("feedback")
        verbose_name_plural = _("feedback on answers")
        indexes = [models.Index(fields=["prompt", "-updated"], name="feedback_recent")]
        ordering = ["-updated", "-id"]

    def __str__(self) -> str:
        return f"{self.rating} on message {self.message_id}"


class TokenUsage(models.Model):
    """The tokens a model server reported for one user's calls in one prompt and week: the database
    mirror of the Redis counters (chat/metering/usage.py), for statistics. A teacher's reset clears the
    counter the budget is checked against, never these figures."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="token_usage"
    )
    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="token_usage")
    week_start = models.DateTimeField(_("week start"))
    prompt_tokens = models.PositiveBigIntegerField(_("prompt tokens"), default=0)
    completion_tokens = models.PositiveBigIntegerField(_("completion tokens"), default=0)
    calls = models.PositiveIntegerField(_("calls"), default=0)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("token usage in a week")
        verbose_name_plural = _("token usage by week")
        constraints = [
            models.UniqueConstraint(fields=["user", "prompt", "week_start"], name="unique_weekly_token_usage")
        ]

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class BudgetOverride(models.Model):
    """A teacher's decision about one user's budget in a prompt: a budget of their own (raised or
    lowered from the prompt's), or, for a teacher of the prompt, no budget at all (`exempt`)."""

    prompt = models.ForeignKey(
        Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="budget_overrides"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="budget_overrides"
    )
    weekly_token_budget = models.PositiveIntegerField(_("weekly token budget"), null=True, blank=True)
    exempt = models.BooleanField(_("exempt"), default=False)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("budget exception")
        verbose_name_plural = _("budget exceptions")
        constraints = [models.UniqueConstraint(fields=["prompt", "user"], name="unique_budget_override")]
