"""The Redis index of one collection: schema as data, atomic per-file writes, reads, deletes.

`_encode` is how a chunk is stored and `_decode` its exact inverse; every reader (search's
`read_chunks`, the file page's `ChunkStore.file_chunks`) goes through it. `ChunkStore` needs only
the collection id (reading, deleting, rebuilding); `CollectionIndex` adds the schema for writing.

Choice: **one index per collection**. A collection fixes both the language (RediSearch stems and
drops stop words per index, `LANGUAGE`/`STOPWORDS` in FT.CREATE) and the embedding model (vector
dimensions are per index), so a shared index could not serve two collections with different
languages or models. A search over several collections queries each index and fuses the results.

Keys: `{prefix}:{c<collection>}:chunk:{file}:{position}` (hashes). The set `{prefix}:{c<collection>}:f{file}`
lists a file's live keys so a re-ingest can swap them in one MULTI/EXEC: readers see either all old
chunks or all new ones, never a mix. Every key of a collection and its index's name
(`{prefix}:idx:{c<collection>}`) carry the collection's hash tag `{c<collection>}`, so on a Redis
Cluster (REDIS_INDEX_URL) they all sit on one shard: RediSearch 2.10 indexes only its own shard's
keys, and a MULTI/EXEC must stay within one slot. rag/index_layout.py moves the older untagged
layout and makes an index follow its collection's slot to another shard.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import redis
from redis.commands.search.index_definition import IndexDefinition, IndexType
from redisvl.schema import IndexSchema

from kernel.redis_client import get_index_redis, is_cluster
from rag import config
from rag.languages import stopwords
from rag.providers import get_embedding_model
from rag.text import search_form


@dataclass(frozen=True)
class IndexedChunk:
    """One chunk as stored in the index (its text is the searchable passage).

    Read back (`read_chunks`, `ChunkStore.file_chunks`) it equals what was written, except that
    `embedding` is empty: the vector is large and no reader needs it."""

    file_id: int
    position: int
    text: str
    file_name: str
    page_start: int | None
    page_end: int | None
    heading_path: str  # "Chapter 2 > 2.1 Sampling" (" > " joined), "" when there is none
    embedding: Sequence[float] = ()


# The storage format: `_encode` writes a chunk's hash, `_decode` is its exact inverse.
# Version 2: the searchable fields (`text`, `heading_terms`) hold `search_form` of the display
# fields (`body`, `heading_path`), so capitalised non-ASCII words are found (version 1 indexed the
# display text itself, and RediSearch keeps `Москва` capitalised). An index records its version
# (`ChunkStore.format_version`); `manage.py reindex` rebuilds one of an older version, and search
# says so until then (`ChunkStore.is_stale`).
FORMAT_VERSION = 2
# The fields a reader gets (the vector is left out on purpose: it is large).
RETURN_FIELDS = ["body", "file_id", "file_name", "position", "page_start", "page_end", "heading_path", "text"]
_NO_PAGE = -1  # a numeric field cannot be empty


def _searchable(text: str, language: str) -> str:
    # RediSearch 2.10 does not split words at a bare newline ("foo\nbar" is one token, found by
    # neither word), so the searchable copy has spaces for newlines.
    return search_form(text, language).replace("\n", " ")


def _encode(chunk: IndexedChunk, language: str) -> dict:
    return {
        "text": _searchable(chunk.text, language),
        "body": chunk.text,
        "file_id": str(chunk.file_id),
        "file_name": chunk.file_name,
        "position": chunk.position,
        "page_start": _NO_PAGE if chunk.page_start is None else chunk.page_start,
        "page_end": _NO_PAGE if chunk.page_end is None else chunk.page_end,
        "heading_path": chunk.heading_path,
        "heading_terms": _searchable(chunk.heading_path, language),
        "embedding": np.asarray(chunk.embedding, dtype=np.float32).tobytes(),
    }


def _decode(values: Sequence[bytes | str | None]) -> IndexedChunk | None:
    """The chunk from its `RETURN_FIELDS` values; None when the hash is gone (replaced meanwhile)."""
    row = dict(zip(RETURN_FIELDS, (v.decode() if isinstance(v, bytes) else v for v in values), strict=True))
    if row["file_id"] is None:
        return None
    # A version 1 chunk (an index not rebuilt yet) has no `body`: its `text` was the display text,
    # with a space before each newline. Read so, nothing stored is lost while it waits for reindex.
    text = row["body"] if row["body"] is not None else (row["text"] or "").replace(" \n", "\n")
    start, end = int(row["page_start"] or _NO_PAGE), int(row["page_end"] or _NO_PAGE)
    return IndexedChunk(
        file_id=int(row["file_id"]),
        position=int(row["position"] or 0),
        text=text,
        file_name=row["file_name"] or "",
        page_start=None if start == _NO_PAGE else start,
        page_end=None if end == _NO_PAGE else end,
        heading_path=row["heading_path"] or "",
    )


def read_chunks(client: redis.Redis, keys: Sequence[str | bytes]) -> list[IndexedChunk | None]:
    """The chunks stored under `keys`, in one round trip; None for a key that is gone."""
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.hmget(key, RETURN_FIELDS)
    return [_decode(values) for values in (pipe.execute() if keys else [])]


def _prefix() -> str:
    return config.index().prefix


def collection_keys(collection_id: int) -> str:
    """The start of every key of the collection, its hash tag included: `{prefix}:{c<id>}`."""
    return f"{_prefix()}:{{c{collection_id}}}"


def _position(key: bytes | str) -> int:
    """A chunk's position, the last part of its key."""
    text = key.decode() if isinstance(key, bytes) else key
    return int(text.rsplit(":", 1)[-1])


