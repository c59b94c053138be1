"""REST endpoints for searching collections."""

from __future__ import annotations

from ninja import Field, Router, Schema

from accounts.permissions import get_collection_for_search
from rag.search import MAX_QUERY_CHARS, search_collections

router = Router(tags=["search"])


class SearchIn(Schema):
    query: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS)
    limit: int = Field(15, ge=1, le=50)
    curate: bool = True


class PassageOut(Schema):
    chunk_id: str
    collection_id: int
    file_id: int
    file_name: str
    page: int | None
    page_end: int | None
    section: str
    text: str
    score: float = Field(..., description="Fused (weighted RRF) score.")
    sources: dict[str, int] = Field(..., description="Retriever name -> 1-based rank in its list.")
    curation_score: float | None = Field(None, description="0-10 when curation judged the passage.")
    curation_reason: str = ""
    included: bool = True


class SearchOut(Schema):
    query: str
    status: str = Field(..., description="'ok', or 'nothing_relevant' when nothing in the material fits.")
    results: list[PassageOut]
    dropped: list[PassageOut] = Field(..., description="Passages curation excluded, with its reasons.")
    timings_ms: dict[str, float]
    notes: list[str]


@router.post("/collections/{collection_id}/search", response=SearchOut)
def search(request, collection_id: int, body: SearchIn):
    """Hybrid search in one collection: owners and co-owners, and students of a prompt using it."""
    collection = get_collection_for_search(request.user, collection_id)
    return search_collections([collection], body.query, limit=body.limit, curate=body.curate).as_dict()
