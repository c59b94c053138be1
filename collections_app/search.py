"""Searching a collection: the "Try a search" page and `POST /api/v1/collections/{id}/search`.

Both run the same search the chat model runs (`rag.search.search_collections`) on a collection
the user may search, and show everything it did. The API's passage schema is generated from
`rag.results.Passage`, so the two cannot drift. Both go through `metered_search`: the curation
calls are charged to the person searching, as the chat's are.
"""

from __future__ import annotations

import typing

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET
from ninja import Field, Router, Schema

from access.rules import get_collection_for_search, search_prompt
from collections_app import metering
from collections_app.documents import named_documents
from collections_app.writes import language_name, model_for_language
from kernel.formats import number
from kernel.ratelimit import search_window
from kernel.rendering import render_markdown
from kernel.schemas import schema_from_dataclass
from rag.providers.languages import knows_language
from rag.results import Passage, SearchOutcome
from rag.retrievers import LABELS
from rag.search import MAX_QUERY_CHARS, search_collections

router = Router(tags=["search"])


if typing.TYPE_CHECKING:
    PassageOut = Schema
else:
    PassageOut = schema_from_dataclass("PassageOut", Passage)


class SearchIn(Schema):
    query: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS)
    limit: int = Field(15, ge=1, le=50)
    curate: bool = True


class SearchOut(Schema):
    query: str
    status: str = Field(..., description="'ok', or 'nothing_relevant' when nothing in the material fits.")
    results: list[PassageOut]
    dropped: list[PassageOut] = Field(..., description="Passages curation excluded, with its reasons.")
    timings_ms: dict[str, float]
    notes: list[str]


@router.post("/collections/{collection_id}/search", response=SearchOut)
def search_api(request, collection_id: int, body: SearchIn):
    """Hybrid search in one collection: owners and co-owners, and students of a prompt using it."""
    collection = get_collection_for_search(request.user, collection_id)
    limit = _capped_limit(request.user, collection, body.limit)
    by_program = getattr(request, "by_program", False)  # an API token (currechat.api.BearerAuth)
    outcome = metered_search(
        request.user, collection, body.query, limit=limit, curate=body.curate, by_program=by_program
    )
    return outcome.as_dict()


def metered_search(
    user, collection, query: str, *, limit: int = 15, curate: bool = True, by_program: bool = False
) -> SearchOutcome:
    """The page's and the API's search, charged to the person searching like a chat turn.

    A student searches through a prompt they joined (`search_prompt`): its curation switch holds,
    and its budget and their own pay for the curation calls; a teacher's search in their own
    collection counts against their own budget across prompts. A curated search first sets an
    estimate aside (`metering.reserve`: the chat app's budgets), so a spent budget is refused with
    a 429 naming the reset time before any model is asked, then counts the real calls. Without
    curation no model answers, so nothing is charged or refused. Every search counts against a
    search rate limit: a program's (`by_program`, an API token) apart from the pages', an uncurated
    search's apart from (and larger than) a curated one's (`kernel.ratelimit.search_window`)."""
    prompt = search_prompt(user, collection)
    switched_off = curate and prompt is not None and not prompt.curation_enabled
    curate = curate and not switched_off
    meter = metering.reserve(user.pk, prompt) if curate else None  # before the rate limit: a refusal costs no slot
    try:
        search_window(curated=curate, by_program=by_program).hit(user.pk)
        named = named_documents([collection], query)
        outcome = search_collections([collection], query, limit=limit, curate=curate, usage=meter, named=named)
    finally:
        if meter is not None:
            meter.settle()
    if meter is not None:
        meter.flush()  # the prompt's statistics, as a turn's
    if switched_off:
        note = _("Curation is off in “%(prompt)s”, the assistant you search through: results keep their search order.")
        outcome.notes.append(note % {"prompt": prompt.name})
    return outcome


def _capped_limit(user, collection, limit: int) -> int:
    """Students (who reach the collection through a prompt) get at most SEARCH_STUDENT_MAX_LIMIT
    results: curation asks the model once per result, and 50 calls per request is a cheap way to
    tie up the model server."""
    if collection.is_editable_by(user):
        return limit
    return min(limit, settings.SEARCH_STUDENT_MAX_LIMIT)


def language_warning(collection) -> dict | None:
    """What to tell a teacher whose collection is in a language its embedding model was not trained
    for (the search page and the collection pages show it): a sentence in plain words, and which
    model it is and which to choose for the page's "Details"; None when the model knows the language."""
    if knows_language(collection.embedding_model, collection.language):
        return None
    warning = _(
        "The model for search by meaning in this collection does not know %(language)s: it ranks %(language)s "
        "text almost at random, so it counts less here and matching words do most of the work."
    ) % {"language": language_name(collection.language)}
    better = model_for_language(collection.language, collection.embedding_model)
    if better:
        advice = _("The model server has one that knows every language: choose it in the collection's settings.")
    else:
        advice = _("Ask your administrator to add a model that knows every language to the model server.")
    return {"text": f"{warning} {advice}", "model": collection.embedding_model, "better": better}


@login_required
@require_GET
def search_page(request, pk: int):
    """GET so a search can be bookmarked and repeated; nothing is written except the curation cache."""
    collection = get_collection_for_search(request.user, pk)
    query = request.GET.get("q", "").strip()[:MAX_QUERY_CHARS]
    # The checkbox is absent from a submitted form when unticked; before any search it starts ticked.
    curate = "curate" in request.GET if query else True
    outcome = metered_search(request.user, collection, query, curate=curate) if query else None
    context = {
        "collection": collection,
        "query": query,
        "curate": curate,
        "outcome": outcome,
        "results": _rows(outcome.results) if outcome else [],
        "dropped": _rows(outcome.dropped) if outcome else [],
        "can_edit": collection.is_editable_by(request.user),
        "timings": _timing_sentences(outcome.timings_ms) if outcome else [],
        "language_warning": language_warning(collection),
    }
    context["page_models"] = [("embeddings", collection.embedding_model)]
    return render(request, "search/search.html", context)


# What each of the search's stages (rag/search.py) did, in a teacher's words.
STAGE_SENTENCES = {
    "embed": gettext_lazy("Turning the question into a search by meaning took %(ms)s ms."),
    "retrieve": gettext_lazy("Finding passages by meaning and by words took %(ms)s ms."),
    "fuse": gettext_lazy("Combining the searches into one list took %(ms)s ms."),
    "fetch": gettext_lazy("Fetching the passages' text took %(ms)s ms."),
    "curate": gettext_lazy("The curation model's checks took %(ms)s ms."),
    "total": gettext_lazy("The whole search took %(ms)s ms."),
}


def _timing_sentences(timings_ms: dict[str, float]) -> list[str]:
    """One sentence per timed stage, in the search's order; a stage without words is left out."""
    return [
        str(STAGE_SENTENCES[stage]) % {"ms": number(timings_ms[stage], 0)}
        for stage in STAGE_SENTENCES
        if stage in timings_ms
    ]


def _rows(passages: list[Passage]) -> list[dict]:
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