class ChunkStore:
    """A collection's stored chunks, for what needs no schema: reading, deleting, rebuilding.

    Built from the collection id alone, so it works when the collection's embedding model (and
    thus its vector size) is unreachable or unknown."""

    def __init__(self, collection_id: int, client: redis.Redis | None = None):
        self.collection_id = collection_id
        self.client = client or get_index_redis()
        self.name = self.index_name(collection_id)
        self.key_prefix = f"{collection_keys(collection_id)}:chunk"

    @staticmethod
    def index_name(collection_id: int) -> str:
        """The index's name, without building the schema (searches only need the name)."""
        return f"{_prefix()}:idx:{{c{collection_id}}}"

    def key(self, file_id: int, position: int) -> str:
        return f"{self.key_prefix}:{file_id}:{position}"

    def file_set(self, file_id: int) -> str:
        return f"{collection_keys(self.collection_id)}:f{file_id}"

    def format_key(self) -> str:
        return f"{collection_keys(self.collection_id)}:format"

    def generation_key(self) -> str:
        """A counter raised by every write of the index's chunks: what is computed from the whole
        collection (rag/floor.py) is valid for one generation."""
        return f"{collection_keys(self.collection_id)}:generation"

    def floor_key(self) -> str:
        return f"{collection_keys(self.collection_id)}:floor"

    def spec_key(self) -> str:
        """The index's language and vector size, kept beside its chunks: on a cluster the key moves
        with the collection's slot, so the new owner can re-create the index (rag/index_layout.py)."""
        return f"{collection_keys(self.collection_id)}:spec"

    def format_version(self) -> int | None:
        """The storage format the index was built with (None when there is no index); an index
        from before versions were recorded is version 1."""
        if not self.exists():
            return None
        return int(self.client.get(self.format_key()) or 1)

    def is_stale(self) -> bool:
        """Whether the index was built with an older storage format and needs `manage.py reindex`."""
        version = self.format_version()
        return version is not None and version < FORMAT_VERSION

    def exists(self) -> bool:
        try:
            self.client.ft(self.name).info()
        except redis.ResponseError:  # "Unknown index name"
            return False
        return True

    def file_chunks(self, file_id: int) -> list[IndexedChunk]:
        """The file's chunks as stored, in reading order (what search can return for it)."""
        keys = sorted(self.client.smembers(self.file_set(file_id)), key=_position)
        return [chunk for chunk in read_chunks(self.client, keys) if chunk is not None]

    def file_chunk(self, file_id: int, position: int) -> IndexedChunk | None:
        """One stored chunk of the file; None when it is not (or no longer) there."""
        return read_chunks(self.client, [self.key(file_id, position)])[0]

    def file_chunk_count(self, file_id: int) -> int:
        return self.client.scard(self.file_set(file_id))

    def delete_file(self, file_id: int) -> None:
        """Remove a file's chunks in one transaction (never creates or recreates the index)."""
        keys = self.client.smembers(self.file_set(file_id))
        pipe = self.client.pipeline(transaction=True)
        if keys:
            pipe.delete(*keys)
        pipe.delete(self.file_set(file_id))
        pipe.incr(self.generation_key())
        pipe.execute()

    def rebuild(self, language: str, *, keep_vectors: bool) -> None:
        """Recreate the index definition over the chunks already stored (a new language or model).

        The chunks stay: RediSearch indexes them again under the new language, so search keeps
        working while the files are re-ingested one by one (each swaps its own chunks in one
        transaction), and a file whose re-ingestion fails keeps its passages. With a new embedding
        model (`keep_vectors=False`) the old vectors are removed first, so a KNN search never
        compares vectors of two models: until its file is re-ingested an old chunk is found by its
        words only. Nothing to do when the index is gone (Redis lost it): the files recreate it."""
        if not self.exists():
            return
        # The vector size of the old index: correct for the same model, and harmless for a new
        # one (no chunk has a vector now; the first re-ingested file resizes it, see `ensure`).
        dims = _indexed_dims(self.client.ft(self.name).info()) or 1
        if not keep_vectors:
            self._drop_vectors()
        self.client.incr(self.generation_key())
        self.client.ft(self.name).dropindex(delete_documents=False)
        CollectionIndex(self.collection_id, language, dims, client=self.client).ensure()

    def _drop_vectors(self, batch: int = 1000) -> None:
        pipe = self.client.pipeline(transaction=False)
        for count, key in enumerate(self.client.scan_iter(match=f"{self.key_prefix}:*", count=batch), 1):
            pipe.hdel(key, "embedding")
            if count % batch == 0:
                pipe.execute()
        pipe.execute()

    def drop(self) -> None:
        """Remove the index and every chunk of the collection."""
        if self.exists():
            self.client.ft(self.name).dropindex(delete_documents=True)
        for key in self.client.scan_iter(match=f"{collection_keys(self.collection_id)}:*", count=1000):
            self.client.delete(key)


