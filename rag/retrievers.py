"""The five retrievers, sent to Redis for all collections in scope in one pipelined round trip.

Each retriever is one FT.SEARCH on a collection's own index (one index per collection, see
rag/index.py), so "filtered to the collections in scope" means: only those indexes are queried.
Keyword queries pass the collection's `LANGUAGE` (RediSearch otherwise parses queries as English
and would stem Finnish words with the English stemmer). Every command names its scorer and query
dialect itself (`SCORER`, `DIALECT`), never relying on the server's defaults: Redis 8 changed both
(its default scorer became BM25STD, and its stricter default parsing rejects characters that 2.10
reads as words), and the scorer named `BM25` in RediSearch 2.10 ranks badly (see ENVIRONMENT.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import redis
from django.utils.translation import gettext_lazy

from rag.query import ParsedQuery, escape

VECTOR, EXACT, SUBSTRING, ALL_WORDS, ANY_WORD = "vector", "exact", "substring", "all_words", "any_word"
RETRIEVERS = (VECTOR, EXACT, SUBSTRING, ALL_WORDS, ANY_WORD)
# Shown to teachers (how a passage was found), so in their language.
LABELS = {
    VECTOR: gettext_lazy("meaning"),
    EXACT: gettext_lazy("exact phrase"),
    SUBSTRING: gettext_lazy("substring"),
    ALL_WORDS: gettext_lazy("all words"),
    ANY_WORD: gettext_lazy("any word"),
}
_DISTANCE = "__vd"
# Pinned for every server (see the module docstring); `pinned` appends them to each command.
SCORER = "BM25STD"
DIALECT = 2


def pinned(*command) -> list:
    """A query command with the scorer and the dialect stated, so no server default applies.
    KNN results are ordered by distance (SORTBY), but the search names the scorer too: one rule
    for every FT.SEARCH is easier to keep than a list of exceptions. FT.AGGREGATE scores nothing
    (and RediSearch 2.10 rejects SCORER there), so it states its dialect only."""
    if command[0] == "FT.AGGREGATE":
        return [*command, "DIALECT", DIALECT]
    return [*command, "SCORER", SCORER, "DIALECT", DIALECT]


@dataclass(frozen=True)
class Hit:
    key: str
    score: float | None  # BM25STD for keyword retrievers, cosine similarity for the vector one


@dataclass
class Target:
    """One collection's index and what to send it."""

    collection_id: int
    index_name: str
    parsed: ParsedQuery
    vector: Sequence[float] | None
    # Multiplies the vector retriever's fusion weight: below 1 when the embedding model does not
    # know the collection's language (rag/providers/languages.py, rag/search.build_targets).
    vector_weight: float = 1.0
    lists: dict[str, list[Hit]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    # The index was not where its name's slot is: no files yet, or (on a cluster) the slot moved.
    index_missing: bool = False
    # Only these files of the collection (a document the question names: rag/documents.py); () = all.
    files: tuple[int, ...] = ()

    @property
    def scope(self) -> str:
        """The query clause that keeps a retriever within `files` ("" for the whole collection)."""
        return f"@file_id:{{{' | '.join(map(str, self.files))}}}" if self.files else ""


def _keyword(index: str, clause: str, language: str, depth: int, verbatim: bool = False) -> list:
    # NOCONTENT: fusion needs keys and ranks only; the few winners' fields are fetched afterwards.
    # VERBATIM for clauses that spell out each word's forms themselves (ParsedQuery.word_forms).
    return pinned("FT.SEARCH", index, clause, "NOCONTENT", "WITHSCORES",
                  *(["VERBATIM"] if verbatim else []), "LANGUAGE", language, "LIMIT", 0, depth)  # fmt: skip


def knn(index: str, vector: Sequence[float], depth: int, scope: str = "") -> list:
    blob = np.asarray(vector, dtype=np.float32).tobytes()
    # A scope pre-filters the KNN: the `depth` nearest within it, not the nearest then filtered.
    within = f"({scope})" if scope else "*"
    return pinned("FT.SEARCH", index, f"{within}=>[KNN $k @embedding $vec AS {_DISTANCE}]", "PARAMS", 4, "k", depth,
                  "vec", blob, "RETURN", 1, _DISTANCE, "SORTBY", _DISTANCE, "LIMIT", 0, depth)  # fmt: skip


def _literal_scan(index: str, literal: str, depth: int, scope: str = "") -> list:
    """Exact match for stop-word-only queries ("to be or not to be"): the index has no entries
    for stop words, so scan the stored text. Linear in the collection, but such queries are rare."""
    safe = literal.replace("\\", " ").replace("'", " ").replace('"', " ")
    return pinned("FT.AGGREGATE", index, scope or "*", "LOAD", 2, "@__key", "@text",
                  "FILTER", f"contains(lower(@text), '{safe}')", "LIMIT", 0, depth)  # fmt: skip


def commands_for(target: Target, depth: int, enabled: Sequence[str] = RETRIEVERS) -> dict[str, list]:
    """The commands to run for a target; retrievers with nothing to search for are left out."""
    p, name, lang = target.parsed, target.index_name, target.parsed.language
    clauses = {EXACT: p.exact(), SUBSTRING: p.substring(), ALL_WORDS: p.all_words(), ANY_WORD: p.any_word()}
    scope = target.scope
    commands: dict[str, list] = {}
    if VECTOR in enabled and target.vector is not None:
        commands[VECTOR] = knn(name, target.vector, depth, scope)
    for retriever, clause in clauses.items():
        if retriever in enabled and clause:
            scoped = f"{scope} ({clause})" if scope else clause
            commands[retriever] = _keyword(name, scoped, lang, depth, verbatim=retriever in (ALL_WORDS, ANY_WORD))
    # With a single content word, "all words" and "any word" are the same search: count it once.
    if len(p.content) == 1:
        commands.pop(ALL_WORDS, None)
    if EXACT in enabled and p.stopwords_only:
        commands[EXACT] = _literal_scan(name, p.literal(), depth, scope)
    return commands


# (language, word) -> the stem RediSearch indexes the word's inflections under.
_server_stems: dict[tuple[str, str], str] = {}
_MAX_CACHED_STEMS = 100_000
_EXPANDED = "(expanded)"


def use_server_stems(client: redis.Redis, targets: Sequence[Target]) -> None:
    """Build the word clauses on RediSearch's own stems, not on ours.

    The word clauses name each word's stem (ParsedQuery.word_forms), and that stem must be the
    one the index holds. Python's snowballstemmer and the Snowball release built into RediSearch
    disagree on about 1 word in 400 ("organizations": `organiz` here, `organ` there), and a
    clause on the wrong stem would miss the word in every form. FT.EXPLAIN shows how the server
    expands a word; the answers are cached per language and word, so this round trip is only
    paid for words not seen before. If it fails, our own stems are kept."""
    asks: dict[tuple[str, str], str] = {}  # (language, word) -> an index of that language
    for target in targets:
        for word in target.parsed.content:
            if (target.parsed.language, word) not in _server_stems:
                asks.setdefault((target.parsed.language, word), target.index_name)
    if asks:
        pipe = client.pipeline(transaction=False)
        for (language, word), index in asks.items():
            pipe.execute_command("FT.EXPLAIN", index, escape(word), "LANGUAGE", language, "DIALECT", DIALECT)
        try:
            replies = pipe.execute(raise_on_error=False)
        except redis.RedisError:
            return  # the searches that follow report the outage
        if len(_server_stems) + len(asks) > _MAX_CACHED_STEMS:
            _server_stems.clear()
        for key, reply in zip(asks, replies, strict=True):
            if not isinstance(reply, Exception):
                _server_stems[key] = _expanded_stem(_s(reply)) or key[1]
    for target in targets:
        p = target.parsed
        stems = tuple(_server_stems.get((p.language, w), s) for w, s in zip(p.content, p.stems, strict=True))
        target.parsed = replace(p, stems=stems)


def _expanded_stem(explain: str) -> str | None:
    """`+run` from FT.EXPLAIN's `UNION { running +run(expanded) run(expanded) }`; None when the
    server does not stem the word (its stem is the word itself)."""
    for line in explain.splitlines():
        line = line.strip()
        if line.startswith("+") and line.endswith(_EXPANDED):
            return line[1 : -len(_EXPANDED)]
    return None


def run(client: redis.Redis, targets: Sequence[Target], depth: int, enabled: Sequence[str] = RETRIEVERS) -> None:
    """Fill each target's `lists` (retriever -> ranked hits) and `errors`, in one round trip
    (plus one for words whose server stem is not known yet)."""
    use_server_stems(client, targets)
    plan: list[tuple[Target, str]] = []
    pipe = client.pipeline(transaction=False)
    for target in targets:
        for retriever, command in commands_for(target, depth, enabled).items():
            pipe.execute_command(*command)
            plan.append((target, retriever))
    if not plan:
        return
    replies = pipe.execute(raise_on_error=False)
    for (target, retriever), reply in zip(plan, replies, strict=True):
        if isinstance(reply, Exception):
            if not _is_missing_index(reply):  # a collection without files has no index yet
                target.errors[retriever] = str(reply)
            else:
                target.index_missing = True
            target.lists[retriever] = []
            continue
        target.lists[retriever] = parse_reply(reply, retriever)


def _is_missing_index(error: Exception) -> bool:
    text = str(error).lower()
    return "no such index" in text or "unknown index name" in text


def _s(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_reply(reply, retriever: str) -> list[Hit]:
    """Ranked hits from an FT.SEARCH/FT.AGGREGATE reply, in RESP3 (maps) or RESP2 (flat lists)."""
    if isinstance(reply, dict):
        rows = reply.get(b"results") or reply.get("results") or []
        return [_hit_resp3(row, retriever) for row in rows]
    if len(reply) > 1 and isinstance(reply[1], list) and retriever != VECTOR:  # FT.AGGREGATE rows
        return [Hit(_s(dict(zip(row[::2], row[1::2], strict=False))[b"__key"]), None) for row in reply[1:]]
    hits, items, i = [], reply[1:], 0
    while i < len(items):
        key = _s(items[i])
        if retriever == VECTOR:
            fields = dict(zip(items[i + 1][::2], items[i + 1][1::2], strict=False))
            hits.append(Hit(key, 1.0 - float(fields[_DISTANCE.encode()])))
        else:
            hits.append(Hit(key, float(items[i + 1])))
        i += 2
    return hits


def _hit_resp3(row: dict, retriever: str) -> Hit:
    attrs = {_s(k): v for k, v in (row.get(b"extra_attributes") or {}).items()}
    if b"id" not in row:  # FT.AGGREGATE row
        return Hit(_s(attrs["__key"]), None)
    if retriever == VECTOR:
        return Hit(_s(row[b"id"]), 1.0 - float(attrs[_DISTANCE]))
    score = row.get(b"score")
    return Hit(_s(row[b"id"]), float(score) if score is not None else None)
