"""Prompts (assistants), enrollments, chat sessions and their messages."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

# No look-alike characters (0/O, 1/I/L) so codes survive being read aloud or copied by hand.
_JOIN_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def new_join_code() -> str:
    return "".join(secrets.choice(_JOIN_ALPHABET) for _ in range(8))


def _default_chat_model() -> str:
    return settings.CHAT_MODEL


class PromptQuerySet(models.QuerySet):
    def editable_by(self, user) -> PromptQuerySet:
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self.all()
        return self.filter(owner=user)

    def joined_by(self, user) -> PromptQuerySet:
        if not user.is_authenticated:
            return self.none()
        return self.filter(enrollments__student=user, active=True).distinct()

    def visible_to(self, user) -> PromptQuerySet:
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self.all()
        return self.filter(Q(owner=user) | Q(enrollments__student=user, active=True)).distinct()


class Prompt(models.Model):
    """An assistant: the teacher's system prompt, a chat model and connected collections."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="prompts")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    system_prompt = models.TextField(blank=True)
    chat_model = models.CharField(max_length=200, default=_default_chat_model)
    collections = models.ManyToManyField("collections_app.Collection", blank=True, related_name="prompts")
    curation_enabled = models.BooleanField(default=True, help_text="Let an LLM check each search result.")
    join_code = models.CharField(max_length=16, unique=True, default=new_join_code)
    active = models.BooleanField(default=True, help_text="Inactive prompts accept no new students or messages.")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = PromptQuerySet.as_manager()

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class Enrollment(models.Model):
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments")
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="enrollments")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["student", "prompt"], name="unique_enrollment")]
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.student} → {self.prompt}"


class ChatSessionQuerySet(models.QuerySet):
    def readable_by(self, user) -> ChatSessionQuerySet:
        """The user's own chats, and their students' chats on prompts they teach."""
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self.all()
        return self.filter(Q(user=user) | Q(prompt__owner=user))


class ChatSession(models.Model):
    prompt = models.ForeignKey(Prompt, on_delete=models.CASCADE, related_name="sessions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_sessions")
    title = models.CharField(max_length=200, blank=True)
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)

    objects = ChatSessionQuerySet.as_manager()

    class Meta:
        ordering = ["-updated", "-id"]

    def __str__(self) -> str:
        return self.title or f"Chat {self.pk}"

    def is_readable_by(self, user) -> bool:
        """The session's owner reads and writes; the prompt's teacher reads."""
        if not user.is_authenticated:
            return False
        return user.is_superuser or self.user_id == user.id or self.prompt.owner_id == user.id

    def is_writable_by(self, user) -> bool:
        return user.is_authenticated and self.user_id == user.id and self.prompt.active


class MessageRole(models.TextChoices):
    USER = "user", "User"
    ASSISTANT = "assistant", "Assistant"


class MessageStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    STREAMING = "streaming", "Streaming"
    COMPLETE = "complete", "Complete"
    FAILED = "failed", "Failed"


class AnswerMode(models.TextChoices):
    MODEL = "model", "Written by the language model"
    EXTRACTIVE = "extractive", "Quoted passages, without a language model"


class Message(models.Model):
    session = models.ForeignKey(ChatSession, on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(max_length=16, choices=MessageRole.choices)
    content = models.TextField(blank=True)
    # [{"id", "name", "arguments"}] as the model asked, in order.
    tool_calls = models.JSONField(default=list, blank=True)
    # [{"tool_call_id", "query", "outcome", "passages": [...]}] as returned to the model.
    tool_results = models.JSONField(default=list, blank=True)
    citations = models.JSONField(default=list, blank=True)
    # {"prompt_tokens": n, "completion_tokens": n}
    token_usage = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=MessageStatus.choices, default=MessageStatus.COMPLETE)
    error = models.TextField(blank=True)
    model = models.CharField(max_length=200, blank=True)
    mode = models.CharField(max_length=16, choices=AnswerMode.choices, default=AnswerMode.MODEL)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"
