"""Collection and file pages. Permission checks come from access.rules, as in the API."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import FileResponse, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from access.rules import (
    get_collection_for_edit,
    get_file_for_edit,
    get_file_for_source,
    pages_shown_to,
    require_teacher,
)
from accounts.invitation_views import InvitationViews
from accounts.picker import invited_addresses
from collections_app import files, originals, reread, review, writes
from collections_app.fair_queue import mark_waiting, waiting_of
from collections_app.forms import CollectionForm
from collections_app.listing import PAGE_SIZE, SORT_LABELS, STATUS_CHOICES, FileFilter
from collections_app.models import FileStatus, FileType, PdfMode
from collections_app.search import language_warning
from kernel.errors import CurreChatError, InvalidInput, NotFound
from kernel.formats import number
from kernel.rendering import render_markdown
from rag.ingest.transcript import is_time_heading

# The upload form's PDF methods in a teacher's words (the stored choices' labels are the admin's).
PDF_MODE_LABELS = [
    (PdfMode.AUTO, gettext_lazy("Automatic: the vision model when it is available")),
    (PdfMode.VLM, gettext_lazy("The vision model")),
    (PdfMode.FAST, gettext_lazy("Fast text extraction")),
]


@login_required
@require_http_methods(["GET", "POST"])
def collection_create(request):
    require_teacher(request.user)
    form = CollectionForm(request.POST or None, actor=request.user)
    if request.method == "POST" and form.is_valid():
        collection = writes.create_collection(request.user, form.changes())
        sentence = _("Collection “%(name)s” created. Upload files to it next.")
        messages.success(request, sentence % {"name": collection.name})
        _invitations.invite_after_save(request, collection, invited_addresses(request.POST, "co_owners"))
        return redirect("collection_detail", pk=collection.pk)
    return render(request, "collections/form.html", {"form": form})


@login_required
@require_http_methods(["GET", "POST"])
def collection_detail(request, pk: int):
    """The collection's files: upload, live progress, filter, sort and pages of `PAGE_SIZE`.
    A POST saves the settings (as the settings page does; kept for forms and scripts that post here)."""
    collection = get_collection_for_edit(request.user, pk)
    if request.method == "POST":
        return collection_settings(request, pk)
    try:
        wanted = FileFilter.parse(request.GET.get("q"), request.GET.get("status"), request.GET.get("sort"))
    except InvalidInput as exc:
        messages.error(request, str(exc))
        wanted = FileFilter()
    matching = wanted.apply(collection.files.all())
    flagged_files = list(collection.files.exclude(flagged_pages=[]).only("pk", "original_name", "flagged_pages"))
    page = Paginator(matching, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "collection": collection,
        "files": mark_waiting(list(page.object_list)),
        "page_obj": page,
        "filter": wanted,
        "total_files": collection.files.count(),
        "attention": _attention_count(collection),
        "flagged": review.flagged_count(flagged_files),
        "flagged_files": flagged_files[:20],
        "status_choices": STATUS_CHOICES,
        "sort_choices": SORT_LABELS.items(),
        "pdf_modes": PDF_MODE_LABELS,
        "max_upload_mb": settings.UPLOAD_MAX_BYTES // (1024 * 1024),
        "max_pages": settings.UPLOAD_MAX_PDF_PAGES,
        "language_warning": language_warning(collection),
        "tab": "files",
        # The page's script re-reads exactly the files this page shows.
        "list_query": urlencode(
            {"q": wanted.q, "status": wanted.status, "sort": wanted.sort, "limit": PAGE_SIZE}
            | {"offset": (page.number - 1) * PAGE_SIZE}
        ),
    }
    context["page_models"] = [("embeddings", collection.embedding_model)]
    return render(request, "collections/detail.html", context)


def _attention_count(collection) -> int:
    return FileFilter(status="attention").apply(collection.files.all()).count()


@login_required
@require_http_methods(["GET", "POST"])
def collection_settings(request, pk: int):
    """Name, language, embedding model and co-owners, and deleting the collection: a page of its
    own, so a collection with hundreds of files keeps its settings one click away."""
    collection = get_collection_for_edit(request.user, pk)
    form = CollectionForm(request.POST or None, instance=collection, actor=request.user)
    if request.method == "POST" and form.is_valid():
        requeued = writes.update_collection(request.user, collection, form.changes()).requeued
        messages.success(request, _("Settings saved."))
        if requeued:
            messages.info(
                request,
                ngettext(
                    "Re-indexing %(count)s file for the new settings. "
                    "Search keeps finding its current passages until it is done.",
                    "Re-indexing %(count)s files for the new settings. "
                    "Search keeps finding their current passages until each file is done.",
                    len(requeued),
                )
                % {"count": number(len(requeued))},
            )
        _invitations.invite_after_save(request, collection, invited_addresses(request.POST, "co_owners"))
        return redirect("collection_detail", pk=collection.pk)
    return _invitations.page_with_form(request, collection, form, "co_owners")


def _settings_page(request, collection, form=None, *, status: int = 200, invitations: dict | None = None):
    form = CollectionForm(instance=collection, actor=request.user) if form is None else form  # None: unbound
    context = {
        "collection": collection,
        "form": form,
        "language_warning": language_warning(collection),
        "attention": _attention_count(collection),
        "tab": "settings",
        "page_models": [("embeddings", collection.embedding_model)],
        "invitations": invitations,  # the owner's: who else is invited (None: no section)
    }
    return render(request, "collections/settings.html", context, status=status)


_invitations = InvitationViews(
    writes.COLLECTION_INVITATIONS, "collection_settings", find=get_collection_for_edit, page=_settings_page
)
invitation_urls = _invitations.urls()  # routed by urls.py


@login_required
@require_POST
def collection_delete(request, pk: int):
    collection = get_collection_for_edit(request.user, pk)
    name = collection.name
    files.delete_collection(collection)
    messages.success(request, _("Collection “%(name)s” deleted.") % {"name": name})
    return redirect("home")


@login_required
@require_POST
def collection_upload(request, pk: int):
    """The upload form without JavaScript (the page's script uses the API, one request per file)."""
    collection = get_collection_for_edit(request.user, pk)
    pdf_mode = request.POST.get("pdf_mode", PdfMode.AUTO)
    if pdf_mode not in PdfMode.values:
        pdf_mode = PdfMode.AUTO
    uploads = request.FILES.getlist("file")
    if not uploads:
        messages.error(request, _("Choose one or more files to upload."))
    for upload in uploads:
        try:
            source = files.add_file(collection, upload, request.user, pdf_mode)
        except CurreChatError as exc:
            messages.error(request, str(exc))
        else:
            uploaded = _("“%(name)s” uploaded.") % {"name": upload.name}
            waiting = waiting_of(source)
            messages.success(request, f"{uploaded} {waiting.sentence}" if waiting else uploaded)
    return redirect("collection_detail", pk=collection.pk)


@login_required
@require_GET
def file_detail(request, pk: int):
    """A file for its teachers: each page's text beside its image, to check and correct, and the
    passages search returns."""
    source = get_file_for_edit(request.user, pk)
    chunks = files.file_chunks(source) if source.status == FileStatus.READY else []
    context = {
        "file": source,
        "collection": source.collection,
        "pages": review.review_pages(source, render_markdown),
        "page_images": originals.has_page_images(source),
        # Passages render as answers do (Markdown, tables, math), sanitised the same way.
        "chunks": [(c, render_markdown(c.text)) for c in chunks],
        "empty_pages": source.empty_pages,
        "repeated_pages": source.repeated_pages,
        "reread": reread.reread_offer(source),
    }
    return render(request, "collections/file.html", context)


@login_required
@require_POST
def file_page_correct(request, pk: int, page: int):
    """Save a teacher's correction of one page (the API's PUT .../pages/{page} does the same)."""
    source = get_file_for_edit(request.user, pk)
    try:
        review.correct_page(request.user, source, page, request.POST.get("markdown", ""))
    except CurreChatError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, _("Page %(page)s corrected; the file is being re-indexed with your text.") % {"page": page or 1}
        )
    return redirect(f"{reverse('file_detail', args=[source.pk])}#page-{page}")


