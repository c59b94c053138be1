from collections.abc import Callable

from django.contrib import admin, messages
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from accounts.admin import InvitationAdmin
from collections_app import files, lifecycle, writes
from collections_app.models import (
    CheckResult,
    CheckRun,
    Collection,
    CollectionInvitation,
    PageCorrection,
    SearchCheck,
    SourceFile,
)
from kernel.admin import AdminWriteRulesForm, ReadOnlyAdmin, WriteRulesAdmin
from kernel.errors import CurreChatError
from kernel.formats import number


class SourceFileInline(admin.TabularInline):
    model = SourceFile
    fields = ("original_name", "file_type", "size", "status", "progress", "chunk_count")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


class CollectionAdminForm(AdminWriteRulesForm):
    """The admin's form obeys the rules of the pages and the API (collections_app.writes)."""

    class Meta:
        model = Collection
        fields = ["name", "description", "language", "embedding_model", "owner", "co_owners"]

    check = staticmethod(writes.check_form)
    write_fields = writes.FIELDS


@admin.register(Collection)
class CollectionAdmin(WriteRulesAdmin):
    form = CollectionAdminForm
    list_display = ("name", "language", "embedding_model", "owner", "created")
    list_filter = ("language", "embedding_model")
    search_fields = ("name", "description", "owner__username")
    autocomplete_fields = ("owner", "co_owners")
    inlines = [SourceFileInline]

    # Saved through the one write path: a new language or embedding model re-indexes, as on the pages.
    def save_model(self, request, obj, form, change):
        if not change:
            obj.pk = writes.create_collection(request.user, form.changes()).pk
            obj.refresh_from_db()  # the admin goes on with `obj` (its inlines, the log, the redirect)
            return
        requeued = writes.update_collection(request.user, obj, form.changes()).requeued
        if requeued:
            count = len(requeued)
            sentence = ngettext(
                "Re-indexing %(count)s file for the new settings.",
                "Re-indexing %(count)s files for the new settings.",
                count,
            )
            self.message_user(request, sentence % {"count": number(count)})

    def save_related(self, request, form, formsets, change):
        # Co-owners were set by the write functions; only the inlines are left to save.
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    # Deleting here must also remove the index and the stored files, as the pages and the API do.
    def delete_model(self, request, obj):
        files.delete_collection(obj)

    def delete_queryset(self, request, queryset):
        for collection in queryset:
            files.delete_collection(collection)


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    """Files change only through their lifecycle (collections_app/lifecycle.py): uploads are checked
    and ingested by the app, a status is what the worker found, so every field is read-only here and
    Cancel and Retry are actions that call the lifecycle, as the collection page's buttons do."""

    list_display = ("original_name", "collection", "file_type", "status", "progress", "pages", "chunk_count", "created")
    list_filter = ("status", "file_type", "pdf_mode")
    search_fields = ("original_name", "sha256", "collection__name")
    actions = ["cancel_files", "retry_files"]

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in SourceFile._meta.fields]

    def has_add_permission(self, request):
        return False  # uploads are checked by content (collections_app/files.add_file): use the collection page

    @admin.action(description=gettext_lazy("Cancel ingestion"), permissions=["change"])
    def cancel_files(self, request, queryset):
        self._each(request, queryset, lifecycle.cancel_file, _("Cancelled"))

    @admin.action(description=gettext_lazy("Retry ingestion"), permissions=["change"])
    def retry_files(self, request, queryset):
        self._each(request, queryset, lifecycle.retry_file, _("Queued again"))

    def _each(self, request, queryset, change: Callable[[SourceFile], SourceFile], done: str) -> None:
        for source in queryset:
            try:
                change(source)
            except CurreChatError as exc:
                self.message_user(request, str(exc), messages.WARNING)
            else:
                self.message_user(request, f"{done}: {source.original_name}", messages.SUCCESS)

    def delete_model(self, request, obj):
        files.delete_file(obj)

    def delete_queryset(self, request, queryset):
        for source in queryset:
            files.delete_file(source)


@admin.register(PageCorrection)
class PageCorrectionAdmin(ReadOnlyAdmin):
    """The record of who corrected what: read only here (a correction is made on the file page or
    through the API, which re-index the file; an edit here would not)."""

    list_display = ("source", "page", "user", "created")
    search_fields = ("source__original_name", "user__username")
    readonly_fields = ("source", "page", "markdown", "previous", "user", "created")


@admin.register(SearchCheck)
class SearchCheckAdmin(ReadOnlyAdmin):
    list_display = ("question", "collection", "expect_file", "expect_page", "expect_section", "expect_phrase")
    search_fields = ("question", "collection__name")


class CheckResultInline(admin.TabularInline):
    model = CheckResult
    fields = ("check_item", "rank", "passed", "changed")
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(CheckRun)
class CheckRunAdmin(ReadOnlyAdmin):
    list_display = ("collection", "trigger", "pending", "passed", "ran", "total", "stopped", "ran_at")
    list_filter = ("trigger", "pending")
    inlines = [CheckResultInline]


@admin.register(CheckResult)
class CheckResultAdmin(ReadOnlyAdmin):
    list_display = ("run", "check_item", "rank", "passed", "changed")


@admin.register(CollectionInvitation)
class CollectionInvitationAdmin(InvitationAdmin):
    list_display = ("collection", *InvitationAdmin.list_display)
    coteaching = writes.COLLECTION_INVITATIONS
