"""Language-aware fusion: each embedding model's languages, the vector weight rule, the warnings."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import reverse

from rag.providers.languages import knows_language, model_languages, suggest_model
from rag.search import search_collections
from tests.fixtures_search import index_texts

ENGLISH_ONLY = "ollama:nomic-embed-text"  # v1.5: trained on English pairs only


def test_each_embedding_model_declares_its_languages():
    assert model_languages("local:all-MiniLM-L6-v2") == {"english"}
    assert model_languages("ollama:nomic-embed-text:latest") == {"english"}
    assert model_languages("bge-m3") is None and model_languages("snowflake-arctic-embed2:568m") is None
    assert model_languages("granite-embedding:278m") is None  # the multilingual size
    assert model_languages("granite-embedding:30m") == {"english"}
    assert model_languages("some-new-embedder") is None  # unknown: assumed multilingual
    assert knows_language("local:all-MiniLM-L6-v2", "english")
    assert not knows_language("local:all-MiniLM-L6-v2", "russian")
    assert knows_language("ollama:bge-m3", "turkish")


def test_the_suggestion_is_a_multilingual_model_the_server_has():
    assert suggest_model("russian", lambda name: name in {"nomic-embed-text", "snowflake-arctic-embed2"}) == (
        "snowflake-arctic-embed2"
    )
    assert suggest_model("russian", lambda name: True) == "bge-m3"
    assert suggest_model("russian", lambda name: name == "nomic-embed-text") is None


TEXTS = ["Столица России — Москва.", "Совсем другой текст о погоде и дожде."]


def vector_only_score(collection, **kw) -> float:
    """The fused score of the passage only the vector retriever found, as if it were its rank 1."""
    outcome = search_collections([collection], "столица", curate=False, **kw)
    (passage,) = [p for p in outcome.results if set(p.sources) == {"vector"}]
    assert passage.text == TEXTS[1]
    return passage.score * (2 + passage.sources["vector"]) / (2 + 1)


@override_settings(SEARCH_RRF_K=2.0, SEARCH_FOREIGN_VECTOR_WEIGHT=0.25)
@pytest.mark.parametrize(
    ("model", "language", "weight"),
    [
        (ENGLISH_ONLY, "russian", 0.25),
        (ENGLISH_ONLY, "english", 1.0),
        ("ollama:snowflake-arctic-embed2", "russian", 1.0),
    ],
)
def test_the_vector_list_counts_less_where_the_model_does_not_know_the_language(
    make_collection, ollama, model, language, weight
):
    ollama.models.append("nomic-embed-text:latest")
    collection = make_collection(language=language, embedding_model=model)
    index_texts(collection, TEXTS)
    assert vector_only_score(collection) == pytest.approx(weight / (2 + 1), abs=1e-5)


@override_settings(SEARCH_FOREIGN_VECTOR_WEIGHT=0.25)
def test_a_benchmark_can_turn_the_rule_off(make_collection, ollama):
    ollama.models.append("nomic-embed-text:latest")
    collection = make_collection(language="russian", embedding_model=ENGLISH_ONLY)
    index_texts(collection, TEXTS)
    assert vector_only_score(collection, foreign_vector_weight=1.0, rrf_k=2.0) == pytest.approx(1 / 3, abs=1e-5)


@pytest.fixture
def russian_minilm(collection):
    collection.language = "russian"
    collection.embedding_model = "local:all-MiniLM-L6-v2"
    collection.save(update_fields=["language", "embedding_model"])
    return collection


def test_the_collection_page_warns_and_suggests_a_multilingual_model_on_the_server(
    client_for, owner, russian_minilm, ollama
):
    page = client_for(owner).get(reverse("collection_detail", args=[russian_minilm.pk])).content.decode()
    assert "does not know Russian" in page
    assert "The model server has one that knows every language" in page
    assert "The one to choose: ollama:snowflake-arctic-embed2." in page.split("<summary>Details</summary>")[-1]


def test_the_search_page_shows_the_warning_to_a_co_owner_too(client_for, co_owner, russian_minilm, ollama):
    ollama.models.remove("snowflake-arctic-embed2:latest")
    page = client_for(co_owner).get(reverse("collection_search", args=[russian_minilm.pk])).content.decode()
    assert "does not know Russian" in page
    assert "Ask your administrator to add a model that knows every language" in page


def test_no_warning_where_the_model_knows_the_language(client_for, owner, collection, ollama):
    collection.embedding_model = "local:all-MiniLM-L6-v2"
    collection.save(update_fields=["embedding_model"])
    for name in ("collection_detail", "collection_search"):
        page = client_for(owner).get(reverse(name, args=[collection.pk])).content.decode()
        assert "language-warning" not in page
