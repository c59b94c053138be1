"""The week at a glance: the teachers' own answers to frequent questions, the cached topics of a
week's questions, and who gets them by mail (chat/insight/answers.py, topics.py, digest_mail.py)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from chat.models.prompts import Prompt


class TeacherAnswer(models.Model):
    """A teacher's answer to one question of a prompt, served to a student who asks the same
    question (same `key`: the normalised wording) instead of a model's answer. It stops being
    served when a file it cites changes (`expired_at`), until the teacher saves it again."""

    prompt = models.ForeignKey(
        Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="teacher_answers"
    )
    key = models.CharField(_("key"), max_length=500)  # chat.insight.answers.question_key
    question = models.CharField(_("question"), max_length=500)
    answer = models.TextField(_("answer"))
    # The passages it cites, as the chat shows a cited passage ([{n, file_id, file_name, page, section, text}]).
    sources = models.JSONField(_("sources"), default=list, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("author"), null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)
    expired_at = models.DateTimeField(_("expired at"), null=True, blank=True)
    expired_because = models.CharField(_("expired because"), max_length=300, blank=True)
    served = models.PositiveIntegerField(_("times served"), default=0)

    class Meta:
        verbose_name = _("teacher's answer")
        verbose_name_plural = _("teachers' answers")
        constraints = [models.UniqueConstraint(fields=["prompt", "key"], name="unique_teacher_answer_key")]
        ordering = ["-updated", "-id"]

    def __str__(self) -> str:
        return self.question

    @property
    def expired(self) -> bool:
        return self.expired_at is not None


class TeacherAnswerFile(models.Model):
    """A file a teacher's answer cites: what a change of that file looks up (no foreign key, so
    the row outlives the file and the answer can say which file went)."""

    answer = models.ForeignKey(
        TeacherAnswer, verbose_name=_("teacher's answer"), on_delete=models.CASCADE, related_name="cited_files"
    )
    file_id = models.IntegerField(_("file ID"), db_index=True)
    file_name = models.CharField(_("file name"), max_length=255)

    class Meta:
        verbose_name = _("file a teacher's answer cites")
        verbose_name_plural = _("files teachers' answers cite")
        constraints = [models.UniqueConstraint(fields=["answer", "file_id"], name="unique_answer_file")]


class TopicDigest(models.Model):
    """The topics of one ISO week's student questions in a prompt, as last built (a cache: the
    page and the mail read it; chat.insight.topics builds it again when it is stale)."""

    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="digests")
    week = models.CharField(_("week"), max_length=8)  # "2026-W09"
    built = models.DateTimeField(_("built"))
    questions = models.PositiveIntegerField(_("questions"), default=0)
    last_question_id = models.BigIntegerField(_("last question"), default=0)
    topics = models.JSONField(_("topics"), default=list, blank=True)

    class Meta:
        verbose_name = _("week's topics")
        verbose_name_plural = _("weeks' topics")
        constraints = [models.UniqueConstraint(fields=["prompt", "week"], name="unique_digest_week")]


class DigestSubscription(models.Model):
    """A teacher's wish to get a prompt's topics by mail each week. The token is the unsubscribe
    link's, which works without signing in; `site` is where the teacher opted in (links point there)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="digest_subscriptions"
    )
    prompt = models.ForeignKey(
        Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="digest_subscriptions"
    )
    token = models.CharField(_("token"), max_length=64, unique=True)
    site = models.CharField(_("site"), max_length=300)
    last_sent_week = models.CharField(_("last week sent"), max_length=8, blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("weekly topics mail")
        verbose_name_plural = _("weekly topics mails")
        constraints = [models.UniqueConstraint(fields=["user", "prompt"], name="unique_digest_subscription")]
