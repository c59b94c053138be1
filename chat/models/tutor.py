"""Tutor mode and safety: the prompt's mode, what the guards did to an answer, and their daily counts
(chat/turn/leakguard.py, chat/turn/moderation.py; the teachers' statistics read `SafetyDay`)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.days import PromptDayCounts


class TutorMode(models.TextChoices):
    OFF = "off", _("Off: the assistant answers as its instructions say")
    GUIDE = "guide", _("Guide: hints, questions and explanations, never a full solution")


class Guarded(models.TextChoices):
    """What a guard did to one answer (blank: nothing)."""

    REWRITTEN = "rewritten", _("Rewritten: the first answer gave protected material away")
    WITHHELD = "withheld", _("Withheld: both answers gave protected material away")
    FLAGGED = "flagged", _("Not answered: the safety check flagged the message")
    FLAGGED_OUTPUT = "flagged_output", _("Withheld: the safety check flagged the answer")


class SafetyDay(PromptDayCounts):
    """How often the guards acted in a prompt's chats on one (local) day: counts only, no text.
    Kept apart from the chats, so the counts outlive retention and deleted chats."""

    prompt = models.ForeignKey(
        "chat.Prompt", verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="safety_days"
    )
    day = models.DateField(_("day"))
    leak_rewritten = models.IntegerField(_("answers rewritten by the leak guard"), default=0)
    leak_withheld = models.IntegerField(_("answers withheld by the leak guard"), default=0)
    flagged_input = models.IntegerField(_("messages flagged by the safety check"), default=0)
    flagged_output = models.IntegerField(_("answers flagged by the safety check"), default=0)
    moderation_down = models.IntegerField(_("messages the safety check could not judge"), default=0)

    class Meta(PromptDayCounts.Meta):
        verbose_name = _("day's safety counts")
        verbose_name_plural = _("daily safety counts")
        constraints = [models.UniqueConstraint(fields=["prompt", "day"], name="unique_safety_day")]
