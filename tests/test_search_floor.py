""" "Nothing relevant" holds in a big collection: the uncurated search's floor is calibrated per
collection (rag/floor.py), so nonsense finds nothing among 2,100 passages while real questions still
find theirs, and a test question made of nonsense fails.

The collection is 2,100 sentences of SQuAD v1.1 dev (read in place from ../shared/data), embedded
by the local all-MiniLM-L6-v2 once per session; the vectors are kept under var/test-cache/ between
runs (keyed by the model and the texts), only to save the minutes embedding takes on two busy cores.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

from collections_app.models import Collection, FileStatus, SourceFile
from rag.index import ChunkStore, CollectionIndex, IndexedChunk
from rag.search import search_collections
from tests.shared_data import shared_data

# Loads the local model (and embeds 2,100 sentences on a cold cache): on one xdist worker, so a
# fresh checkout embeds them once rather than on every worker at the same time.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("squad_sentences")]

ROOT = Path(__file__).resolve().parent.parent
MINILM = "local:all-MiniLM-L6-v2"
PASSAGES = 2100
NONSENSE = "zqxwv plorkt"


def _sentences() -> list[str]:
    corpus = shared_data(ROOT) / "beir" / "squad-v1.1-dev" / "corpus.jsonl"
    found: list[str] = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            found += [s for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if len(s) >= 40]
            if len(found) >= PASSAGES:
                return found[:PASSAGES]
    raise AssertionError(f"{corpus} has fewer than {PASSAGES} sentences")


@pytest.fixture(scope="session")
def squad_sentences() -> tuple[list[str], np.ndarray]:
    from rag.providers.local import MiniLMEmbedder

    texts = _sentences()
    digest = hashlib.sha256("\n".join([MINILM, *texts]).encode()).hexdigest()[:16]
    path = ROOT / "var" / "test-cache" / f"minilm-squad-sentences-{digest}.npy"
    if path.exists():
        return texts, np.load(path)
    vectors = np.asarray(MiniLMEmbedder().embed_batch(texts), dtype=np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return texts, vectors


def _write(collection: Collection, source: SourceFile, texts, vectors) -> None:
    chunks = [
        IndexedChunk(source.pk, i, text, source.original_name, None, None, "", vector)
        for i, (text, vector) in enumerate(zip(texts, vectors, strict=True))
    ]
    CollectionIndex(collection.id, collection.language, 384).replace_file(source.pk, chunks)


@pytest.fixture
def big(owner, co_owner, squad_sentences):
    """A MiniLM collection of one file with 2,100 passages, and that file."""
    collection = Collection.objects.create(name="Wikipedia", language="english", owner=owner, embedding_model=MINILM)
    collection.co_owners.add(co_owner)
    source = SourceFile.objects.create(
        collection=collection, original_name="squad.md", file="collections/x/squad", file_type="markdown",
        size=1, sha256="a" * 64, status=FileStatus.READY, uploaded_by=owner, chunk_count=PASSAGES,
    )  # fmt: skip
    _write(collection, source, *squad_sentences)
    return collection, source


def test_nonsense_finds_nothing_relevant_among_thousands_of_passages(big, settings):
    collection, _ = big
    outcome = search_collections([collection], NONSENSE, curate=False)
    assert outcome.nothing_relevant and outcome.results == []
    assert outcome.dropped, "the passages nearest in meaning are shown as what the floor left out"

    # The fixed floor alone (what search did before) lets the nearest unrelated passages through.
    settings.SEARCH_FLOOR_Z = -100.0
    assert not search_collections([collection], NONSENSE, curate=False).nothing_relevant


def test_a_real_question_still_finds_its_passage(big):
    collection, _ = big
    outcome = search_collections([collection], "Who headlined the Super Bowl 50 halftime show?", curate=False)
    assert outcome.status == "ok"
    assert any("Coldplay" in p.text for p in outcome.results[:5])


def test_keyword_hits_are_never_cut_by_the_floor(big, owner, squad_sentences):
    collection, _ = big
    extra = SourceFile.objects.create(
        collection=collection, original_name="glossary.md", file="collections/x/glossary", file_type="markdown",
        size=1, sha256="b" * 64, status=FileStatus.READY, uploaded_by=owner,
    )  # fmt: skip
    texts, vectors = squad_sentences
    _write(collection, extra, ["Plorkt is the nickname of the lab's oldest centrifuge."], vectors[:1])
    outcome = search_collections([collection], NONSENSE, curate=False)
    assert outcome.status == "ok" and outcome.results[0].file_name == "glossary.md"


def _cached_floor(collection: Collection) -> dict:
    store = ChunkStore(collection.id)
    entry = store.client.get(store.floor_key())
    assert entry is not None, "the search stored the collection's floor"
    return json.loads(entry)


def test_the_floor_is_measured_again_when_the_collection_grows(big, squad_sentences):
    collection, source = big
    texts, vectors = squad_sentences
    _write(collection, source, texts[:3], vectors[:3])  # a small collection first: its floor is cached
    assert search_collections([collection], NONSENSE, curate=False).nothing_relevant
    cached = _cached_floor(collection)
    assert len(cached["best"]) > 1

    _write(collection, source, texts, vectors)  # grown to 2,100: the small collection's floor is too low
    assert search_collections([collection], NONSENSE, curate=False).nothing_relevant
    measured = _cached_floor(collection)
    assert measured["generation"] > cached["generation"] and max(measured["best"]) > max(cached["best"])


def test_a_test_question_made_of_nonsense_fails(big, client_for, owner):
    collection, source = big
    api = client_for(owner)
    url = f"/api/v1/collections/{collection.pk}/checks"
    for question in (NONSENSE, "Which team won Super Bowl 50?"):
        added = api.post(url, {"question": question, "expect": {"file_id": source.pk}}, content_type="application/json")
        assert added.status_code == 201, added.json()
    run = api.post(f"{url}/run", {}, content_type="application/json")
    assert run.status_code == 200, run.json()
    checks = {c["question"]: c["last"] for c in api.get(url).json()}
    assert checks[NONSENSE]["passed"] is False and checks[NONSENSE]["rank"] is None
    assert checks["Which team won Super Bowl 50?"]["passed"] is True