def _indexed_dims(info: dict) -> int | None:
    for attribute in info.get("attributes", []):
        flat = [a.decode() if isinstance(a, bytes) else a for a in attribute]
        if "embedding" in flat and "dim" in flat:
            return int(flat[flat.index("dim") + 1])
    return None


# RediSearch indexes a chunk as it is written: one transaction of thousands of chunks (a 5 MB file
# holds ~6,000) took 6 s on a busy 2-core machine, near the shared client's 10 s read timeout, and a
# timeout there made the write start over. Big writes wait this long per chunk, at least the default.
WRITE_SECONDS_PER_CHUNK = 0.01


def _patient(client: redis.Redis, chunks: int) -> redis.Redis:
    """`client`, or for a write of many chunks a client on the same server that waits long enough."""
    if is_cluster(client):
        # A cluster client has a pool per node; its big writes keep the 10 s timeout, and a retry
        # after one re-runs the whole transaction, which writes the same chunks again.
        return client
    kwargs = client.connection_pool.connection_kwargs
    needed = chunks * WRITE_SECONDS_PER_CHUNK
    if needed <= (kwargs.get("socket_timeout") or float("inf")):
        return client
    pool = redis.ConnectionPool(
        connection_class=client.connection_pool.connection_class, **{**kwargs, "socket_timeout": needed}
    )
    return redis.Redis(connection_pool=pool)


