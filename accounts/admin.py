from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin

from accounts.models import ApiToken, User


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
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
