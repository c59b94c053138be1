from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from lti.addresses import tool_addresses
from lti.models import LtiIdentity, Platform, ResourceLink, ToolKey


@admin.register(Platform)
class PlatformAdmin(admin.ModelAdmin):
    list_display = ("name", "issuer", "client_id", "active", "created")
    list_filter = ("active",)
    search_fields = ("name", "issuer", "client_id")
    fieldsets = (
        (None, {"fields": ("name", "active")}),
        (_("What the platform tells you"), {"fields": ("issuer", "client_id", "deployment_ids")}),
        (_("Platform endpoints"), {"fields": ("auth_login_url", "auth_token_url", "key_set_url", "key_set")}),
    )

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

    list_display = ("subject", "platform", "user", "last_launch")
    list_filter = ("platform",)
    search_fields = ("subject", "user__username", "user__email")
    raw_id_fields = ("user",)
    readonly_fields = ("platform", "subject", "last_launch")

    def get_readonly_fields(self, request, obj=None):
        fields = tuple(super().get_readonly_fields(request, obj))
        return fields if request.user.is_superuser else (*fields, "user")

    def has_add_permission(self, request):
        return False


@admin.register(ResourceLink)
class ResourceLinkAdmin(admin.ModelAdmin):
    list_display = ("context_title", "title", "prompt", "platform", "created")
    list_filter = ("platform",)
    search_fields = ("context_title", "title", "resource_link_id", "prompt__name")
    raw_id_fields = ("prompt",)
    readonly_fields = ("platform", "resource_link_id", "created")
