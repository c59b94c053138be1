from django import forms
from django.contrib import admin
from django.http import HttpRequest

from accounts.admin import InvitationAdmin
from chat.course import writes
from chat.course.enrollment import check_enrollment, enroll, set_status
from chat.models import (
    AnswerCheck,
    AnswerCheckResult,
    AnswerCheckRun,
    BudgetOverride,
    ChatSession,
    DigestSubscription,
    Enrollment,
    EnrollmentStatus,
    Feedback,
    MaterialGap,
    Message,
    Prompt,
    PromptDay,
    PromptInvitation,
    SafetyDay,
    SourceDay,
    TeacherAnswer,
    TeacherAnswerFile,
    TokenUsage,
    TopicDigest,
)  # fmt: skip
from kernel.admin import AdminWriteRulesForm, ReadOnlyAdmin, WriteRulesAdmin
from kernel.errors import Forbidden, InvalidInput


class EnrollmentForm(forms.ModelForm):
    """Enrollments made in the admin obey the rule of joining (chat.course.enrollment)."""

    class Meta:
        model = Enrollment
        fields = ["student", "prompt", "status"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "status" in self.fields:
            self.fields["status"].required = False  # left out: enrolled

    def clean(self):
        cleaned = super().clean() or {}
        if self.instance.pk is None and not self.errors and cleaned.get("student") and cleaned.get("prompt"):
            try:
                check_enrollment(cleaned["prompt"], cleaned["student"])
            except (InvalidInput, Forbidden) as exc:
                self.add_error("student", str(exc))
        return cleaned


class EnrollmentInline(admin.TabularInline):
    """The prompt's students, to read: enroll, remove and readmit in the Enrollment admin, which
    calls chat.course.enrollment."""

    model = Enrollment
    fields = ("student", "number", "status", "created", "last_active")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


class PromptAdminForm(AdminWriteRulesForm):
    """The admin's form obeys the rules of the pages and the API (chat.course.writes)."""

    class Meta:
        model = Prompt
        fields = list(writes.FIELDS)

    check = staticmethod(writes.check_prompt)
    write_fields = writes.FIELDS


@admin.register(Prompt)
class PromptAdmin(WriteRulesAdmin):
    form = PromptAdminForm
    list_display = ("name", "owner", "chat_model", "curation_enabled", "active", "join_code", "created")
    list_filter = ("active", "curation_enabled", "chat_model")
    search_fields = ("name", "description", "owner__username", "join_code")
    autocomplete_fields = ("owner",)
    filter_horizontal = ("collections", "co_teachers")
    inlines = [EnrollmentInline]

    def save_model(self, request, obj, form, change):
        if change:
            writes.update_prompt(request.user, obj, form.changes())
        else:
            obj.pk = writes.create_prompt(request.user, form.changes()).pk
            obj.refresh_from_db()  # the admin goes on with `obj` (its inlines, the log, the redirect)

    def save_related(self, request, form, formsets, change):
        # Collections were set by the write functions; only the inlines are left to save.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    """Enrollments change only through chat.course.enrollment. An existing enrollment's student, prompt and
    number are read-only: moving "Student N" to another user would hand that user the label, and
    with it the chats teachers read under it."""

    form = EnrollmentForm
    list_display = ("student", "prompt", "number", "status", "created", "last_active", "privacy_confirmed_at")
    list_filter = ("status",)
    search_fields = ("student__username", "prompt__name")
    raw_id_fields = ("student", "prompt")
    # Only the student confirms the privacy notice (chat.course.privacy_levels); staff read what they confirmed.
    _PRIVACY = ("privacy_confirmed_level", "privacy_confirmed_at", "privacy_accepted_level")

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return ("number", "created", "last_active", *self._PRIVACY)
        return ("student", "prompt", "number", "created", "last_active", *self._PRIVACY)

    def save_model(self, request, obj, form, change):
        status = form.cleaned_data.get("status") or EnrollmentStatus.ENROLLED
        if not change:
            obj.pk = enroll(obj.prompt, obj.student).pk
            obj.refresh_from_db()  # the admin goes on with `obj` (the log, the redirect)
        if obj.status != status or "status" in form.changed_data:
            set_status(obj, status)

    def has_delete_permission(self, request, obj=None) -> bool:
        # Deleting frees the number for someone else; remove or block the student instead.
        return False


class MessageInline(admin.StackedInline):
    model = Message
    extra = 0
    fields = (
        "role", "status", "mode", "model", "content", "tool_calls", "tool_results", "citations", "token_usage", "error",
    )  # fmt: skip
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False


class ViewOnlyAdmin(ReadOnlyAdmin):
    """What a student wrote and how it was answered, to read: nothing here is changed, added or
    deleted by staff. A chat's privacy level stays the one it started under, its messages are the
    student's, and only its student deletes it (access.rules.get_session_for_delete)."""

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(ChatSession)
class ChatSessionAdmin(ViewOnlyAdmin):
    list_display = ("__str__", "prompt", "user", "visibility", "created", "updated")
    search_fields = ("title", "user__username", "prompt__name")
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(ViewOnlyAdmin):
    list_display = ("session", "role", "status", "mode", "model", "created")
    list_filter = ("role", "status", "mode")
    search_fields = ("content",)


# --- Teacher insight: counts are written by chat/insight/stats.py and chat/insight/feedback.py, read-only here ---
@admin.register(SafetyDay)
class SafetyDayAdmin(ReadOnlyAdmin):
    list_display = (
        "prompt",
        "day",
        "leak_rewritten",
        "leak_withheld",
        "flagged_input",
        "flagged_output",
        "moderation_down",
    )
    list_filter = ("prompt",)


@admin.register(PromptDay)
class PromptDayAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "day", "chats", "questions", "answers", "tokens", "searches", "answers_nothing_relevant")
    list_filter = ("prompt",)
    date_hierarchy = "day"


