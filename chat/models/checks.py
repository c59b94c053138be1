"""Answer checks: questions a prompt's teachers keep with what its answer must (and must not) do,
the runs that play them through the chat turn, and each check's result in a run (chat/checks/)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.prompts import Prompt


class AnswerCheck(models.Model):
    """A question and its expectations (`expect`, written only by chat.checks.expect.clean_expect):
    `facts` [[alternative, ...], ...], `cites` {file_id, page?, section?}, `refuses`, `forbidden`
    [phrase, ...], `searches`."""

    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="answer_checks")
    question = models.CharField(_("question"), max_length=500)
    expect = models.JSONField(_("expectations"), default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("created by"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("answer check")
        verbose_name_plural = _("answer checks")
        ordering = ["prompt", "id"]

    def __str__(self) -> str:
        return self.question


class RunStatus(models.TextChoices):
    QUEUED = "queued", _("Waiting for a worker")
    RUNNING = "running", _("Running")
    DONE = "done", _("Done")
    STOPPED = "stopped", _("Stopped early")


class RunTrigger(models.TextChoices):
    MANUAL = "manual", _("Run by a teacher")
    DRAFT = "draft", _("A draft tried by a teacher")
    SETTINGS = "settings", _("The prompt's instructions, model, collections, curation or use of the material changed")
    REINDEX = "reindex", _("A collection of the prompt was re-indexed")


class RunStop(models.TextChoices):
    BUDGET = "budget", _("The weekly token budget had no room for the next question")
    LIMIT = "limit", _("The most questions one run may ask were asked")
    FAILED = "failed", _("The run failed")


class AnswerCheckRun(models.Model):
    """One run of a prompt's answer checks, live or against a draft configuration (`draft`: the
    changes tried, {model?, system_prompt?, curation?, collection_ids?}; null for the live prompt)."""

    prompt = models.ForeignKey(
        Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="answer_check_runs"
    )
    status = models.CharField(_("status"), max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    draft = models.JSONField(_("draft"), null=True, blank=True)
    trigger = models.CharField(_("trigger"), max_length=16, choices=RunTrigger.choices, default=RunTrigger.MANUAL)
    # Who pays for its model calls: who started it, or the teacher whose change started it (else the owner).
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("started by"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    # An automatic run after a re-index waits for this collection's files to be indexed.
    waiting_for = models.ForeignKey(
        "collections_app.Collection",
        verbose_name=_("waiting for the re-index of"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    ran_at = models.DateTimeField(_("ran at"), null=True, blank=True)
    passed = models.PositiveIntegerField(_("passed"), default=0)
    total = models.PositiveIntegerField(_("total"), default=0)
    ran = models.PositiveIntegerField(_("questions asked"), default=0)
    stopped_reason = models.CharField(_("why it stopped"), max_length=16, choices=RunStop.choices, blank=True)

    class Meta:
        verbose_name = _("answer check run")
        verbose_name_plural = _("answer check runs")
        ordering = ["-created", "-id"]
        indexes = [models.Index(fields=["prompt", "-created"], name="answer_run_recent")]

    def __str__(self) -> str:
        return f"{self.prompt} run {self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (RunStatus.DONE, RunStatus.STOPPED)


class AnswerCheckResult(models.Model):
    """What one check's question got in one run, and each expectation's verdict."""

    run = models.ForeignKey(AnswerCheckRun, verbose_name=_("run"), on_delete=models.CASCADE, related_name="results")
    check_item = models.ForeignKey(
        AnswerCheck, verbose_name=_("answer check"), on_delete=models.CASCADE, related_name="results"
    )
    passed = models.BooleanField(_("passed"), default=False)
    answer = models.TextField(_("answer"), blank=True)
    mode = models.CharField(_("mode"), max_length=16, blank=True)  # "model" or "extractive"
    searched = models.BooleanField(_("searched"), default=False)
    searches = models.JSONField(_("searches"), default=list, blank=True)
    cited = models.JSONField(_("cited passages"), default=list, blank=True)
    facts_missing = models.JSONField(_("facts missing"), default=list, blank=True)
    forbidden_found = models.JSONField(_("forbidden phrases found"), default=list, blank=True)
    refused = models.BooleanField(_("refused"), default=False)
    grounded = models.FloatField(_("grounded"), null=True, blank=True)
    unsupported = models.JSONField(_("unsupported sentences"), default=list, blank=True)
    reasons = models.JSONField(_("reasons"), default=list, blank=True)  # why it failed, one sentence each
    changed = models.CharField(_("changed"), max_length=16, blank=True)
    error = models.TextField(_("error"), blank=True)

    class Meta:
        verbose_name = _("answer check result")
        verbose_name_plural = _("answer check results")
        ordering = ["run", "id"]
