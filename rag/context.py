"""What the chat model reads for a search: each hit grown into a readable piece of its section.

    assemble(client, passages, count=5, max_chars=2400) -> list[Passage]

Search ranks small chunks (INGEST_CHUNK_SIZE characters), which find precisely but read poorly: an
answer often starts in the chunk before the hit or ends in the one after. So the model gets, for
each hit, the hit plus its neighbouring chunks of the same file and section (parent-child
retrieval), up to `max_chars` a passage. In rank order:

1. Near-duplicates give way: a hit already inside an earlier passage (two hits side by side in one
   section), or whose words are nearly all in an earlier passage (the same paragraph in two
   files), is skipped and the next hit takes its place — the budget buys different material.
2. The hit grows by its neighbours, the following chunk first (text usually runs on from a hit)
   then the preceding one, alternately, while the passage stays within `max_chars`, the neighbour
   is in the hit's section, and no other passage has used it. A hit is never cut.
3. Neighbours are joined without the overlap the chunker repeats at their border
   (INGEST_CHUNK_OVERLAP), and the passage's page range grows to cover them.

The passage keeps the hit's `chunk_id` (its identity for numbering and page permissions), file,
section and score; only `text`, `page` and `page_end` change. The neighbours of all hits are read
in one pipelined round trip. Retrieved text stays untrusted data: nothing here interprets it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import redis
from django.conf import settings

from rag.index import ChunkStore, IndexedChunk, read_chunks
from rag.results import Passage

# At most this many neighbours are read on each side of a hit, so the one round trip stays small.
MAX_REACH = 12
# An overlap shorter than this is taken for a coincidence ("a", "the "), not the chunker's repeat.
MIN_OVERLAP = 12
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Assembly:
    passages: list[Passage]
    no_room: int  # hits left out because the room was spent


@dataclass
class _Piece:
    """A passage being assembled: its chunks by position, joined on demand."""

    hit: Passage
    chunks: dict[int, IndexedChunk]

    def text(self, overlap: int) -> str:
        return join_chunks([chunk.text for _, chunk in sorted(self.chunks.items())], overlap)


def assemble(
    client: redis.Redis,
    passages: Sequence[Passage],
    *,
    count: int,
    max_chars: int,
    room_chars: int | None = None,
    overhead_chars: int = 0,
    duplicate_share: float | None = None,
    overlap: int | None = None,
) -> Assembly:
    """Passages from the ranked hits `passages`, each expanded within its section to `max_chars`.

    Without `room_chars`: up to `count` passages. With it: passages (each costing its text plus
    `overhead_chars`) while their total fits `room_chars` — `max_chars` is then the share planned
    for each of `count` passages, and where sections are too short to use their share, the room
    left goes to further hits rather than staying empty. A hit that no longer fits is skipped (a
    shorter one after it may; `Assembly.no_room` counts those). `duplicate_share`
    (CHAT_DUPLICATE_SHARE): a hit whose distinct words are at least this share in one earlier
    passage gives way. `overlap` (INGEST_CHUNK_OVERLAP): the longest repeat removed
    where two chunks meet. A hit whose chunk is gone (re-ingested meanwhile) is kept as it was.
    """
    if count <= 0 or not passages:
        return Assembly([], 0)
    share = settings.CHAT_DUPLICATE_SHARE if duplicate_share is None else duplicate_share
    overlap = settings.INGEST_CHUNK_OVERLAP if overlap is None else overlap
    # Enough neighbours to fill `max_chars` with chunks of the configured size (a section's last
    # chunk may be shorter: one more on each side).
    step = max(settings.INGEST_CHUNK_SIZE - overlap, 100)
    reach = min(MAX_REACH, math.ceil(max_chars / step) + 1)
    stored = _neighbours(client, passages, reach)
    used: dict[tuple[int, int, int], _Piece] = {}  # (collection, file, position) -> its passage
    pieces: list[_Piece] = []
    words: list[set[str]] = []
    spent, no_room = 0, 0
    # First the hits themselves, in rank order (a hit beside an earlier one joins its passage), so
    # the growing below never costs a hit its place; then the room left grows them, best first.
    for hit in passages:
        if room_chars is None and len(pieces) >= count:
            break
        position = position_of(hit.chunk_id)
        if (hit.collection_id, hit.file_id, position) in used or _duplicate(hit.text, words, share):
            continue
        own = _own_chunk(hit, position, stored)
        beside = _beside(hit, position, own, used)
        cost = len(hit.text) + overhead_chars if beside is None else _added_len(beside, position, own, overlap)
        if room_chars is not None and spent + cost > room_chars:
            no_room += 1
            continue
        piece = beside or _Piece(hit, {})
        piece.chunks[position] = own
        used[(hit.collection_id, hit.file_id, position)] = piece
        if beside is None:
            pieces.append(piece)
        words.append(_words(hit.text))
        spent += cost
    for piece in pieces:
        before = len(piece.text(overlap))
        left = max_chars if room_chars is None else before + room_chars - spent
        _grow(piece, stored, used, min(max(max_chars, before), left), overlap)
        spent += len(piece.text(overlap)) - before
    return Assembly([_as_passage(piece, overlap) for piece in pieces], no_room)


def _own_chunk(hit: Passage, position: int, stored: dict[tuple[int, int, int], IndexedChunk]) -> IndexedChunk:
    own = stored.get((hit.collection_id, hit.file_id, position))
    if own is None or own.text != hit.text:  # replaced since the search: keep the hit as found
        own = IndexedChunk(hit.file_id, position, hit.text, hit.file_name, hit.page, hit.page_end, hit.section)
    return own


def _beside(hit: Passage, position: int, own: IndexedChunk, used: dict[tuple[int, int, int], _Piece]) -> _Piece | None:
    """The passage that ends right before or starts right after the hit, in the hit's section."""
    for side in (-1, +1):
        piece = used.get((hit.collection_id, hit.file_id, position + side))
        at_end = piece is not None and position + side in (min(piece.chunks), max(piece.chunks))
        if piece is not None and at_end and piece.chunks[position + side].heading_path == own.heading_path:
            return piece
    return None