@admin.register(SourceDay)
class SourceDayAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "day", "file_name", "section", "citations")
    list_filter = ("prompt",)


@admin.register(MaterialGap)
class MaterialGapAdmin(ReadOnlyAdmin):
    list_display = ("query", "prompt", "count", "last_asked", "handled_at")
    search_fields = ("query", "key")
    raw_id_fields = ("example",)


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ("message", "prompt", "rating", "updated")
    list_filter = ("rating",)
    raw_id_fields = ("message", "prompt")


@admin.register(TokenUsage)
class TokenUsageAdmin(ReadOnlyAdmin):
    list_display = ("user", "prompt", "week_start", "prompt_tokens", "completion_tokens", "calls")
    list_filter = ("week_start",)
    search_fields = ("user__username", "prompt__name")


@admin.register(BudgetOverride)
class BudgetOverrideAdmin(ReadOnlyAdmin):
    list_display = ("user", "prompt", "weekly_token_budget", "exempt", "updated")
    search_fields = ("user__username", "prompt__name")


@admin.register(PromptInvitation)
class PromptInvitationAdmin(InvitationAdmin):
    list_display = ("prompt", *InvitationAdmin.list_display)
    coteaching = writes.PROMPT_INVITATIONS


# --- Answer checks: written by their pages and API (chat/checks/expect.py) and the worker, read-only here ---
@admin.register(AnswerCheck)
class AnswerCheckAdmin(ReadOnlyAdmin):
    list_display = ("question", "prompt", "created")
    list_filter = ("prompt",)
    search_fields = ("question",)


@admin.register(AnswerCheckRun)
class AnswerCheckRunAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "status", "trigger", "created", "ran_at", "passed", "ran", "total", "stopped_reason")
    list_filter = ("status", "trigger", "prompt")


@admin.register(AnswerCheckResult)
class AnswerCheckResultAdmin(ReadOnlyAdmin):
    list_display = ("check_item", "run", "passed", "grounded", "refused", "changed")
    list_filter = ("passed", "changed")


# --- The week at a glance: written by the insight page and API (chat/insight/answers.py, topics.py,
# digest_mail.py), read-only here: a teacher's answer changes through its one write path. ---
@admin.register(TeacherAnswer)
class TeacherAnswerAdmin(ReadOnlyAdmin):
    list_display = ("question", "prompt", "served", "expired_at", "updated")
    list_filter = ("prompt",)
    search_fields = ("question", "key")


@admin.register(TeacherAnswerFile)
class TeacherAnswerFileAdmin(ReadOnlyAdmin):
    list_display = ("answer", "file_id", "file_name")

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False  # the rows that expire an answer when a file it cites changes (chat/insight/answers.py)


@admin.register(TopicDigest)
class TopicDigestAdmin(ReadOnlyAdmin):
    list_display = ("prompt", "week", "questions", "built")
    list_filter = ("prompt",)
    exclude = ("topics",)  # a cache of students' questions' groups: the insight page shows it as allowed


@admin.register(DigestSubscription)
class DigestSubscriptionAdmin(ReadOnlyAdmin):
    list_display = ("user", "prompt", "last_sent_week", "created")
    exclude = ("token",)  # the unsubscribe link's key stays with its teacher
