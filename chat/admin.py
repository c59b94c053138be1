from typing import cast

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from accounts.models import User
from accounts.permissions import Forbidden
from chat import writes
from chat.enrollment import check_enrollment
from chat.models import (
    BudgetOverride,
    ChatSession,
    Enrollment,
    Feedback,
    MaterialGap,
    Message,
    Prompt,
    PromptDay,
    SourceDay,
    TokenUsage,
)  # fmt: skip
from currechat.errors import InvalidInput
from currechat.forms import WriteRulesForm


class EnrollmentForm(forms.ModelForm):
    """Enrollments made in the admin obey the rule of joining (chat.enrollment)."""

    class Meta:
        model = Enrollment
        fields = ["student", "prompt", "status"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["status"].required = False  # left out: enrolled

    def clean(self):
        cleaned = super().clean() or {}
        prompt = cleaned.get("prompt") or getattr(self.instance, "prompt", None)
        if not self.errors and prompt is not None and cleaned.get("student") is not None:
            try:
                check_enrollment(prompt, cleaned["student"])
            except (InvalidInput, Forbidden) as exc:
                self.add_error("student", str(exc))
        return cleaned


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    form = EnrollmentForm
    extra = 0
    raw_id_fields = ("student",)


class PromptAdminForm(WriteRulesForm):
    """The admin's form obeys the rules of the pages and the API (chat.writes)."""

    request: HttpRequest  # set by PromptAdmin.get_form

    class Meta:
        model = Prompt
        fields = list(writes.FIELDS)

    check = staticmethod(writes.check_prompt)
    write_fields = writes.FIELDS

    def actor(self):
        return cast(User, self.request.user)  # the admin is for signed-in staff only


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    form = PromptAdminForm
    list_display = ("name", "owner", "chat_model", "curation_enabled", "active", "join_code", "created")
    list_filter = ("active", "curation_enabled", "chat_model")
    search_fields = ("name", "description", "owner__username", "join_code")
    autocomplete_fields = ("owner",)
    filter_horizontal = ("collections", "co_teachers")
    inlines = [EnrollmentInline]

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        # The acting user for the write rules, on a class of this request's own.
        return type(form.__name__, (form,), {"request": request})

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
    form = EnrollmentForm
    list_display = ("student", "prompt", "number", "status", "created", "last_active")
    list_filter = ("status",)
    search_fields = ("student__username", "prompt__name")
    raw_id_fields = ("student", "prompt")


class MessageInline(admin.StackedInline):
    model = Message
    extra = 0
    fields = (
        "role", "status", "mode", "model", "content", "tool_calls", "tool_results", "citations", "token_usage", "error",
    )  # fmt: skip
    readonly_fields = fields
    can_delete = False


@admin.register(ChatSession)
class ChatSessionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "prompt", "user", "created", "updated")
    search_fields = ("title", "user__username", "prompt__name")
    raw_id_fields = ("prompt", "user")
    inlines = [MessageInline]


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ("session", "role", "status", "mode", "model", "created")
    list_filter = ("role", "status", "mode")
    search_fields = ("content",)
    raw_id_fields = ("session",)


# --- Teacher insight: counts are written by chat/insight.py and chat/feedback.py, read-only here ---
class ReadOnlyAdmin(admin.ModelAdmin):
    """Aggregates change only through the code that keeps them consistent with the chats."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


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
