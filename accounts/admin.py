from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from accounts.models import ApiToken, User


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    actions = ["make_reset_links"]

    @admin.action(description="Make one-time password reset links")
    def make_reset_links(self, request, queryset):
        # No mail server is assumed: the links are shown to the administrator to hand over.
        from accounts.profile import reset_link

        for user in queryset:
            self.message_user(request, f"{user.username}: {reset_link(request, user)}")

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
