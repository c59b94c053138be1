"""What the chat model reads for a search: each hit grown into a readable piece of its section.

    assemble(client, passages, count=5, max_chars=2400) -> list[Passage]

Search ranks small chunks (INGEST_CHUNK_SIZE characters), which find precisely but read poorly: an
answer often starts in the chunk before the hit or ends in the one after. So the model gets, for
each hit, the hit plus its neighbouring chunks of the same file and section (parent-child
retrieval), up to `max_chars` a passage:

1. The first hits (what a search gave the model before this assembly) are placed first, in rank
   order, while they fit; near-duplicates give way: a hit already inside an earlier passage (two
   hits side by side in one section), or whose words are nearly all in an earlier passage (the
   same paragraph in two files), is skipped and the next hit takes its place.
2. The room left is spent one piece at a time on what the search's fused scores say is worth
   most: a further hit of the ranked list, or the next neighbour of a placed passage (its hit's
   score, discounted per chunk of distance) — the following chunk first at equal worth (text
   usually runs on from a hit). A neighbour must be in the hit's section, unused, and keep the
   passage within `max_chars`; a passage stops one chunk short of another. A hit is never cut.
3. The last of the room, too short for a whole chunk, goes to the best passages' next sentences.
4. Neighbours are joined without the overlap the chunker repeats at their border
   (INGEST_CHUNK_OVERLAP), and the passage's page range grows to cover them.

The passage keeps the hit's `chunk_id` (its identity for numbering and page permissions), file,
section and score; only `text`, `page` and `page_end` change. The neighbours of all hits are read
in one pipelined round trip. Retrieved text stays untrusted data: nothing here interprets it.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import redis

from rag import config
from rag.index import ChunkStore, IndexedChunk, read_chunks
from rag.results import Passage

# At most this many neighbours are read on each side of a hit, so the one round trip stays small.
MAX_REACH = 12
# An overlap shorter than this is taken for a coincidence ("a", "the "), not the chunker's repeat.
MIN_OVERLAP = 12
_WORD = re.compile(r"\w+")
# A part of a chunk added to fill the last of the room is at least this long (shorter adds little
# but another border to read).
MIN_PART_CHARS = 60
# Where a sentence ends (its closing quote or bracket included) and the next may start.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s)|(?=\n)")
_SENTENCE_START = re.compile(r"[.!?…][\"'”’)\]]*\s+|\n+")


@dataclass(frozen=True)
class Assembly:
    passages: list[Passage]
    no_room: int  # hits left out because the room was spent


@dataclass
class _Piece:
    """A passage being assembled: its chunks by position, joined on demand."""

    hit: Passage
    chunks: dict[int, IndexedChunk]
    placed: int = 0  # its length with its hits: joined hits may pass the cap, never growth

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
    first: int | None = None,
    neighbour_weight: float | None = None,
) -> Assembly:
    """Passages from the ranked hits `passages`, each expanded within its section to `max_chars`.

    Without `room_chars`: up to `count` passages. With it: passages (each costing its text plus
    `overhead_chars`) while their total fits `room_chars` — `max_chars` is then the share planned
    for each of `count` passages. The first `first` hits (default: all) are placed first, in rank
    order; a hit that no longer fits is skipped (a shorter one after it may; `Assembly.no_room`
    counts those). The room left goes, one chunk at a time, to what is most likely to hold the
    answer: a further hit (worth its fused score) or the next neighbour of a placed passage (worth
    its hit's score times `neighbour_weight` (CHAT_NEIGHBOUR_WEIGHT) per chunk of distance); what
    no whole chunk fits goes to whole sentences of the best passages' next chunk.
    `duplicate_share` (CHAT_DUPLICATE_SHARE): a hit whose distinct words are at least this share
    in one earlier passage gives way. `overlap` (INGEST_CHUNK_OVERLAP): the longest repeat removed
    where two chunks meet. A hit whose chunk is gone (re-ingested meanwhile) is kept as it was.
    """
    if count <= 0 or not passages:
        return Assembly([], 0)
    state = _State(
        room_chars=room_chars,
        count=count,
        overhead_chars=overhead_chars,
        share=config.search().duplicate_share if duplicate_share is None else duplicate_share,
        overlap=config.ingestion().chunk_overlap if overlap is None else overlap,
    )
    weight = config.search().neighbour_weight if neighbour_weight is None else neighbour_weight
    # Enough neighbours to fill `max_chars` with chunks of the configured size (a section's last
    # chunk may be shorter: one more on each side).
    step = max(config.ingestion().chunk_size - state.overlap, 100)
    reach = min(MAX_REACH, math.ceil(max_chars / step) + 1)
    stored = _neighbours(client, passages, reach)
    first = len(passages) if first is None else first
    # Today's passages first, in rank order (a hit beside an earlier one joins its passage), so
    # nothing below ever costs one of them its place.
    for hit in passages[:first]:
        state.place(hit, stored)
    _spend_room(state, passages[first:], stored, max_chars, weight)
    # The room now left is shorter than any chunk that could come next; the text running on from
    # the best passages takes it, up to a sentence end.
    for piece in state.pieces:
        for side in (+1, -1):
            state.grow(_Side(piece, side), stored, max_chars, partial=True)
    return Assembly([_as_passage(piece, state.overlap) for piece in state.pieces], state.no_room)


def _spend_room(
    state: _State,
    further: Sequence[Passage],
    stored: dict[tuple[int, int, int], IndexedChunk],
    max_chars: int,
    weight: float,
) -> None:
    """The room left after the first hits, best value first, one hit or chunk at a time. Values are
    the search's own fused scores: a further hit the search ranked close to the placed ones beats
    the third chunk after hit 1, and a weak further hit loses to the text running on from a strong
    one. Ties: hits before neighbours, then rank order, the following chunk before the preceding."""
    queue: list[tuple[float, int, int, Passage | _Side]] = []
    order = itertools.count()

    def push(value: float, item: Passage | _Side) -> None:
        heapq.heappush(queue, (-value, 0 if isinstance(item, Passage) else 1, next(order), item))

    for hit in further:
        push(hit.score, hit)
    for piece in state.pieces:
        for side in (+1, -1):
            push(piece.hit.score * weight, _Side(piece, side))
    while queue:
        item = heapq.heappop(queue)[3]
        if isinstance(item, _Side):
            if state.grow(item, stored, max_chars):
                distance = abs(item.end() - position_of(item.piece.hit.chunk_id)) + 1
                push(item.piece.hit.score * weight**distance, item)
            continue
        placed = state.place(item, stored, further=True)
        if placed is not None and placed.hit is item:  # a passage of its own (not joined to another)
            for side in (+1, -1):
                push(item.score * weight, _Side(placed, side))


@dataclass
class _Side:
    """One end of a passage that may grow by the next chunk of its section."""

    piece: _Piece
    side: int  # +1: the following chunk, -1: the preceding one

    def end(self) -> int:
        return max(self.piece.chunks) if self.side > 0 else min(self.piece.chunks)


@dataclass
class _State:
    """The passages so far and the room they have spent."""

    room_chars: int | None
    count: int
    overhead_chars: int
    share: float
    overlap: int
    pieces: list[_Piece] = field(default_factory=list)
    used: dict[tuple[int, int, int], _Piece] = field(default_factory=dict)  # (collection, file, position)
    words: list[set[str]] = field(default_factory=list)
    spent: int = 0
    no_room: int = 0

    def fits(self, cost: int) -> bool:
        return self.room_chars is None or self.spent + cost <= self.room_chars

    def place(
        self, hit: Passage, stored: dict[tuple[int, int, int], IndexedChunk], *, further: bool = False
    ) -> _Piece | None:
        """Place a hit as a passage of its own (or joined to the one it borders); None when it is a
        near-duplicate, already in a passage, or does not fit. A `further` hit that does not fit is
        not counted in `no_room`: only the first hits are what the search promised."""
        if self.room_chars is None and len(self.pieces) >= self.count:
            return None
        position = position_of(hit.chunk_id)
        if (hit.collection_id, hit.file_id, position) in self.used or _duplicate(hit.text, self.words, self.share):
            return None
        own = _own_chunk(hit, position, stored)
        beside = _beside(hit, position, own, self.used)
        if beside is None:
            cost = len(hit.text) + self.overhead_chars
        else:
            cost = _added_len(beside, position, own, self.overlap)
        if not self.fits(cost):
            if not further:
                self.no_room += 1
            return None
        piece = beside or _Piece(hit, {})
        piece.chunks[position] = own
        self.used[(hit.collection_id, hit.file_id, position)] = piece
        if beside is None:
            self.pieces.append(piece)
        piece.placed = len(piece.text(self.overlap))
        self.words.append(_words(hit.text))
        self.spent += cost
        return piece

    def grow(
        self, end: _Side, stored: dict[tuple[int, int, int], IndexedChunk], max_chars: int, *, partial: bool = False
    ) -> bool:
        """Add the next chunk of the passage's section on that side, if it is free and fits both the
        room and the passage's cap (`max_chars`, or the passage's length if already longer). With
        `partial`, a chunk too long for that is cut at a sentence end so that what it adds fits."""
        piece = end.piece
        place = (piece.hit.collection_id, piece.hit.file_id, end.end() + end.side)
        chunk = stored.get(place)
        heading = piece.chunks[min(piece.chunks)].heading_path
        if chunk is None or place in self.used or chunk.heading_path != heading:
            return False
        # Two passages on consecutive chunks would both hold the text the chunker repeats at their
        # border: a passage stops one chunk short of another.
        beyond = self.used.get((place[0], place[1], place[2] + end.side))
        if beyond is not None and beyond is not piece:
            return False
        length = len(piece.text(self.overlap))
        limit = max(max_chars, piece.placed) - length
        if self.room_chars is not None:
            limit = min(limit, self.room_chars - self.spent)
        added = _added_len(piece, place[2], chunk, self.overlap)
        if added > limit:
            part = _part(piece, place[2], chunk, self.overlap, limit) if partial else None
            if part is None:
                return False
            chunk, added = part, _added_len(piece, place[2], part, self.overlap)
            if added > limit:
                return False
        piece.chunks[place[2]] = chunk
        self.used[place] = piece
        self.spent += added
        return True


def _part(piece: _Piece, position: int, chunk: IndexedChunk, overlap: int, limit: int) -> IndexedChunk | None:
    """`chunk` cut at a sentence end (its start kept when it follows the piece, its end when it
    precedes it) so that joining it adds at most `limit` characters; None when less than
    MIN_PART_CHARS of whole sentences would fit. Only the last growth of a passage may be a part:
    nothing is joined beyond a cut, which would leave a gap in the text."""
    text = piece.text(overlap)
    if position > max(piece.chunks):
        shared = _overlap_len(text, chunk.text, overlap)
        new = chunk.text[shared:]
        ends = [m.end() for m in _SENTENCE_END.finditer(new) if m.end() <= limit - (0 if shared else 2)]
        cut = max(ends, default=0)
        return replace(chunk, text=chunk.text[: shared + cut]) if cut >= MIN_PART_CHARS else None
    shared = _overlap_len(chunk.text, text, overlap)
    new = chunk.text[: len(chunk.text) - shared]
    starts = [m.end() for m in _SENTENCE_START.finditer(new) if len(new) - m.end() <= limit - (0 if shared else 2)]
    start = min(starts, default=len(new))
    return replace(chunk, text=chunk.text[start:]) if len(new) - start >= MIN_PART_CHARS else None


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
