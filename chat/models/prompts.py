"""Prompts (assistants), enrollments, chat sessions and their messages."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import Max, Q
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import active_teachers
from chat.models.tutor import Guarded, TutorMode
from collections_app.models import Collection

# No look-alike characters (0/O, 1/I/L) so codes survive being read aloud or copied by hand.
_JOIN_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"


def new_join_code() -> str:
    return "".join(secrets.choice(_JOIN_ALPHABET) for _ in range(8))


def _default_chat_model() -> str:
    return settings.CHAT_MODEL


def _default_weekly_token_budget() -> int | None:
    return settings.CHAT_WEEKLY_TOKEN_BUDGET


class SourcePolicy(models.TextChoices):
    MATERIAL_ONLY = "material_only", _("Answer only from the material (refuse otherwise)")
    MATERIAL_FIRST = "material_first", _("Material first; general knowledge labelled as such")
    NO_SEARCH = "no_search", _("No search (the assistant does not use the material)")


class ChatVisibility(models.TextChoices):
    NONE = "none", _("Teachers see only statistics, no chat text")
    PSEUDONYMOUS = "pseudonymous", _("Teachers read chats labelled “Student N”")
    NAMED = "named", _("Teachers read chats under the student's name")


# What a student is told, on the join page and above every chat, about what teachers see.
STUDENT_SENTENCES = {
    "none": _("Your teachers see only statistics (how much the assistant is used), never what you write."),
    "pseudonymous": _("Your teachers can read your chats, labelled “Student N” — not with your name."),
    "named": _("Your teachers can read your chats under your name."),
}


class PromptState(models.TextChoices):
    DRAFT = "draft", _("Not open yet")
    OPEN = "open", _("Open")
    CLOSED = "closed", _("Closed")
    OFF = "off", _("Switched off")


class EnrollmentStatus(models.TextChoices):
    ENROLLED = "enrolled", _("Enrolled")
    REMOVED = "removed", _("Removed")  # may join again with the code
    BLOCKED = "blocked", _("Blocked")  # may not join again


def open_now_q(prefix: str = "", now=None) -> Q:
    """Prompts students may use at `now`: switched on, opened, not closed."""
    now = now or timezone.now()
    return (
        Q(**{f"{prefix}active": True})
        & (Q(**{f"{prefix}opens_at__isnull": True}) | Q(**{f"{prefix}opens_at__lte": now}))
        & (Q(**{f"{prefix}closes_at__isnull": True}) | Q(**{f"{prefix}closes_at__gt": now}))
    )


def teaches_q(user, prefix: str = "") -> Q:
    """Prompts `user` teaches (owner or co-teacher) — only while they are an active teacher: a
    teacher demoted to student or deactivated loses every teacher right at once."""
    if not (user.is_authenticated and user.may_co_teach):
        return Q(pk__in=[])
    if not user.is_teacher:  # a co-teacher by invitation teaches what they were invited to, and owns nothing
        return Q(**{f"{prefix}co_teachers": user})
    return Q(**{f"{prefix}owner": user}) | Q(**{f"{prefix}co_teachers": user})


def enrolled_q(user, prefix: str = "") -> Q:
    """Prompts `user` is enrolled in now (not removed, not blocked)."""
    if not (user.is_authenticated and user.is_active):
        return Q(pk__in=[])
    return Q(**{f"{prefix}enrollments__student": user, f"{prefix}enrollments__status": EnrollmentStatus.ENROLLED})


class PromptQuerySet(models.QuerySet):
    def editable_by(self, user) -> PromptQuerySet:
        """Prompts the user teaches: owner and co-teachers (all of them for an active superuser)."""
        if user.is_authenticated and user.is_active and user.is_superuser:
            return self.all()
        return self.filter(pk__in=Prompt.objects.filter(teaches_q(user)).values("pk"))

    def joined_by(self, user) -> PromptQuerySet:
        """Prompts the user is enrolled in (open or not: a closed prompt's chats stay readable)."""
        return self.filter(pk__in=Prompt.objects.filter(enrolled_q(user)).values("pk"))

    def visible_to(self, user) -> PromptQuerySet:
        """Prompts whose chat pages the user may open: taught or joined."""
        if user.is_authenticated and user.is_active and user.is_superuser:
            return self.all()
        return self.filter(pk__in=Prompt.objects.filter(teaches_q(user) | enrolled_q(user)).values("pk"))


class Prompt(models.Model):
    """An assistant: the teacher's system prompt, a chat model and connected collections."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("owner"), on_delete=models.PROTECT, related_name="prompts"
    )
    co_teachers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("co-teachers"),
        blank=True,
        related_name="co_taught_prompts",
        help_text=_("Teachers who edit the prompt and see its students; only the owner deletes it or changes them."),
    )
    name = models.CharField(_("name"), max_length=200)
    description = models.TextField(_("description"), blank=True)
    system_prompt = models.TextField(_("system prompt"), blank=True)
    chat_model = models.CharField(_("chat model"), max_length=200, default=_default_chat_model)
    temperature = models.FloatField(
        _("temperature"), null=True, blank=True, help_text=_("0-2; empty uses the model's default.")
    )
    # The models students may choose between in the chat (the prompt's own model among them, first
    # unless the teacher ordered it otherwise); empty: students get `chat_model`. See chat/course/model_choice.py.
    student_models = models.JSONField(
        _("models for students"),
        default=list,
        blank=True,
        help_text=_("Models students may choose between; empty: the chat model only."),
    )
    collections = models.ManyToManyField(
        "collections_app.Collection", verbose_name=_("collections"), blank=True, related_name="prompts"
    )
    curation_enabled = models.BooleanField(
        _("curation enabled"), default=True, help_text=_("Let an LLM check each search result.")
    )
    source_policy = models.CharField(
        _("source policy"), max_length=16, choices=SourcePolicy.choices, default=SourcePolicy.MATERIAL_FIRST
    )
    student_instructions = models.TextField(
        _("student instructions"), blank=True, help_text=_("Shown to students above the chat, e.g. what to ask about.")
    )
    example_questions = models.JSONField(
        _("example questions"), default=list, blank=True, help_text=_("Up to 6 starters shown in an empty chat.")
    )
    join_code = models.CharField(_("join code"), max_length=16, unique=True, default=new_join_code)
    active = models.BooleanField(
        _("active"), default=True, help_text=_("Switched off, students can neither join nor chat.")
    )
    opens_at = models.DateTimeField(
        _("opens at"), null=True, blank=True, help_text=_("Students can chat from then on (empty: now).")
    )
    closes_at = models.DateTimeField(
        _("closes at"), null=True, blank=True, help_text=_("Students can no longer chat from then on.")
    )
    chat_visibility = models.CharField(
        _("chat visibility"), max_length=16, choices=ChatVisibility.choices, default=ChatVisibility.PSEUDONYMOUS
    )
    retention_days = models.PositiveIntegerField(_("retention days"), null=True, blank=True)
    weekly_token_budget = models.PositiveIntegerField(
        _("weekly token budget"), null=True, blank=True, default=_default_weekly_token_budget
    )
    tutor_mode = models.CharField(_("tutor mode"), max_length=8, choices=TutorMode.choices, default=TutorMode.OFF)
    # Answer keys, worked solutions, hidden instructions: the model reads them in guide mode; no
    # student ever does (never indexed, never serialised for them; chat/turn/leakguard.py guards answers).
    protected_material = models.TextField(_("protected material"), blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    objects = PromptQuerySet.as_manager()

    class Meta:
        verbose_name = _("prompt")
        verbose_name_plural = _("prompts")
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def is_owned_by(self, user) -> bool:
        """The owner (or an administrator): who may change the co-teachers and delete the prompt."""
        return user.is_superuser or self.owner_id == user.pk

    def state(self, now=None) -> PromptState:
        """Where the prompt is in its schedule, for students (teachers can always chat)."""
        now = now or timezone.now()
        if not self.active:
            return PromptState.OFF
        if self.opens_at is not None and now < self.opens_at:
            return PromptState.DRAFT
        if self.closes_at is not None and now >= self.closes_at:
            return PromptState.CLOSED
        return PromptState.OPEN

    def is_taught_by(self, user) -> bool:
        """Owner or co-teacher, while an active teacher (superusers too)."""
        if not (user.is_authenticated and user.is_active):
            return False
        if user.is_superuser:
            return True
        if not user.may_co_teach:  # a student: `teaches_q` matches nothing (no query to build, issue 44)
            return False
        return Prompt.objects.filter(teaches_q(user), pk=self.pk).exists()

    def is_enrolled(self, user) -> bool:
        return Prompt.objects.filter(enrolled_q(user), pk=self.pk).exists()

    def teachers(self) -> models.QuerySet:
        """The owner and co-teachers who still teach (active teachers)."""
        return active_teachers().filter(Q(pk=self.owner_id) | Q(co_taught_prompts=self)).distinct()

    def usable_collections(self) -> models.QuerySet:
        """The attached collections one of the prompt's teachers may still use: a collection whose
        access was taken from every teacher of the prompt (co-ownership ended) is searched no more."""
        teachers = self.teachers()
        usable = Collection.objects.filter(Q(owner__in=teachers) | Q(co_owners__in=teachers)).values("pk")
        return self.collections.filter(pk__in=usable)

    def unavailable_collections(self) -> models.QuerySet:
        return self.collections.exclude(pk__in=self.usable_collections().values("pk"))


class Enrollment(models.Model):
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("student"), on_delete=models.CASCADE, related_name="enrollments"
    )
    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="enrollments")
    status = models.CharField(
        _("status"), max_length=16, choices=EnrollmentStatus.choices, default=EnrollmentStatus.ENROLLED
    )
    # "Student N": stable within the prompt (kept across removal and re-joining), never reused.
    number = models.PositiveIntegerField(_("number"), default=0)
    created = models.DateTimeField(_("created"), auto_now_add=True)
    last_active = models.DateTimeField(_("last active"), null=True, blank=True)
    # The privacy notice as the student confirmed it (on joining, or after a teacher raised the
    # level): which level and when. Empty for one enrolled by a learning platform, by staff, or by a
    # program that joined with the code alone (POST /prompts/join `{code}`).
    privacy_confirmed_level = models.CharField(
        _("privacy level confirmed"), max_length=16, choices=ChatVisibility.choices, blank=True
    )
    privacy_confirmed_at = models.DateTimeField(_("privacy notice confirmed at"), null=True, blank=True)
    # The highest level the student's next chat may start under without asking them again: what they
    # confirmed (or, never asked, the level when they joined), lowered with the prompt's level since,
    # because every chat page then told them the lower one. chat.course.privacy_levels reads and writes it.
    privacy_accepted_level = models.CharField(
        _("privacy level accepted"), max_length=16, choices=ChatVisibility.choices, blank=True
    )

    class Meta:
        verbose_name = _("enrollment")
        verbose_name_plural = _("enrollments")
        constraints = [
            models.UniqueConstraint(fields=["student", "prompt"], name="unique_enrollment"),
            models.UniqueConstraint(fields=["prompt", "number"], name="unique_student_number"),
        ]
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.student} → {self.prompt}"

    def save(self, *args, **kwargs):
        if not self.number:  # the next free label in the prompt (chat.course.enrollment.enroll retries a race)
            taken = Enrollment.objects.filter(prompt_id=self.prompt_id).aggregate(n=Max("number"))["n"]
            self.number = (taken or 0) + 1
        if not self.privacy_accepted_level:  # told the prompt's level on joining, confirmed or not
            self.privacy_accepted_level = Prompt.objects.values_list("chat_visibility", flat=True).get(
                pk=self.prompt_id
            )
        super().save(*args, **kwargs)

    @property
    def label(self) -> str:
        return self.label_of(self.number)

    @staticmethod
    def label_of(number: int) -> str:
        """The pseudonym a student has in one prompt; the number is also their roster id."""
        return gettext("Student %(number)s") % {"number": number}


class ChatSessionQuerySet(models.QuerySet):
    def readable_by(self, user) -> ChatSessionQuerySet:
        """The user's own chats on prompts they still teach or are enrolled in, and their students'
        chats on prompts they teach, unless the chat was started under "teachers see no chat text"."""
        if not (user.is_authenticated and user.is_active):
            return self.none()
        if not (user.is_superuser or user.may_co_teach):
            # One who teaches nothing (`teaches_q` matches no prompt): their own chats on prompts
            # they are enrolled in, in one flat subquery. The nested ones below say the same for
            # them, and take the ORM ~2 ms to build; every chat socket's connect asks (issue 44).
            enrolled = Enrollment.objects.filter(student=user, status=EnrollmentStatus.ENROLLED).values("prompt_id")
            return self.filter(user=user, prompt__in=enrolled)
        own = Q(user=user, prompt__in=Prompt.objects.visible_to(user).values("pk"))
        if user.is_superuser:
            return self.filter(own | ~Q(visibility=ChatVisibility.NONE))
        taught = Q(prompt__in=Prompt.objects.editable_by(user).values("pk")) & ~Q(visibility=ChatVisibility.NONE)
        return self.filter(own | taught)


class ChatSession(models.Model):
    prompt = models.ForeignKey(Prompt, verbose_name=_("prompt"), on_delete=models.CASCADE, related_name="sessions")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="chat_sessions"
    )
    title = models.CharField(_("title"), max_length=200, blank=True)
    # The prompt's chat_visibility when the chat started: what its student was told teachers see.
    visibility = models.CharField(
        _("visibility"), max_length=16, choices=ChatVisibility.choices, default=ChatVisibility.PSEUDONYMOUS
    )
    # The model the student chose for this chat (one of the prompt's `student_models`); empty: the
    # prompt's own model, whatever it is when each message is sent.
    model = models.CharField(_("model"), max_length=200, blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)
    updated = models.DateTimeField(_("updated"), auto_now=True)

    objects = ChatSessionQuerySet.as_manager()

    class Meta:
        verbose_name = _("chat")
        verbose_name_plural = _("chats")
        ordering = ["-updated", "-id"]

    def __str__(self) -> str:
        return self.title or gettext("New chat")

    def is_readable_by(self, user) -> bool:
        return ChatSession.objects.readable_by(user).filter(pk=self.pk).exists()


class MessageRole(models.TextChoices):
    USER = "user", _("User")
    ASSISTANT = "assistant", _("Assistant")


class MessageStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    STREAMING = "streaming", _("Streaming")
    COMPLETE = "complete", _("Complete")
    FAILED = "failed", _("Failed")
    STOPPED = "stopped", _("Stopped by the student")


class AnswerMode(models.TextChoices):
    MODEL = "model", _("Written by the language model")
    EXTRACTIVE = "extractive", _("Quoted passages, without a language model")
    TEACHER = "teacher", _("The teacher's own answer, without a language model")


class Message(models.Model):
    session = models.ForeignKey(ChatSession, verbose_name=_("chat"), on_delete=models.CASCADE, related_name="messages")
    role = models.CharField(_("role"), max_length=16, choices=MessageRole.choices)
    content = models.TextField(_("content"), blank=True)
    # [{"id", "name", "arguments"}] as the model asked, in order.
    tool_calls = models.JSONField(_("tool calls"), default=list, blank=True)
    # [{"tool_call_id", "query", "outcome", "passages": [...]}] as returned to the model.
    tool_results = models.JSONField(_("tool results"), default=list, blank=True)
    citations = models.JSONField(_("citations"), default=list, blank=True)
    # {"prompt_tokens": n, "completion_tokens": n}
    token_usage = models.JSONField(_("token usage"), default=dict, blank=True)
    status = models.CharField(_("status"), max_length=16, choices=MessageStatus.choices, default=MessageStatus.COMPLETE)
    error = models.TextField(_("error"), blank=True)
    model = models.CharField(_("model"), max_length=200, blank=True)
    mode = models.CharField(_("mode"), max_length=16, choices=AnswerMode.choices, default=AnswerMode.MODEL)
    # A file the student attached to this question, kept as its extracted text (chat.turn.attachments).
    attachment_name = models.CharField(_("attachment name"), max_length=200, blank=True)
    attachment_text = models.TextField(_("attachment text"), blank=True)
    attachment_pages = models.PositiveIntegerField(_("attachment pages"), null=True, blank=True)
    # The teacher's answer served as this reply (mode "teacher"; chat/insight/answers.py).
    teacher_answer = models.ForeignKey(
        "chat.TeacherAnswer",
        verbose_name=_("teacher's answer"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    guard = models.CharField(_("guarded"), max_length=16, choices=Guarded.choices, blank=True)
    created = models.DateTimeField(_("created"), auto_now_add=True)

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["created", "id"]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"
