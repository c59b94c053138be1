from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from kernel.admin import ReadOnlyAdmin
from lti import registration
from lti.addresses import tool_addresses
from lti.models import (
    CourseContext,
    CourseMember,
    LtiIdentity,
    Platform,
    PlatformStatus,
    ResourceLink,
    SyncLog,
    ToolKey,
)


@admin.register(Platform)
class PlatformAdmin(admin.ModelAdmin):
    list_display = ("name", "issuer", "client_id", "status", "active", "share_person_id", "created")
    list_filter = ("status", "active", "share_person_id")
    search_fields = ("name", "issuer", "client_id")
    actions = ("approve", "refuse")
    fieldsets = (
        (None, {"fields": ("name", "active", "status", "registered_from")}),
        (_("What the platform tells you"), {"fields": ("issuer", "client_id", "deployment_ids")}),
        (_("Platform endpoints"), {"fields": ("auth_login_url", "auth_token_url", "key_set_url", "key_set")}),
        (_("Accounts shared with campus sign-in"), {"fields": ("share_person_id",)}),
    )

    def get_readonly_fields(self, request, obj=None):
        # Sharing lets the platform's person identifiers reach accounts made by campus sign-in: a way
        # into other people's accounts, so a superuser's decision alone (docs/CONVENTIONS.md habit 19).
        # Approval goes through the actions (lti.registration.decide), never a form field.
        fields = (*super().get_readonly_fields(request, obj), "status", "registered_from")
        return fields if request.user.is_superuser else (*fields, "share_person_id")

    def _decide(self, request, queryset, status: str) -> None:
        for platform in queryset:
            registration.decide(platform, status)
        count = queryset.count()
        sentence = (
            ngettext(
                "%(count)d platform approved: its courses can open CurreChat.",
                "%(count)d platforms approved: their courses can open CurreChat.",
                count,
            )
            if status == PlatformStatus.APPROVED
            else ngettext(
                "%(count)d platform refused: it launches nothing.",
                "%(count)d platforms refused: they launch nothing.",
                count,
            )
        )
        self.message_user(request, sentence % {"count": count}, messages.SUCCESS)

    @admin.action(description=_("Approve the selected platforms"), permissions=["change"])
    def approve(self, request, queryset):
        self._decide(request, queryset, PlatformStatus.APPROVED)

    @admin.action(description=_("Refuse the selected platforms"), permissions=["change"])
    def refuse(self, request, queryset):
        self._decide(request, queryset, PlatformStatus.REFUSED)

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        # What the platform's administrator pastes on their side (templates/admin/lti/platform/change_form.html).
        context["tool_addresses"] = tool_addresses(request)
        return super().render_change_form(request, context, add, change, form_url, obj)


@admin.register(ToolKey)
class ToolKeyAdmin(admin.ModelAdmin):
    """Keys are made by CurreChat; the private half is never shown."""

    list_display = ("kid", "created")
    fields = ("kid", "public_key", "created")
    readonly_fields = fields

    def has_add_permission(self, request):
        return False


@admin.register(LtiIdentity)
class LtiIdentityAdmin(admin.ModelAdmin):
    """A superuser may point a platform account at an existing CurreChat user (e.g. a teacher who
    had an account before the platform was connected). Whoever signs in to the platform as that
    account then holds the CurreChat user, a staff or superuser account included, so for everyone
    else the linked user is read-only (docs/CONVENTIONS.md habit 19)."""

    list_display = ("subject", "platform", "user", "joined_by_person_id", "last_launch")
    list_filter = ("platform", "joined_by_person_id")
    search_fields = ("subject", "user__username", "user__email")
    raw_id_fields = ("user",)
    readonly_fields = ("platform", "subject", "person_id", "joined_by_person_id", "last_launch")

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, "user")

    def save_model(self, request, obj, form, change):
        if "user" in form.changed_data:
            obj.joined_by_person_id = False  # a superuser's own link, not the platform's word
        super().save_model(request, obj, form, change)

    def has_add_permission(self, request):
        return False


@admin.register(ResourceLink)
class ResourceLinkAdmin(admin.ModelAdmin):
    list_display = ("context_title", "title", "prompt", "platform", "created")
    list_filter = ("platform",)
    search_fields = ("context_title", "title", "resource_link_id", "prompt__name")
    raw_id_fields = ("prompt",)
    readonly_fields = ("platform", "resource_link_id", "created")


@admin.register(CourseContext)
class CourseContextAdmin(ReadOnlyAdmin):
    """Courses whose roster is synced; their sync settings are the teachers' (the roster page)."""

    list_display = ("title", "context_id", "platform", "synced")
    list_filter = ("platform",)
    search_fields = ("title", "context_id")


@admin.register(CourseMember)
class CourseMemberAdmin(ReadOnlyAdmin):
    list_display = ("identity", "course", "role", "co_teacher")
    list_filter = ("role", "course__platform")


@admin.register(SyncLog)
class SyncLogAdmin(ReadOnlyAdmin):
    list_display = ("course", "trigger", "started", "ok", "added", "updated", "removed", "unchanged")
    list_filter = ("ok", "trigger")
