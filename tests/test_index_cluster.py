"""The search index on a Redis Cluster (REDIS_INDEX_URL) of 3 primaries and 3 replicas: each
collection on the shard of its hash tag, searched alone and together; a primary killed under
search load; a collection's slot moved to another shard under search load; backup and restore."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable

import pytest
from redis.crc import key_slot

from kernel.redis_client import get_index_redis
from rag.index import ChunkStore
from rag.search import search_collections
from tests.fixtures_search import index_texts

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

PASSAGES = 24
# The longest a search may go without every passage (docs/DEPLOY.md "Redis Cluster"): a failover
# takes the node timeout (1 s here, cluster-node-timeout) plus the replica's election; a moved
# slot's index is re-created by the first search that meets it missing.
FAILOVER_GAP_SECONDS = 15.0
MOVE_GAP_SECONDS = 5.0
# The longest the searches may take to find every passage again after a disruption.
RECOVERY_SECONDS = 120.0


def slot_of(collection) -> int:
    return key_slot(ChunkStore.index_name(collection.pk).encode())


def on_three_shards(make_collection, cluster) -> list:
    """Collections whose slots belong to three different primaries (ids decide the slot)."""
    by_owner: dict[int, object] = {}
    for number in range(40):
        collection = make_collection(name=f"Course {number}")
        by_owner.setdefault(cluster.owner_of(slot_of(collection)).port, collection)
        if len(by_owner) == 3:
            return list(by_owner.values())
    raise AssertionError("40 collections did not reach three shards")


def fill(collection, topic: str) -> set[str]:
    texts = [f"Photosynthesis note {i} about {topic}: chlorophyll turns light into sugar." for i in range(PASSAGES)]
    return set(index_texts(collection, texts))


def found(collections, query: str = "photosynthesis") -> set[str]:
    outcome = search_collections(collections, query, curate=False, limit=200, depth=200)
    return {p.chunk_id for p in outcome.results}


def under_load(
    disrupt: Callable[[], None], collections, expected: set[str], settle: int = 20, explain: Callable[[], str] = str
) -> list:
    """Search while `disrupt` runs in a thread, then `settle` more times; (time, found | error) each.
    `explain` says what the cluster looks like when the searches never recover."""
    done = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            disrupt()
        except BaseException as exc:  # noqa: BLE001 — reported by the test below
            failure.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=run)
    log: list[tuple[float, set[str] | Exception]] = []
    after = 0
    started = time.monotonic()
    thread.start()
    while after < settle:
        try:
            log.append((time.monotonic() - started, found(collections)))
        except Exception as exc:  # noqa: BLE001 — an outage is an outcome to record
            log.append((time.monotonic() - started, exc))
        if done.is_set() and log[-1][1] == expected:
            after += 1
        if time.monotonic() - started > RECOVERY_SECONDS:
            raise AssertionError(f"searches never found every passage again:\n{told(log, expected)}\n{explain()}")
    thread.join()
    assert not failure, failure
    return log


def told(log: list, expected: set[str]) -> str:
    """The searches in short, for a failure message: when, and how many passages of how many or the error."""
    lines = [
        f"{at:6.2f} s: {type(r).__name__}: {r}"
        if isinstance(r, Exception)
        else f"{at:6.2f} s: {len(r)}/{len(expected)}"
        for at, r in log
    ]
    if len(lines) > 40:
        lines[20:-20] = [f"... {len(lines) - 40} more ..."]
    return "\n".join(lines)


def cluster_view(cluster, slot: int) -> str:
    """What each node says about `slot` and the failover, and where the index's client sends it."""
    nodes = get_index_redis().nodes_manager  # type: ignore[attr-defined]
    try:
        client = f"the client sends slot {slot} to {nodes.get_node_from_slot(slot).name}"
    except Exception as exc:  # noqa: BLE001 — a message for a failure: what the client says instead
        client = f"the client has no node for slot {slot}: {exc}"
    return f"{cluster.describe(slot)}\n{client}, knows {sorted(nodes.startup_nodes)}"


