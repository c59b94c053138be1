"""The teacher's review of extracted text: correcting a page (the one write function that the file
page and the API call), and what the file page shows of each page."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from collections_app.lifecycle import requeue
from collections_app.models import FileStatus, PageCorrection, SourceFile
from collections_app.signals import file_changed
from kernel.errors import Conflict, InvalidInput, NotFound
from kernel.formats import number
from rag.ingest import chunking

MAX_PAGE_CHARS = 100_000


def correct_page(user, source: SourceFile, page: int, markdown: str) -> PageCorrection:
    """Put the teacher's Markdown in place of page `page` (0: a file without pages), record who
    changed what, and re-chunk and re-embed this file alone. The caller has checked that `user`
    may edit the file's collection."""
    markdown = markdown.replace("\r\n", "\n").strip()
    if not markdown:
        raise InvalidInput(_("The corrected text is empty. Write what the page says, or leave it as it was."))
    if len(markdown) > MAX_PAGE_CHARS:
        raise InvalidInput(
            _("The corrected text is %(n)s characters; a page may hold at most %(limit)s.")
            % {"n": number(len(markdown)), "limit": number(MAX_PAGE_CHARS)}
        )
    with transaction.atomic():
        locked = SourceFile.objects.select_for_update().get(pk=source.pk)
        if locked.status != FileStatus.READY:
            raise Conflict(
                _("“%(name)s” is %(status)s; its pages can be corrected once it is ready.")
                % {"name": locked.original_name, "status": locked.get_status_display().lower()}
            )
        pages = chunking.decompose(locked.markdown)
        at = next((i for i, p in enumerate(pages) if (p.number or 0) == page), None)
        if at is None:
            raise NotFound(_("“%(name)s” has no page %(page)s.") % {"name": locked.original_name, "page": page})
        correction = PageCorrection.objects.create(
            source=locked, page=page, markdown=markdown, previous=pages[at].markdown, user=user
        )
        pages[at] = type(pages[at])(pages[at].number, markdown)
        flags = [f for f in locked.flagged_pages if f.get("page") != page]
        SourceFile.objects.filter(pk=locked.pk).update(markdown=chunking.compose(pages), flagged_pages=flags)
    file_changed.send(sender=SourceFile, file_id=source.pk, file_name=source.original_name)
    # Re-chunk the stored Markdown (no new extraction): the embedding cache makes the unchanged
    # passages cheap, and search keeps the old passages until the new ones replace them.
    requeue(source, re_extract=False)
    return correction


@dataclass(frozen=True)
class ReviewPage:
    number: int  # 0: a file without pages
    markdown: str
    html: str
    flag: str  # why the page needs checking, as a sentence; "" when it does not
    corrections: list[PageCorrection]


FLAG_SENTENCES = {
    "short": gettext_lazy("The vision model gave little or no text for this page."),
    "repeated": gettext_lazy("The vision model repeated a line on this page (it may have got stuck)."),
    "unknown_words": gettext_lazy(
        "Words the vision model wrote are not in the page's own text: it may have invented some."
    ),
}


def flag_sentence(why: str) -> str:
    return str(FLAG_SENTENCES.get(why, FLAG_SENTENCES["unknown_words"]))


def review_pages(source: SourceFile, render) -> list[ReviewPage]:
    """The file's pages as the file page shows them for review, with their flags and corrections."""
    flags = {f.get("page"): f.get("why", "") for f in source.flagged_pages}
    history: dict[int, list[PageCorrection]] = {}
    for correction in source.corrections.select_related("user").order_by("-created", "-id")[:500]:
        history.setdefault(correction.page, []).append(correction)
    return [
        ReviewPage(
            number=page.number or 0,
            markdown=page.markdown,
            html=render(page.markdown),
            flag=flag_sentence(flags[page.number]) if page.number in flags else "",
            corrections=history.get(page.number or 0, []),
        )
        for page in chunking.decompose(source.markdown)
    ]


def flagged_count(files) -> int:
    """Pages still to check across `files` (the collection page's count)."""
    return sum(len(f.flagged_pages or []) for f in files)
