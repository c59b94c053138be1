"""What a search returns. Shared by the search pipeline, the API, the search page and the chat tool.

`Passage` is the one definition of a passage: the API schema (`collections_app.search.PassageOut`)
is generated from it and the chat's numbered view (`chat.turn.events.passage_view`) copies its fields.
`SearchOutcome.nothing_relevant` is an explicit outcome: callers never have to guess what an empty
list means.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal


@dataclass(frozen=True)
class Passage:
    chunk_id: str  # the Redis key of the chunk
    collection_id: int
    file_id: int
    file_name: str
    page: int | None  # first page of the chunk (PDFs), None for files without pages
    page_end: int | None
    section: str  # heading path, " > " joined
    text: str
    score: float = field(metadata={"description": "Fused (weighted RRF) score."})
    sources: dict[str, int] = field(metadata={"description": "Retriever name -> 1-based rank in its list."})
    curation_score: float | None = field(
        default=None, metadata={"description": "0-10 when curation judged the passage."}
    )
    curation_reason: str = ""
    included: bool = True  # False only in the "what curation dropped" view

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class SearchOutcome:
    query: str
    status: Literal["ok", "nothing_relevant"]
    results: list[Passage]
    dropped: list[Passage] = field(default_factory=list)  # excluded by curation, with reasons
    timings_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. "curation timed out for 2 passages"

    @property
    def nothing_relevant(self) -> bool:
        return self.status == "nothing_relevant"

    def as_dict(self) -> dict:
        return {
            "query": self.query,
            "status": self.status,
            "results": [p.as_dict() for p in self.results],
            "dropped": [p.as_dict() for p in self.dropped],
            "timings_ms": self.timings_ms,
            "notes": self.notes,
        }
