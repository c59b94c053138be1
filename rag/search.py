"""Hybrid search over one or more collections: five retrievers, weighted RRF, LLM curation.

    search_collections(collections, query) -> SearchOutcome

Stages (each timed in `timings_ms`):
1. embed: the query once per embedding model in scope (with the model's query prefix);
2. retrieve: vector KNN, exact phrase, substring, all words, any word, for every collection, in
   one pipelined Redis round trip (rag/retrievers.py);
3. fuse: weighted RRF per collection; the result budget is split between collections in
   proportion to their fused relevance (Hamilton apportionment), then the winners of all
   collections are ordered by fused score;
4. fetch: the winners' fields, in one more round trip;
5. curate (optional): one LLM verdict per passage, concurrently (rag/curation.py).

"Nothing relevant" is an explicit status: curation excluded everything, or (without curation) no
keyword retriever matched and no chunk was similar enough to the query: more similar than nonsense
gets in the same collection (the calibrated floor, rag/floor.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Literal

import redis
from django.utils.translation import gettext as _

from kernel.errors import CurreChatError
from kernel.redis_client import get_index_redis
from rag import config, curation, floor, index_layout, retrievers
from rag.curation import CurationRun
from rag.documents import Document
from rag.fusion import Fused, budgets, weighted_rrf
from rag.index import ChunkStore, IndexedChunk, read_chunks
from rag.providers import get_embedding_model, is_available_on_second_look
from rag.providers.base import UsageSink
from rag.providers.languages import knows_language
from rag.query import parse
from rag.results import Passage, SearchOutcome

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000


class EmptyQuery(CurreChatError):
    status_code = 400


class _Clock:
    def __init__(self):
        self.timings: dict[str, float] = {}
        self.started = time.perf_counter()

    @contextmanager
    def stage(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.timings[name] = round(self.timings.get(name, 0.0) + (time.perf_counter() - start) * 1000, 2)

    def finish(self) -> dict[str, float]:
        self.timings["total"] = round((time.perf_counter() - self.started) * 1000, 2)
        return self.timings


def search_collections(
    collections: Sequence,
    query: str,
    *,
    limit: int = 15,
    curate: bool = True,
    curation_model: str | None = None,
    weights: Mapping[str, float] | None = None,
    rrf_k: float | None = None,
    depth: int | None = None,
    foreign_vector_weight: float | None = None,
    client: redis.Redis | None = None,
    usage: UsageSink | None = None,
    further: int = 0,
    named: Sequence[Document] = (),
) -> SearchOutcome:
    """Search `collections` (Collection objects the caller has already checked access to).

    The results are the `limit` best, split between collections by Hamilton apportionment, then
    up to `further` more candidates in fused order (the chat's context assembly may use them when
    room is left; curation judges them too, so callers that curate leave it at 0).

    `weights`, `rrf_k`, `depth` and `foreign_vector_weight` default to the SEARCH_* settings;
    benchmarks pass their own.
    Raises EmptyQuery for a blank query and redis.RedisError when the index is unreachable; a
    failing retriever or curation call only adds a note. `usage` is told the tokens of each
    curation call (the person searching pays for them). Each document in `named` (those the
    question names, rag/documents.named_in) gets seats of its own among the results.
    """
    query = (query or "").strip()[:MAX_QUERY_CHARS]
    if not query:
        raise EmptyQuery(_("Type something to search for."))
    clock, client = _Clock(), client or get_index_redis()
    notes: list[str] = []
    with clock.stage("embed"):
        targets = build_targets(collections, query, notes, foreign_vector_weight)
        scoped = document_targets(targets, named)
    with clock.stage("retrieve"):
        retrievers.run(client, targets + scoped, depth or config.search().retriever_depth)
        follow_moved(client, targets + scoped, depth or config.search().retriever_depth)
    with clock.stage("fuse"):
        k = config.search().rrf_k if rrf_k is None else rrf_k
        chosen = select(targets, limit, weights or config.search().weights, k, further)
        if scoped:
            chosen = give_seats(chosen, scoped, limit, weights or config.search().weights, k)
            notes.append(named_note(named, scoped))
    with clock.stage("fetch"):
        passages = fetch(client, chosen)
    notes += retriever_notes(targets, query) + stale_notes(client, targets)
    if not passages:
        notes.append(_("No passage matched."))
        return SearchOutcome(query, "nothing_relevant", [], timings_ms=clock.finish(), notes=notes)
    model = curation_model or config.search().curation_model
    if curate and not is_available_on_second_look(model):  # a kept failure to reach it: looked at again
        # Asking a missing model would fail once per passage, after the client's timeouts.
        # Said in words (pages show the notes); the model's name is under the status badge's "Details".
        notes.append(
            _(
                "Curation was skipped: the model that checks results is not on the model server. "
                "Results keep their search order."
            )
        )
        curate = False
    if not curate and _too_weak(client, collections, targets, clock):
        note = _("Nothing in the material matches the query's words or is close to its meaning.")
        below = _("below the similarity threshold")
        dropped = [replace(p, included=False, curation_reason=below) for p in passages]
        return SearchOutcome(query, "nothing_relevant", [], dropped, clock.finish(), notes + [note])
    if not curate:
        return SearchOutcome(query, "ok", passages, timings_ms=clock.finish(), notes=notes)
    with clock.stage("curate"):
        run = curate_passages(query, passages, model, usage)
        kept, dropped = apply_verdicts(passages, run)
    notes += curation_notes(run)
    status: Literal["ok", "nothing_relevant"] = "ok" if kept else "nothing_relevant"
    return SearchOutcome(query, status, kept, dropped, clock.finish(), notes)


def follow_moved(client: redis.Redis, targets: Sequence[retrievers.Target], depth: int) -> None:
    """Search again the collections whose index was re-created where their slot now is (a slot
    that moved to another cluster shard leaves its index behind: rag/index_layout.py)."""
    missing = {t.collection_id: t for t in targets if t.index_missing}
    restored = index_layout.restore_missing(client, missing) if missing else []
    if restored:
        retrievers.run(client, [t for t in targets if t.index_missing and t.collection_id in restored], depth)


def retriever_notes(targets: Sequence[retrievers.Target], query: str) -> list[str]:
    """A sentence per failed retriever for the user; the detail goes to the log."""
    notes = []
    for target in targets:
        for retriever, error in target.errors.items():
            log.warning("%s search failed in collection %s for %r: %s", retriever, target.collection_id, query, error)
            failed = _("The %(retriever)s search failed; the other searches still ran.")
            notes.append(failed % {"retriever": retrievers.LABELS[retriever]})
    return notes


def stale_notes(client: redis.Redis, targets: Sequence[retrievers.Target]) -> list[str]:
    """A sentence when an index was built with an older storage format (see rag/index.py): its
    capitalised non-ASCII words are not found until `manage.py reindex --stale` rebuilds it."""
    stores = [ChunkStore(t.collection_id, client) for t in targets]
    pipe = client.pipeline(transaction=False)
    for store in stores:
        pipe.get(store.format_key())
    unversioned = [store for store, version in zip(stores, pipe.execute(), strict=True) if version is None]
    if any(store.is_stale() for store in unversioned):  # rare: FT.INFO only for those without a version
        return [
            _(
                "This collection's index was built by an older version of CurreChat and some words are not "
                "found until it is rebuilt (an administrator runs `manage.py reindex --stale`)."
            )
        ]
    return []


def build_targets(
    collections: Sequence, query: str, notes: list[str] | None = None, foreign_vector_weight: float | None = None
) -> list[retrievers.Target]:
    """One target per collection, with the query embedded once per embedding model.

    When the embedding model cannot be reached the keyword retrievers still run (the app stays
    usable without a model server); `notes` says so. When the model was not trained for the
    collection's language, its list counts `foreign_vector_weight` (SEARCH_FOREIGN_VECTOR_WEIGHT)
    times its usual weight in the fusion.
    """

    if foreign_vector_weight is None:
        foreign_vector_weight = config.search().foreign_vector_weight

    vectors: dict[str, list[float] | None] = {}
    targets = []
    for collection in collections:
        model = collection.embedding_model
        if model not in vectors:  # one embedding per model, however many collections share it
            try:
                vectors[model] = get_embedding_model(model).embed_query(query)
            except CurreChatError as exc:  # ProviderError, UnknownModel
                vectors[model] = None
                if notes is not None:
                    notes.append(_("Search by meaning is unavailable: %(error)s") % {"error": exc})
        index = ChunkStore.index_name(collection.id)
        weight = 1.0 if knows_language(model, collection.language) else foreign_vector_weight
        parsed = parse(query, collection.language)
        targets.append(retrievers.Target(collection.id, index, parsed, vectors[model], vector_weight=weight))
    return targets


def select(
    targets: Sequence[retrievers.Target], limit: int, weights: Mapping[str, float], k: float, further: int = 0
) -> list[tuple[int, Fused]]:
    """Fuse each collection's lists, split `limit` between collections, order the winners; then up
    to `further` of the candidates left, best fused score first, whatever their collection."""
    fused = {t.collection_id: weighted_rrf(_keys(t), target_weights(t, weights), k) for t in targets}
    # A collection's share is the fused relevance of the best `limit` candidates it has: where
    # several retrievers agree on many chunks, that collection gets more of the budget.
    shares = {cid: sum(f.score for f in items[:limit]) for cid, items in fused.items()}
    granted = budgets(shares, {cid: len(items) for cid, items in fused.items()}, limit)
    winners = [(cid, f) for cid, items in fused.items() for f in items[: granted[cid]]]
    rest = [(cid, f) for cid, items in fused.items() for f in items[granted[cid] :]]
    best_first = sorted(rest, key=lambda pair: -pair[1].score)[:further] if further > 0 else []
    return sorted(winners, key=lambda pair: -pair[1].score) + best_first


def document_targets(targets: Sequence[retrievers.Target], named: Sequence[Document]) -> list[retrievers.Target]:
    """One more target per named document of a collection in scope: its collection's query and
    vector, kept within the document's file."""
    by_collection = {t.collection_id: t for t in targets}
    return [
        replace(by_collection[doc.collection_id], lists={}, errors={}, files=(doc.file_id,))
        for doc in named
        if doc.collection_id in by_collection
    ]


