from django.contrib import admin

from collections_app import files
from collections_app.models import Collection, SourceFile


class SourceFileInline(admin.TabularInline):
    model = SourceFile
    fields = ("original_name", "file_type", "size", "status", "progress", "chunk_count")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True


@admin.register(Collection)
class CollectionAdmin(admin.ModelAdmin):
    list_display = ("name", "language", "embedding_model", "owner", "created")
    list_filter = ("language", "embedding_model")
    search_fields = ("name", "description", "owner__username")
    autocomplete_fields = ("owner", "co_owners")
    inlines = [SourceFileInline]

    # A new language or embedding model needs a new index, as on the pages and in the API.
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        requeued = files.reindex_for_changes(obj, set(form.changed_data)) if change else []
        if requeued:
            self.message_user(request, f"Re-indexing {len(requeued)} file(s) for the new settings.")

    # Deleting here must also remove the index and the stored files, as the pages and the API do.
    def delete_model(self, request, obj):
        files.delete_collection(obj)

    def delete_queryset(self, request, queryset):
        for collection in queryset:
            files.delete_collection(collection)


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    list_display = ("original_name", "collection", "file_type", "status", "progress", "pages", "chunk_count", "created")
    list_filter = ("status", "file_type", "pdf_mode")
    search_fields = ("original_name", "sha256", "collection__name")
    readonly_fields = ("sha256", "size", "created", "updated")
    raw_id_fields = ("collection", "uploaded_by")

    def delete_model(self, request, obj):
        files.delete_file(obj)

    def delete_queryset(self, request, queryset):
        for source in queryset:
            files.delete_file(source)