_ACTIONS = {"cancel": files.cancel_file, "retry": files.retry_file}


@login_required
@require_POST
def file_action(request, pk: int, action: str):
    """Cancel, retry, re-read or delete a file from the pages' buttons (the script uses the API instead)."""
    source = get_file_for_edit(request.user, pk)
    collection_id = source.collection_id
    if action == "reread":
        return _reread(request, source)
    try:
        if action == "delete":
            files.delete_file(source)
            messages.success(request, _("“%(name)s” deleted.") % {"name": source.original_name})
        else:
            _ACTIONS[action](source)
    except CurreChatError as exc:
        messages.error(request, str(exc))
    return redirect("collection_detail", pk=collection_id)


def _reread(request, source):
    method = request.POST.get("method", "")
    try:
        if method not in ("fast", "vision"):
            raise InvalidInput(_("Choose how to read the file: fast extraction or the vision model."))
        reread.reread_file(source, method)
    except CurreChatError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, _("“%(name)s” is queued to be read again.") % {"name": source.original_name})
    return redirect("file_detail", pk=source.pk)


@login_required
@require_GET
def file_download(request, pk: int):
    """The file as it was uploaded, for the collection's teachers."""
    source = get_file_for_edit(request.user, pk)
    try:
        stored = source.file.open("rb")
    except FileNotFoundError:
        sentence = _("The stored copy of “%(name)s” is missing; upload the file again.")
        raise NotFound(sentence % {"name": source.original_name})
    return FileResponse(stored, as_attachment=True, filename=source.original_name)


