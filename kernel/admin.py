"""The admin's one read-only page kind, for records that change only through the code that keeps them
consistent (aggregates, runs and their results, sync logs, what teachers write on their own pages):
the admin shows them and may delete them, and never adds or edits one."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False
