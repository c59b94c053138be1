"""`manage.py index_layout` moves an index written before hash tags (`{prefix}:c7:...`,
`{prefix}:idx:c7`) to the tagged layout in place: every passage is found afterwards, nothing of
the old layout is left, and an older storage format stays marked for `reindex --stale`."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.core.management import call_command

from kernel.redis_client import get_index_redis
from rag.index import ChunkStore, CollectionIndex
from rag.search import search_collections
from tests.fixtures_search import index_texts

pytestmark = pytest.mark.django_db


def as_legacy(collection, format_version: bytes | None) -> None:
    """Rewrite the collection's index the way CurreChat before hash tags stored it."""
    client, prefix, cid = get_index_redis(), settings.REDIS_INDEX_PREFIX, collection.pk
    new_base, old_base = f"{prefix}:{{c{cid}}}", f"{prefix}:c{cid}"
    index = CollectionIndex.for_collection(collection)
    index.client.ft(index.name).dropindex(delete_documents=False)
    for key in [k.decode() if isinstance(k, bytes) else k for k in client.scan_iter(match=f"{new_base}:*")]:
        old = old_base + key[len(new_base) :]
        client.rename(key, old)
        if ":f" in old and client.type(old) == b"set":
            members = [m.decode().replace(new_base, old_base) for m in client.smembers(old)]  # type: ignore[union-attr]
            client.delete(old)
            client.sadd(old, *members)
    client.delete(f"{old_base}:spec")  # the old layout had none
    if format_version is None:
        client.delete(f"{old_base}:format")
    client.execute_command(
        "FT.CREATE", f"{prefix}:idx:c{cid}", "ON", "HASH", "PREFIX", 1, f"{old_base}:chunk:",
        "LANGUAGE", collection.language, "SCHEMA", "text", "TEXT", "file_id", "TAG",
        "embedding", "VECTOR", "HNSW", 6, "TYPE", "FLOAT32", "DIM", index.dims, "DISTANCE_METRIC", "COSINE",
    )  # fmt: skip


def found(collection) -> set[str]:
    return {p.chunk_id for p in search_collections([collection], "photosynthesis", curate=False, limit=50).results}


def test_index_layout_moves_an_untagged_index_without_losing_a_passage(make_collection, ollama):
    moved, stays = make_collection(name="Biology"), make_collection(name="Chemistry")
    keys = set(index_texts(moved, [f"Photosynthesis part {i}." for i in range(12)], file_id=1))
    keys |= set(index_texts(moved, [f"Photosynthesis in leaves {i}." for i in range(5)], file_id=2))
    kept = set(index_texts(stays, ["Photosynthesis and catalysts."]))
    as_legacy(moved, format_version=None)
    assert found(moved) == set()  # the new code looks under the tagged names only

    call_command("index_layout")

    assert found(moved) == keys and found(stays) == kept
    client, prefix = get_index_redis(), settings.REDIS_INDEX_PREFIX
    assert not list(client.scan_iter(match=f"{prefix}:c{moved.pk}:*"))
    assert f"{prefix}:idx:c{moved.pk}".encode() not in client.execute_command("FT._LIST")
    store = ChunkStore(moved.pk)
    assert store.file_chunk_count(1) == 12 and store.file_chunk_count(2) == 5
    assert store.is_stale()  # it was version 1 before the move: `reindex --stale` still rebuilds it
    call_command("index_layout")  # again: nothing left to move
    assert found(moved) == keys