def _position(request) -> int | None:
    value = request.GET.get("passage", "")
    return int(value) if value.isdigit() else None


def _original(request, template: str, context: dict):
    """An original page or section: the whole page, or (`?pane=1`) the part the chat shows in its
    side pane, so both read the same."""
    context["pane"] = request.GET.get("pane") == "1"
    context["back"] = _back_to_chat(request)
    return render(request, "collections/_original.html" if context["pane"] else template, context)


def _back_to_chat(request) -> str:
    """The chat an original was opened from (`?from=`), for its "Back to the chat" link: only a path
    on this site, so a link made elsewhere cannot send the reader on to another site from ours."""
    path = request.GET.get("from", "")
    same_site = url_has_allowed_host_and_scheme(path, allowed_hosts=None, require_https=request.is_secure())
    return path if same_site and path.startswith("/") else ""


@login_required
@require_GET
def source_page(request, pk: int, page: int):
    """A cited page as the reader saw it, with the cited passage (`?passage=<position>`) marked on
    it, and previous/next among the pages the reader may open."""
    source = get_file_for_source(request.user, pk, page=page)
    position, located, words = _position(request), None, []
    if position is not None:
        try:
            chunk = originals.cited_chunk(source, position)
        except NotFound:
            chunk = None
        # Only a passage of this page is marked: its words are what the reader may see here anyway.
        if chunk is not None and (chunk.page_start or 0) <= page <= (chunk.page_end or chunk.page_start or 0):
            located = originals.passage_on_page(source, page, position)
            words = originals.shown_words(chunk.text)
    shown = pages_shown_to(request.user, source)
    images = originals.has_page_images(source)
    context = {
        "file": source,
        "page": page,
        "passage": position,
        "can_edit": source.collection.is_editable_by(request.user),
        "image": images,
        "located": located,
        "marks": [(x0, y0, x1 - x0, y1 - y0) for x0, y0, x1, y1 in located.boxes] if located else [],
        # A slide's text stays below its image: its speaker notes are not on the slide.
        "page_html": "" if source.file_type == FileType.PDF else render_markdown(originals.page_markdown(source, page)),
        "words": words,
        "previous": max((n for n in shown if n < page), default=None),
        "next": min((n for n in shown if n > page), default=None),
        "skipped": originals.skipped_pages(shown, page, source.pages or 0),
    }
    return _original(request, "collections/source_page.html", context)


@login_required
@require_GET
def source_page_image(request, pk: int, page: int):
    source = get_file_for_source(request.user, pk, page=page)
    response = HttpResponse(originals.page_image(source, page), content_type="image/png")
    response["Cache-Control"] = "private, max-age=3600"
    return response


@login_required
@require_GET
def source_context(request, pk: int, position: int):
    """A cited passage in its section, rebuilt from the stored text and rendered as the file page
    renders it, with the whole passage marked (the page scrolls to it)."""
    source = get_file_for_source(request.user, pk, position=position)
    found = originals.cited_section(source, position)
    last = found.heading_path.rsplit(" > ", 1)[-1]
    context = {
        "file": source,
        "section": found.heading_path,
        "time": last if source.file_type == FileType.TRANSCRIPT and is_time_heading(last) else "",
        "section_html": render_markdown(found.markdown),
        "words": found.words,
        "cut_before": found.cut_before,
        "cut_after": found.cut_after,
        "can_edit": source.collection.is_editable_by(request.user),
    }
    return _original(request, "collections/source_context.html", context)
