from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.utils.translation import gettext as _

from accounts.models import ApiToken, User
from accounts.resets import deliver_reset_link


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    actions = ["make_reset_links"]

    @admin.action(description="Make one-time password reset links")
    def make_reset_links(self, request, queryset):
        # Shown to the administrator to hand over, or mailed when mail is configured (accounts/resets.py).
        for user in queryset:
            delivery = deliver_reset_link(request, user)
            if delivery.sent_to:
                shown = _("sent to %(address)s") % {"address": delivery.sent_to}
            else:
                shown = " ".join(part for part in (delivery.note, delivery.link) if part)
            self.message_user(request, f"{user.username}: {shown}")

    list_display = ("username", "email", "role", "is_active", "is_superuser", "last_login")
    list_filter = ("role", "is_active", "is_superuser")
    fieldsets = (*(DjangoUserAdmin.fieldsets or ()), ("CurreChat", {"fields": ("role",)}))
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, ("CurreChat", {"fields": ("role",)}))


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created", "last_used")
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("prefix", "created", "last_used")
    autocomplete_fields = ("user",)

    def has_add_permission(self, request):
        # Raw tokens must be shown once to their owner: create them with `manage.py create_api_token`.
        return False
