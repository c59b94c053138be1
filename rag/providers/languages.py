"""Which languages each embedding model was trained for, and which multilingual model to suggest.

A model that does not know a collection's language ranks its passages almost at random (MiniLM on
Russian questions: nDCG@10 0.16), so its list must not get a full vote in the fusion
(`rag.search`: the vector weight is multiplied by SEARCH_FOREIGN_VECTOR_WEIGHT), and the teacher is
told. Names are matched without provider prefix and tag, then with the tag (`granite-embedding:278m`
is multilingual, `granite-embedding:30m` English). A model not in the table is assumed to be
multilingual: a wrong "English only" would silence a good model, a wrong "multilingual" only keeps
today's behaviour.
"""

from __future__ import annotations

from collections.abc import Callable

from rag.providers.registry import split_name

ENGLISH = frozenset({"english"})
MULTILINGUAL = None  # every language

# Base name (lower case, no provider, no tag) or name:tag -> languages; from the model cards.
MODEL_LANGUAGES: dict[str, frozenset[str] | None] = {
    "all-minilm-l6-v2": ENGLISH,
    "all-minilm": ENGLISH,
    "nomic-embed-text": ENGLISH,  # v1 and v1.5 were trained on English pairs only
    "nomic-embed-text-v2-moe": MULTILINGUAL,
    "mxbai-embed-large": ENGLISH,
    "snowflake-arctic-embed": ENGLISH,
    "snowflake-arctic-embed2": MULTILINGUAL,
    "bge-large": ENGLISH,
    "bge-m3": MULTILINGUAL,
    "granite-embedding": ENGLISH,
    "granite-embedding:278m": MULTILINGUAL,
    "paraphrase-multilingual": MULTILINGUAL,
    "embeddinggemma": MULTILINGUAL,
    "qwen3-embedding": MULTILINGUAL,
}

# Multilingual models to suggest, best first (by MIRACL/MTEB multilingual retrieval results).
SUGGESTED = ("bge-m3", "qwen3-embedding", "snowflake-arctic-embed2", "embeddinggemma", "nomic-embed-text-v2-moe",
             "granite-embedding:278m", "paraphrase-multilingual")  # fmt: skip


def model_languages(name: str) -> frozenset[str] | None:
    """The languages the embedding model `name` knows; None means all (multilingual or unknown)."""
    _, model = split_name(name)
    model = model.lower()
    base = model.split(":", 1)[0]
    if model in MODEL_LANGUAGES:
        return MODEL_LANGUAGES[model]
    return MODEL_LANGUAGES.get(base, MULTILINGUAL)


def knows_language(name: str, language: str) -> bool:
    """Whether the embedding model `name` was trained for `language` (a collection language)."""
    languages = model_languages(name)
    return languages is None or language in languages


def suggest_model(language: str, is_available: Callable[[str], bool]) -> str | None:
    """A multilingual embedding model the model server has, for a collection in `language`; None
    when it has none (the teacher is then told to pull one, e.g. `bge-m3`)."""
    for name in SUGGESTED:
        if knows_language(name, language) and is_available(name):
            return name
    return None


def looks_like_embedder(name: str) -> bool:
    """Whether a server's model is an embedding model (one of the table's, or named "embed..."), so
    pages offering chat models can leave it out. Servers do not say which models can chat."""
    _, model = split_name(name)
    model = model.lower().rsplit("/", 1)[-1]  # "BAAI/bge-m3" on an OpenAI-compatible server
    base = model.split(":", 1)[0]
    return model in MODEL_LANGUAGES or base in MODEL_LANGUAGES or "embed" in base
