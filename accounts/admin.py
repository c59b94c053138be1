from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.core.exceptions import PermissionDenied
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from accounts.invitations import CoTeaching
from accounts.models import ApiToken, User
from accounts.resets import deliver_reset_link
from kernel.errors import CurreChatError


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    actions = ["make_reset_links"]

    @admin.action(description=gettext_lazy("Make one-time password reset links"), permissions=["change"])
    def make_reset_links(self, request, queryset):
        # Mailed to each user's own address; shown only to a superuser when it cannot be (accounts/resets.py).
        for user in queryset:
            if not _may_manage(request.user, user):
                refused = _("Only a superuser can reset the password of a staff or superuser account.")
                self.message_user(request, f"{user.username}: {refused}", messages.ERROR)
                continue
            delivery = deliver_reset_link(request, request.user, user)
            if delivery.sent_to:
                shown = _("sent to %(address)s") % {"address": delivery.sent_to}
            else:
                shown = " ".join(part for part in (delivery.note, delivery.link) if part)
            self.message_user(
                request, f"{user.username}: {shown}", messages.SUCCESS if delivery.sent_to else messages.WARNING
            )

    list_display = ("username", "email", "role", "is_active", "is_superuser", "last_login")
    list_filter = ("role", "is_active", "is_superuser")
    fieldsets = (*(DjangoUserAdmin.fieldsets or ()), ("CurreChat", {"fields": ("role", "email_confirmed")}))
    # Confirmed only by the owner following CurreChat's link (accounts/confirmation.py); a changed
    # address loses it (User.save).
    readonly_fields = ("email_confirmed",)
    add_fieldsets = (*DjangoUserAdmin.add_fieldsets, ("CurreChat", {"fields": ("role",)}))

    def get_readonly_fields(self, request, obj=None):
        # Each of these is a way into an account (its address receives reset links) or above one's own
        # rights: staff who may change users still may not change them (docs/CONVENTIONS.md habit 19).
        if request.user.is_superuser or obj is None:
            return super().get_readonly_fields(request, obj)
        return (*super().get_readonly_fields(request, obj), *SUPERUSER_ONLY_FIELDS)

    def get_fieldsets(self, request, obj=None):
        # The password's "Reset password" button leads where only a superuser may go (below): staff
        # are not offered it. Links are mailed to the owner with the list's action instead.
        fieldsets = super().get_fieldsets(request, obj)
        if request.user.is_superuser or obj is None:
            return fieldsets
        return [
            (name, {**options, "fields": tuple(f for f in options["fields"] if f != "password")})
            for name, options in fieldsets
        ]

    # A staff or superuser account is above staff's own rights: only a superuser changes (deactivates,
    # renames, changes the role of) or deletes one, as only a superuser resets its password.
    def has_change_permission(self, request, obj=None) -> bool:
        return super().has_change_permission(request, obj) and (obj is None or _may_manage(request.user, obj))

    def has_delete_permission(self, request, obj=None) -> bool:
        return super().has_delete_permission(request, obj) and (obj is None or _may_manage(request.user, obj))

    def user_change_password(self, request, id, form_url=""):
        # Setting someone's password is holding their account: a superuser's act alone.
        if not request.user.is_superuser:
            raise PermissionDenied
        return super().user_change_password(request, id, form_url)


SUPERUSER_ONLY_FIELDS = ("email", "is_staff", "is_superuser", "groups", "user_permissions")


def _may_manage(actor: User, user: User) -> bool:
    """Whether `actor` may reset, change or delete `user` (with the admin permission for it): staff
    may for students and teachers; a staff or superuser account only a superuser may."""
    return actor.is_superuser or not (user.is_staff or user.is_superuser)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created", "last_used")
    search_fields = ("user__username", "name", "prefix")
    readonly_fields = ("prefix", "created", "last_used")
    autocomplete_fields = ("user",)

    def has_add_permission(self, request):
        # Raw tokens must be shown once to their owner: create them with `manage.py create_api_token`.
        return False


class InvitationAdmin(admin.ModelAdmin):
    """Invitations to co-teach (accounts/invitations.py), to read; the one change is withdrawing,
    through the resource's write rules (the owner or a superuser). Links are made on the owner's
    page: the raw token is shown once, to them."""

    list_display: tuple[str, ...] = ("email", "created_by", "created", "expires", "used_by", "withdrawn_at")
    search_fields = ("email", "created_by__username")
    actions = ["withdraw"]
    coteaching: CoTeaching  # the kind's writer (accounts/invitations.py)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in self.model._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description=gettext_lazy("Withdraw the chosen invitations"))
    def withdraw(self, request, queryset):
        for invitation in queryset:
            try:
                self.coteaching.withdraw(request.user, invitation.target, invitation.pk)
            except CurreChatError as exc:
                self.message_user(request, f"{invitation.email}: {exc}", messages.ERROR)