class CollectionIndex(ChunkStore):
    """The index of one collection, for writing: its language and vector size fixed at creation."""

    def __init__(self, collection_id: int, language: str, dims: int, client: redis.Redis | None = None):
        super().__init__(collection_id, client)
        self.language = language
        self.dims = dims
        self.schema = IndexSchema.from_dict(
            {
                "index": {"name": self.name, "prefix": self.key_prefix, "storage_type": "hash"},
                "fields": [
                    # Suffix trie: substring (infix) queries stay fast on large collections.
                    {"name": "text", "type": "text", "attrs": {"withsuffixtrie": True}},
                    {"name": "file_id", "type": "tag"},
                    {"name": "heading_terms", "type": "text", "attrs": {"weight": 0.5}},
                    {"name": "page_start", "type": "numeric"},
                    {
                        "name": "embedding",
                        "type": "vector",
                        "attrs": {
                            "dims": dims,
                            "distance_metric": "cosine",
                            "algorithm": "hnsw",
                            "datatype": "float32",
                        },
                    },
                ],
            }
        )

    @classmethod
    def for_collection(cls, collection, client: redis.Redis | None = None) -> CollectionIndex:
        dims = get_embedding_model(collection.embedding_model).dimensions
        return cls(collection.id, collection.language, dims, client=client)

    def ensure(self) -> None:
        """Create the index if missing; recreate it (keeping documents) if its vector size changed."""
        if self.exists():
            info = self.client.ft(self.name).info()
            if _indexed_dims(info) in (None, self.dims):
                return
            self.client.ft(self.name).dropindex(delete_documents=False)
        # The version is recorded before FT.CREATE: an index never exists without its version.
        # `rebuild` (reindex) drops the index and comes through here, so it is raised then; the
        # chunks of the older format are re-written as their files are re-ingested.
        self.client.set(self.format_key(), FORMAT_VERSION)
        self.client.set(self.spec_key(), f"{self.language} {self.dims}")
        # redisvl's schema has no LANGUAGE, so FT.CREATE goes through redis-py with redisvl's fields.
        try:
            self.client.ft(self.name).create_index(
                [field.as_redis_field() for field in self.schema.fields.values()],
                definition=IndexDefinition(
                    prefix=[self.key_prefix + ":"], language=self.language, index_type=IndexType.HASH
                ),
                stopwords=sorted(stopwords(self.language)),
            )
        except redis.ResponseError as exc:
            # Two workers indexing the first files of a collection at once: the other one won.
            if "already exists" not in str(exc).lower():
                raise
        self._await_scan()

    def _await_scan(self, timeout: float = 5.0) -> None:
        """Wait (bounded) for FT.CREATE's background scan of existing keys to finish. Chunks written
        while it runs are indexed twice; the superseded copies still count in BM25's document
        statistics until RediSearch's garbage collector runs, which skews scores for a while."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            info = self.client.ft(self.name).info()
            if str(info.get("indexing", 0)) in ("0", "b'0'"):
                return
            time.sleep(0.01)

    def replace_file(self, file_id: int, chunks: Sequence[IndexedChunk]) -> None:
        """Swap a file's chunks for `chunks` in one transaction (empty `chunks` removes the file)."""
        self.ensure()
        for chunk in chunks:
            if len(chunk.embedding) != self.dims:
                raise ValueError(f"Embedding has {len(chunk.embedding)} dimensions; the index expects {self.dims}.")
        old_keys = self.client.smembers(self.file_set(file_id))
        client = _patient(self.client, len(chunks))
        try:
            pipe = client.pipeline(transaction=True)
            if old_keys:
                pipe.delete(*old_keys)
            pipe.delete(self.file_set(file_id))
            new_keys = []
            for chunk in chunks:
                key = self.key(file_id, chunk.position)
                new_keys.append(key)
                pipe.hset(key, mapping=_encode(chunk, self.language))
            if new_keys:
                pipe.sadd(self.file_set(file_id), *new_keys)
            pipe.incr(self.generation_key())
            pipe.execute()
        finally:
            if client is not self.client:
                client.connection_pool.disconnect()