def longest_gap(log: list, expected: set[str]) -> float:
    """The longest time between a search that found every passage and the next one that did."""
    last_full, gap = 0.0, 0.0
    for at, result in log:
        if result == expected:
            gap, last_full = max(gap, at - last_full), at
    return gap


def test_collections_on_three_shards_are_searched_each_and_together(index_cluster, make_collection, ollama):
    collections = on_three_shards(make_collection, index_cluster)
    expected = {c.pk: fill(c, f"topic {c.pk}") for c in collections}
    for collection in collections:
        assert found([collection]) == expected[collection.pk]
        # The passages and the index live on the shard of the collection's hash tag, and only there.
        owner = index_cluster.client(index_cluster.owner_of(slot_of(collection)))
        assert all(owner.exists(key) for key in expected[collection.pk])
        assert ChunkStore.index_name(collection.pk).encode() in owner.execute_command("FT._LIST")
    assert found(collections) == set().union(*expected.values())


def test_searches_find_every_passage_after_a_primary_is_killed(index_cluster, make_collection, ollama):
    collections = on_three_shards(make_collection, index_cluster)[:2]
    expected = set().union(*(fill(c, f"topic {c.pk}") for c in collections))
    slot = slot_of(collections[0])
    victim = index_cluster.owner_of(slot)
    assert found(collections) == expected

    explain = functools.partial(cluster_view, index_cluster, slot)
    log = under_load(lambda: index_cluster.kill(victim), collections, expected, explain=explain)

    assert index_cluster.owner_of(slot) is not victim  # its replica took over
    assert longest_gap(log, expected) < FAILOVER_GAP_SECONDS, log
    assert all(result == expected for _, result in log[-20:])


def test_a_collections_index_follows_its_slot_to_another_shard(index_cluster, make_collection, ollama):
    collections = on_three_shards(make_collection, index_cluster)
    moving = collections[0]
    expected = set().union(*(fill(c, f"topic {c.pk}") for c in collections))
    slot = slot_of(moving)
    target = next(s for s in index_cluster.primaries_now() if s is not index_cluster.owner_of(slot))

    explain = functools.partial(cluster_view, index_cluster, slot)
    log = under_load(lambda: index_cluster.move_slot(slot, target, batch=4), collections, expected, explain=explain)

    assert index_cluster.owner_of(slot) is target
    assert ChunkStore.index_name(moving.pk).encode() in index_cluster.client(target).execute_command("FT._LIST")
    assert not [result for _, result in log if isinstance(result, Exception)], log
    assert longest_gap(log, expected) < MOVE_GAP_SECONDS, log
    # Written after the move, a file lands on the new shard and is found.
    added = set(index_texts(moving, ["Photosynthesis in the dark phase: the Calvin cycle."], file_id=9))
    assert found([moving]) == {k for k in expected if f"{{c{moving.pk}}}" in k} | added


@pytest.mark.django_db(transaction=True)
def test_backup_and_restore_rebuild_the_index_on_the_cluster(
    index_cluster, fast_collection, ingest_upload, client_for, owner, tmp_path, settings
):
    import shutil

    from django.core.management import call_command

    from tests.fixtures_ingest import scanned

    ingest_upload(fast_collection, b"# Sampling\n\nThe standard error shrinks as the sample grows.\n", "notes.md")
    scanned(fast_collection)
    before = found([fast_collection], "standard error")
    assert before
    call_command("backup", str(tmp_path / "backup"))
    call_command("flush", interactive=False, verbosity=0)
    shutil.rmtree(settings.MEDIA_ROOT)
    for primary in index_cluster.primaries_now():
        index_cluster.client(primary).flushall()
    assert not list(get_index_redis().scan_iter(match="*"))

    call_command("restore", str(tmp_path / "backup"))  # restores, then re-indexes into the cluster
    scanned(fast_collection)
    assert found([fast_collection], "standard error") == before
