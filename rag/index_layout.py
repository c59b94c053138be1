"""Where the index lives: moving the untagged layout to hash tags, and following a moved slot.

**Layout.** Keys and index names carry the collection's hash tag (`{prefix}:{c7}:...`,
`{prefix}:idx:{c7}`, see rag/index.py). Deployments from before wrote `{prefix}:c7:...` and
`{prefix}:idx:c7`; `migrate_legacy` moves them in place, one collection at a time:

1. the new index is created empty (same language and vector size as the old one);
2. each file's chunk keys and its key set are RENAMEd in one MULTI/EXEC, so a file moves whole:
   RediSearch drops a renamed chunk from the old index and adds it to the new one;
3. the collection's other keys follow (format version, generation), the old index is dropped.

No passage is copied or lost: RENAME keeps the hash. Search uses the new names at once, so
between steps 1 and 3 a search of that collection finds the files already moved; measured on the
test machine, a file of 1,000 passages moves in well under a second (docs/DEPLOY.md). It runs on
the one-node index that held the old layout, before pointing REDIS_INDEX_URL at a cluster.

**Resharding.** RediSearch 2.10 has no coordinator: an index is a definition on one node, over
that node's keys. When a collection's slot moves to another shard (`redis-cli --cluster
reshard`), its keys move but the index does not, and the new owner answers "no such index".
Each collection keeps its index's language and vector size in a key of its own slot (`spec_key`),
which moves with the chunks, so whoever meets the missing index re-creates it where the slot now
is (`restore_missing`; search does so and searches again, rag/search.py). FT.CREATE on the new
owner indexes the chunks already there. While a slot is MIGRATING, the cluster sends the index's
commands to the importing node (an ASK redirect: the name is not a key the old node holds), so
the index is created there as soon as the move begins and grows as the keys arrive.

The former owner keeps an index definition over none of its keys (it refuses to drop an index
whose name hashes to a slot it no longer serves): a few kilobytes, reused if the slot comes back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import redis

from kernel.redis_client import is_cluster
from rag import config
from rag.index import ChunkStore, CollectionIndex, _indexed_dims, collection_keys

log = logging.getLogger(__name__)


def restore_missing(client: redis.Redis, collection_ids: Iterable[int]) -> list[int]:
    """Re-create, where its slot is now, the index of each collection that has chunks (a spec)
    but no index; the collections whose index was re-created. A collection without a spec has
    never been written to (no files yet): nothing to do."""
    ids = list(dict.fromkeys(collection_ids))
    if not ids:
        return []
    pipe = client.pipeline(transaction=False)
    for cid in ids:
        pipe.get(ChunkStore(cid, client).spec_key())
    restored = []
    for cid, spec in zip(ids, pipe.execute(), strict=True):
        if spec is None:
            continue
        language, dims = (spec.decode() if isinstance(spec, bytes) else spec).rsplit(" ", 1)
        index = CollectionIndex(cid, language, int(dims), client=client)
        if not index.exists():
            log.warning("The index of collection %s is missing where its slot is now: re-creating it", cid)
            index.ensure()
            restored.append(cid)
    return restored


@dataclass
class LegacyMove:
    collection_id: int
    files: int = 0
    chunks: int = 0


_LEGACY_KEY = re.compile(r"^(?P<prefix>.+):c(?P<cid>\d+):(?P<rest>.+)$")


def legacy_collections(client: redis.Redis) -> list[int]:
    """The collections that still have keys or an index in the untagged layout. None on a cluster:
    untagged keys never worked there (they spread over shards), so no deployment has them."""
    if is_cluster(client):
        return []
    prefix = config.index().prefix
    found = set()
    for key in client.scan_iter(match=f"{prefix}:c[0-9]*:*", count=1000):
        match = _LEGACY_KEY.match(key.decode() if isinstance(key, bytes) else key)
        if match and match["prefix"] == prefix:
            found.add(int(match["cid"]))
    for name in client.execute_command("FT._LIST"):
        text = name.decode() if isinstance(name, bytes) else name
        if text.startswith(f"{prefix}:idx:c") and text[len(prefix) + 6 :].isdigit():
            found.add(int(text[len(prefix) + 6 :]))
    return sorted(found)


def migrate_legacy(client: redis.Redis, collection_ids: Sequence[int] | None = None) -> list[LegacyMove]:
    """Move the untagged keys and index of each collection to the hash-tagged layout (see the
    module docstring). Idempotent: a collection already moved has nothing left to move."""
    ids = legacy_collections(client) if collection_ids is None else collection_ids
    return [_migrate_one(client, cid) for cid in ids]


def _migrate_one(client: redis.Redis, cid: int) -> LegacyMove:
    prefix, move = config.index().prefix, LegacyMove(cid)
    old_base, new_base, old_index = f"{prefix}:c{cid}", collection_keys(cid), f"{prefix}:idx:c{cid}"
    try:
        info = client.ft(old_index).info()
    except redis.ResponseError:  # the index was lost: the keys still move, and `ensure` makes one
        info = None
    if info is not None:
        # An index from before versions were recorded is version 1: say so before the move, so the
        # new index keeps the old version (and `reindex --stale` still finds it).
        client.set(f"{old_base}:format", client.get(f"{old_base}:format") or 1, nx=True)
        language = _definition(info).get("default_language", "english")
        CollectionIndex(cid, language, _indexed_dims(info) or 1, client=client).ensure()
    for file_set in client.scan_iter(match=f"{old_base}:f[0-9]*", count=1000):
        old_set = file_set.decode() if isinstance(file_set, bytes) else file_set
        move.chunks += _move_file(client, old_set, old_base, new_base)
        move.files += 1
    for key in list(client.scan_iter(match=f"{old_base}:*", count=1000)):
        old = key.decode() if isinstance(key, bytes) else key
        client.rename(old, new_base + old[len(old_base) :])  # format, generation; stray chunks
    client.delete(f"{new_base}:floor")  # measured again for the new index
    if info is not None:
        client.ft(old_index).dropindex(delete_documents=False)
    return move


def _move_file(client: redis.Redis, old_set: str, old_base: str, new_base: str) -> int:
    """One file's chunks and key set, renamed in one transaction."""
    keys = [k.decode() if isinstance(k, bytes) else k for k in client.smembers(old_set)]
    renamed = [new_base + k[len(old_base) :] for k in keys]
    pipe = client.pipeline(transaction=True)
    for old, new in zip(keys, renamed, strict=True):
        pipe.rename(old, new)
    pipe.delete(old_set)
    if renamed:
        pipe.sadd(new_base + old_set[len(old_base) :], *renamed)
    pipe.execute()
    return len(keys)


def _definition(info: dict) -> dict[str, str]:
    raw = info.get("index_definition") or []
    flat = [v.decode() if isinstance(v, bytes) else v for v in raw]
    return {str(k): v for k, v in zip(flat[::2], flat[1::2], strict=False) if isinstance(v, str)}
