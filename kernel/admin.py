"""The admin's page kinds: a read-only one, for records that change only through the code that keeps
them consistent (aggregates, runs and their results, sync logs, what teachers write on their own
pages): the admin shows them and may delete them, and never adds or edits one; and one whose form
runs a resource's write rules (kernel/forms.py) with the signed-in staff member as the actor."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from kernel.forms import WriteRulesForm


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


class AdminWriteRulesForm(WriteRulesForm):
    """A `WriteRulesForm` in the admin: whoever is signed in acts (`WriteRulesAdmin` sets `request`)."""

    request: HttpRequest

    def actor(self):
        return self.request.user  # the admin is for signed-in staff only


class WriteRulesAdmin(admin.ModelAdmin):
    """A ModelAdmin whose form, an `AdminWriteRulesForm`, knows the request it serves."""

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        # The acting user for the write rules, on a class of this request's own.
        return type(form.__name__, (form,), {"request": request})
