from django.contrib import admin

from chat.models import ChatSession, Enrollment, Message, Prompt


class EnrollmentInline(admin.TabularInline):
    model = Enrollment
    extra = 0
    raw_id_fields = ("student",)


@admin.register(Prompt)
class PromptAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "chat_model", "curation_enabled", "active", "join_code", "created")
    list_filter = ("active", "curation_enabled", "chat_model")
    search_fields = ("name", "description", "owner__username", "join_code")
    autocomplete_fields = ("owner",)
    filter_horizontal = ("collections",)
    inlines = [EnrollmentInline]


@admin.register(Enrollment)
class EnrollmentAdmin(admin.ModelAdmin):
    list_display = ("student", "prompt", "created")
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
