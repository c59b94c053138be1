"""Languages a collection may have: those RediSearch stems *and* redisvl has stop words for.

A collection's language drives both the index (RediSearch `LANGUAGE` for stemming, `STOPWORDS`)
and query parsing (stop-word removal), so only languages supported on both sides are offered.
"""

from __future__ import annotations

from functools import cache

from rag.text import search_form

# RediSearch 2.10's Snowball stemmer languages (FT.CREATE ... LANGUAGE). Chinese is left out on
# purpose: RediSearch segments it instead of stemming, and our query parsing splits on spaces.
REDISEARCH_STEMMING = frozenset(
    {
        "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english", "finnish",
        "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish", "italian",
        "lithuanian", "nepali", "norwegian", "portuguese", "romanian", "russian", "serbian",
        "spanish", "swedish", "tamil", "turkish", "yiddish",
    }
)  # fmt: skip

LANGUAGES: tuple[str, ...] = tuple(
    sorted(
        REDISEARCH_STEMMING
        & {
            "arabic", "basque", "catalan", "danish", "dutch", "english", "finnish", "french",
            "german", "greek", "hungarian", "indonesian", "italian", "nepali", "norwegian",
            "portuguese", "romanian", "russian", "spanish", "swedish", "tamil", "turkish",
        }  # the languages redisvl bundles NLTK stop words for (checked by a test)
    )
)  # fmt: skip
LANGUAGE_CHOICES = [(lang, lang.capitalize()) for lang in LANGUAGES]


@cache
def stopwords(language: str) -> frozenset[str]:
    """The stop words of a supported language, in `search_form` (as query terms and the index's
    text are: `daß` -> `dass`), so the index and the query parser drop the same words."""
    from redisvl.utils.stopwords import get_stopwords

    return frozenset(search_form(word, language).strip() for word in get_stopwords(language))