def position_of(chunk_id: str) -> int:
    """A chunk's position in its file: the last part of its key (rag/index.py's key format)."""
    return int(chunk_id.rsplit(":", 1)[-1])


def _neighbours(
    client: redis.Redis, passages: Sequence[Passage], reach: int
) -> dict[tuple[int, int, int], IndexedChunk]:
    """The stored chunks around every hit (the hits included), read in one round trip."""
    wanted: list[tuple[int, int, int]] = []
    for hit in passages:
        position = position_of(hit.chunk_id)
        for p in range(max(position - reach, 0), position + reach + 1):
            wanted.append((hit.collection_id, hit.file_id, p))
    wanted = list(dict.fromkeys(wanted))
    stores = {cid: ChunkStore(cid, client) for cid in {w[0] for w in wanted}}
    keys = [stores[cid].key(fid, p) for cid, fid, p in wanted]
    found = read_chunks(client, keys)
    return {place: chunk for place, chunk in zip(wanted, found, strict=True) if chunk is not None}


def _grow(
    piece: _Piece,
    stored: dict[tuple[int, int, int], IndexedChunk],
    used: dict[tuple[int, int, int], _Piece],
    max_chars: int,
    overlap: int,
) -> None:
    """Add the piece's neighbours of its section, alternately after and before, within `max_chars`."""
    cid, fid = piece.hit.collection_id, piece.hit.file_id
    heading = piece.chunks[min(piece.chunks)].heading_path
    length = len(piece.text(overlap))
    ends = {+1: max(piece.chunks), -1: min(piece.chunks)}
    open_sides = [+1, -1]  # the following chunk first: text usually runs on from a hit
    while open_sides:
        for side in list(open_sides):
            place = (cid, fid, ends[side] + side)
            chunk = stored.get(place)
            added = 0 if chunk is None else _added_len(piece, place[2], chunk, overlap)
            if chunk is None or place in used or chunk.heading_path != heading or length + added > max_chars:
                open_sides.remove(side)
                continue
            piece.chunks[place[2]] = chunk
            used[place] = piece
            ends[side] = place[2]
            length += added


def _added_len(piece: _Piece, position: int, chunk: IndexedChunk, overlap: int) -> int:
    """How much longer the piece's text gets with `chunk` joined at `position` (one end of it)."""
    before = piece.text(overlap)
    after = join_chunks([before, chunk.text] if position > max(piece.chunks) else [chunk.text, before], overlap)
    return len(after) - len(before)


def _as_passage(piece: _Piece, overlap: int) -> Passage:
    chunks = [chunk for _, chunk in sorted(piece.chunks.items())]
    if len(chunks) == 1:
        return piece.hit
    pages = [p for c in chunks for p in (c.page_start, c.page_end) if p is not None]
    return replace(
        piece.hit,
        text=join_chunks([c.text for c in chunks], overlap),
        page=min(pages) if pages else piece.hit.page,
        page_end=max(pages) if pages else piece.hit.page_end,
    )


def join_chunks(texts: Sequence[str], overlap: int) -> str:
    """Consecutive chunks as one text, each border's repeated overlap kept once; chunks that do not
    overlap (a border at a paragraph, or no overlap configured) are joined as paragraphs."""
    if not texts:
        return ""
    joined = texts[0]
    for text in texts[1:]:
        shared = _overlap_len(joined, text, overlap)
        joined = joined + text[shared:] if shared else f"{joined}\n\n{text}"
    return joined


def _overlap_len(before: str, after: str, overlap: int) -> int:
    """The length of the longest start of `after` that ends `before`, at most `overlap` characters
    (the chunker never repeats more); 0 when it is shorter than MIN_OVERLAP."""
    for size in range(min(overlap, len(before), len(after)), MIN_OVERLAP - 1, -1):
        if before.endswith(after[:size]):
            return size
    return 0


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.casefold()))


def _duplicate(text: str, earlier: list[set[str]], share: float) -> bool:
    """Whether nearly all of `text`'s distinct words are in one earlier passage."""
    words = _words(text)
    if not words or share > 1:
        return False
    return any(len(words & seen) >= share * len(words) for seen in earlier)
