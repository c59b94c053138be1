"""Passages fit what the embedding model reads: no chunk's embedding input (heading path + text)
is longer than the model's token limit, counted with its own tokenizer where it has one."""

from __future__ import annotations

import json

import pytest

from collections_app.models import Collection, FileStatus
from rag.index import ChunkStore
from rag.ingest.chunking import chunk_pages, embedding_text
from rag.ingest.job import PageText
from rag.providers.limits import estimate_tokens, limit_for
from rag.text import normalize_text
from tests.fixtures_ingest import DATA

LOCAL = "local:all-MiniLM-L6-v2"


def finnish_course_text(articles: int = 6) -> str:
    """TyDi QA's Finnish passages (Apache-2.0) as one long Markdown file, a section per article."""
    rows = [json.loads(line) for line in (DATA / "beir" / "tydiqa-goldp-dev-fi" / "corpus.jsonl").open()]
    by_title: dict[str, list[str]] = {}
    for row in rows:
        by_title.setdefault(row["title"], []).append(row["text"])
    titles = sorted(by_title, key=lambda t: -sum(map(len, by_title[t])))[:articles]
    return "# Kurssimateriaali\n\n" + "\n\n".join(f"## {t}\n\n" + "\n\n".join(by_title[t]) for t in titles)


def test_the_local_model_declares_its_limit_from_its_own_files():
    limit = limit_for(LOCAL)
    assert limit.tokens == 256 and limit.exact
    # Its word pieces: a Finnish sentence takes far more of them than an English one as long.
    fi, en = "Tentti järjestetään joulukuussa luentosalissa.", "The exam takes place in December in the hall."
    assert limit.count(fi) > limit.count(en)


def test_every_chunk_of_a_long_finnish_file_fits_the_local_model(owner, ingest_upload):
    text = finnish_course_text()
    limit = limit_for(LOCAL)
    # Cut by characters alone, many passages would be longer than the model reads.
    plain = chunk_pages([PageText(None, text)])
    too_long = [c for c in plain if not limit.fits(embedding_text(c.heading_path, c.text))]
    assert len(too_long) > len(plain) // 4

    collection = Collection.objects.create(name="Kurssi", language="finnish", owner=owner, embedding_model=LOCAL)
    source = ingest_upload(collection, text.encode(), "kurssi.md")
    assert source.status == FileStatus.READY, source.error
    chunks = ChunkStore(collection.pk).file_chunks(source.pk)
    assert len(chunks) == source.chunk_count > len(plain)
    for chunk in chunks:
        tokens = limit.count(embedding_text(chunk.heading_path, chunk.text))
        assert tokens <= 256, (chunk.position, tokens)
    # Nothing was dropped to make them fit: every word of the file is in some chunk.
    stored = " ".join(f"{c.heading_path} {c.text}" for c in chunks)
    missing = [w for w in normalize_text(text).replace("#", " ").split()[::40] if w not in stored]
    assert not missing


def test_server_models_use_the_table_a_conservative_default_and_overrides(settings):
    assert limit_for("ollama:snowflake-arctic-embed2:latest").tokens == 8192
    assert limit_for("ollama:mxbai-embed-large").tokens == 512
    assert limit_for("ollama:someones-new-embedder").tokens == settings.EMBEDDING_TOKEN_LIMIT_DEFAULT
    settings.EMBEDDING_TOKEN_LIMITS = {"ollama:someones-new-embedder": 128}
    assert limit_for("ollama:someones-new-embedder").tokens == 128
    assert not limit_for("ollama:someones-new-embedder").exact


@pytest.mark.parametrize("language_sample", ["Ο μέσος όρος ενός δείγματος ", "Keskihajonta kuvaa hajontaa. "])
def test_chunks_fit_an_estimated_limit_for_a_server_model(settings, language_sample):
    settings.EMBEDDING_TOKEN_LIMITS = {"ollama:small-embedder": 128}
    limit = limit_for("ollama:small-embedder")
    chunks = chunk_pages([PageText(None, "# Luku 1\n\n" + language_sample * 200)], fits=limit.fits)
    assert chunks
    assert all(estimate_tokens(embedding_text(c.heading_path, c.text)) <= 128 for c in chunks)
