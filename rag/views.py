"""The "Try a search" page: the same search the chat model runs, with everything it did shown."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.views.decorators.http import require_GET

from accounts.permissions import get_collection_for_search
from currechat.rendering import render_markdown
from rag.retrievers import LABELS
from rag.search import MAX_QUERY_CHARS, search_collections


@login_required
@require_GET
def search_page(request, pk: int):
    """GET so a search can be bookmarked and repeated; nothing is written except the curation cache."""
    collection = get_collection_for_search(request.user, pk)
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    # The checkbox is absent from a submitted form when unticked; before any search it starts ticked.
    curate = "curate" in request.GET if query else True
    outcome = search_collections([collection], query, curate=curate) if query else None
    context = {
        "collection": collection,
        "query": query,
        "curate": curate,
        "outcome": outcome,
        "results": _rows(outcome.results) if outcome else [],
        "dropped": _rows(outcome.dropped) if outcome else [],
        "can_edit": collection.is_editable_by(request.user),
    }
    return render(request, "search/search.html", context)


def _rows(passages) -> list[dict]:
    return [
        {
            "passage": p,
            # Passages are Markdown (ingestion turns every format into it): shown as the file page
            # shows them, sanitised.
            "html": render_markdown(p.text),
            "sources": [(LABELS.get(name, name), rank) for name, rank in sorted(p.sources.items(), key=lambda s: s[1])],
        }
        for p in passages
    ]
