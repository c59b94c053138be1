from django.contrib import admin

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


@admin.register(SourceFile)
class SourceFileAdmin(admin.ModelAdmin):
    list_display = ("original_name", "collection", "file_type", "status", "progress", "pages", "chunk_count", "created")
    list_filter = ("status", "file_type", "pdf_mode")
    search_fields = ("original_name", "sha256", "collection__name")
    readonly_fields = ("sha256", "size", "created", "updated")
    raw_id_fields = ("collection", "uploaded_by")