def give_seats(
    chosen: Sequence[tuple[int, Fused]],
    scoped: Sequence[retrievers.Target],
    limit: int,
    weights: Mapping[str, float],
    k: float,
) -> list[tuple[int, Fused]]:
    """Two thirds of the `limit` results go to the named documents, in equal shares, each to its
    own best passages; the rest keep the general ranking (which may hold more of them). A document
    with fewer passages leaves its seats to the general ranking. `chosen` is `select`'s answer:
    its first `limit` are the winners, the rest further candidates."""
    seats = max(1, (limit - limit // 3) // len(scoped))
    taken: set[str] = set()
    picks: list[tuple[int, Fused]] = []
    for target in scoped:
        own = [f for f in weighted_rrf(_keys(target), target_weights(target, weights), k) if f.key not in taken]
        picks += [(target.collection_id, f) for f in own[:seats]]
        taken.update(f.key for f in own[:seats])
    general = [pair for pair in chosen if pair[1].key not in taken]
    winners = picks + general[: max(limit - len(picks), 0)]
    rest = general[max(limit - len(picks), 0) :][: max(len(chosen) - limit, 0)]
    return sorted(winners, key=lambda pair: -pair[1].score) + rest


def named_note(named: Sequence[Document], scoped: Sequence[retrievers.Target]) -> str:
    """Says which documents got passages of their own (shown with the search, as its other notes)."""
    files = {t.files[0] for t in scoped}
    names = ", ".join(doc.name for doc in named if doc.file_id in files)
    return _("The question names %(documents)s: each gets passages of its own.") % {"documents": names}


def target_weights(target: retrievers.Target, weights: Mapping[str, float]) -> dict[str, float]:
    """The fusion weights for one collection: the vector weight scaled by the target's factor."""
    vector = retrievers.VECTOR
    return {**weights, vector: weights.get(vector, 0.0) * target.vector_weight}


def _keys(target: retrievers.Target) -> dict[str, list[str]]:
    return {retriever: [hit.key for hit in hits] for retriever, hits in target.lists.items()}


def _too_weak(client: redis.Redis, collections: Sequence, targets: Sequence[retrievers.Target], clock: _Clock) -> bool:
    """No keyword retriever matched, and in no collection does the passage nearest in meaning
    clear that collection's calibrated floor (rag/floor.py). Keyword hits are never cut."""
    if any(hits for t in targets for r, hits in t.lists.items() if r != retrievers.VECTOR):
        return False
    found = {t.collection_id: t.lists[retrievers.VECTOR] for t in targets if t.lists.get(retrievers.VECTOR)}
    if not found:
        return True
    models = {c.id: c.embedding_model for c in collections}
    indexes = {t.collection_id: t.index_name for t in targets}
    with clock.stage("floor"):
        floors = floor.floors(client, {cid: (indexes[cid], models[cid]) for cid in found})
    return all(floor.best_similarity(hits) < floors[cid] for cid, hits in found.items())


def fetch(client: redis.Redis, chosen: Sequence[tuple[int, Fused]]) -> list[Passage]:
    """The winners as passages, read in one round trip, in the order given."""
    chunks = read_chunks(client, [fused.key for _, fused in chosen])
    return [
        _passage(collection_id, fused, chunk)
        for (collection_id, fused), chunk in zip(chosen, chunks, strict=True)
        if chunk is not None  # the chunk was replaced between retrieval and fetch (re-ingestion)
    ]


def _passage(collection_id: int, fused: Fused, chunk: IndexedChunk) -> Passage:
    return Passage(
        chunk_id=fused.key,
        collection_id=collection_id,
        file_id=chunk.file_id,
        file_name=chunk.file_name,
        page=chunk.page_start,
        page_end=chunk.page_end,
        section=chunk.heading_path,
        text=chunk.text,
        score=round(fused.score, 6),
        sources=dict(fused.ranks),
    )


def curate_passages(query: str, passages: Sequence[Passage], model: str, usage: UsageSink | None = None) -> CurationRun:
    return curation.curate(query, passages, model_name=model, usage=usage)


def apply_verdicts(passages: Sequence[Passage], run: CurationRun) -> tuple[list[Passage], list[Passage]]:
    """Drop excluded passages; order the rest by curation score. A passage without a verdict keeps
    its fused position: the curated ones are re-ordered among the positions they held."""
    minimum = config.search().curation_min_score
    kept_slots: list[int] = []
    curated: list[Passage] = []
    dropped: list[Passage] = []
    final: list[Passage | None] = []
    for passage, verdict in zip(passages, run.verdicts, strict=True):
        if verdict is None:
            final.append(passage)
            continue
        judged = replace(passage, curation_score=verdict.score, curation_reason=verdict.reason)
        if not verdict.include or verdict.score < minimum:
            dropped.append(replace(judged, included=False))
            continue
        kept_slots.append(len(final))
        final.append(None)
        curated.append(judged)
    curated.sort(key=lambda p: -(p.curation_score or 0.0))  # stable: ties keep their fused order
    for slot, passage in zip(kept_slots, curated, strict=True):
        final[slot] = passage
    return [p for p in final if p is not None], dropped


def curation_notes(run: CurationRun) -> list[str]:
    notes = []
    if run.failed:
        notes.append(_("Curation failed for %(n)s passage(s); they keep their search rank.") % {"n": run.failed})
    if run.timed_out:
        notes.append(_("Curation timed out for %(n)s passage(s); they keep their search rank.") % {"n": run.timed_out})
    return notes
