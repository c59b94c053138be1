from django.contrib import admin

from kernel.admin import ReadOnlyAdmin
from sso.models import SsoIdentity


@admin.register(SsoIdentity)
class SsoIdentityAdmin(ReadOnlyAdmin):
    """Read-only: identities are made by sign-ins; an administrator may only remove a link."""

    list_display = ("subject", "issuer", "protocol", "user", "last_sign_in")
    list_filter = ("protocol", "issuer")
    search_fields = ("subject", "user__username", "user__email", "person_id")
    readonly_fields = ("protocol", "issuer", "subject", "user", "person_id", "created", "last_sign_in")
