"""Each retriever on a real Redis index: what it finds, and what it must not find."""

from __future__ import annotations

import pytest

from rag.search import search_collections
from tests.fixtures_search import index_texts

NOTES = [
    "The standard deviation measures how spread out the values in a data set are.",  # 0
    "A confidence interval gives a range of plausible values for a population parameter.",  # 1
    "Sampling distributions describe how a statistic varies from sample to sample.",  # 2
    "Regression models the relationship between two variables.",  # 3
    "To be or not to be, that is the question.",  # 4
    "Install node.js and C++ compilers; e-mail the TA at 100% certainty.",  # 5
]


@pytest.fixture
def notes(search_collection):
    keys = index_texts(search_collection, NOTES)
    return search_collection, keys


def ranks(outcome, retriever: str) -> dict[int, int]:
    """Chunk position -> rank in one retriever's list, for the passages returned."""
    return {int(p.chunk_id.rsplit(":", 1)[1]): p.sources[retriever] for p in outcome.results if retriever in p.sources}


def search(collection, query: str, **kw):
    return search_collections([collection], query, curate=False, **kw)


def test_exact_phrase_needs_the_words_adjacent_and_in_order(notes):
    collection, _ = notes
    assert ranks(search(collection, "standard deviation"), "exact") == {0: 1}
    assert ranks(search(collection, "deviation standard"), "exact") == {}


def test_all_words_needs_every_word_and_any_word_needs_one(notes):
    collection, _ = notes
    both = search(collection, "confidence population")
    assert ranks(both, "all_words") == {1: 1}
    split = search(collection, "confidence regression")
    assert ranks(split, "all_words") == {}
    assert set(ranks(split, "any_word")) == {1, 3}


def test_words_match_in_other_inflections_through_stemming(notes):
    collection, _ = notes
    found = ranks(search(collection, "samples"), "any_word")  # "sample"/"sampling" share the stem
    assert set(found) == {2}


def test_a_word_in_several_inflections_counts_once_against_two_different_words(search_collection):
    # RediSearch's own expansion scores "sampling" in a chunk twice (as `sampling` and `+sampl`),
    # which put the chunk that only repeats that word above the one that has both query words.
    index_texts(
        search_collection,
        [
            "Sampling theory: sampling from a population needs sampling frames.",  # 0: one query word
            "A sample of the voter rolls was drawn before the election.",  # 1: both query words
            "Sample means vary from sample to sample.",  # 2: one query word
            "Election results are counted by hand.",  # 3
        ],
    )
    found = ranks(search(search_collection, "sampling voters"), "any_word")
    assert found[1] == 1


def test_words_are_matched_on_the_stems_the_index_holds(search_collection):
    # Python's Snowball stems "organizations" as `organiz`, RediSearch's as `organ`: a clause built
    # on our stem would miss the word even where it is written exactly so.
    index_texts(search_collection, ["Many organizations joined the study.", "Nothing to see here."])
    outcome = search(search_collection, "organizations")
    assert ranks(outcome, "any_word") == {0: 1}
    assert not outcome.notes


def test_typographic_quotes_in_a_query_break_no_retriever(notes):
    collection, _ = notes
    outcome = search(collection, "\u2018plausible\u2019 \u201cconfidence interval\u201d")
    assert not outcome.notes  # every retriever ran: no "search failed" note
    assert ranks(outcome, "all_words") == {1: 1}
    assert ranks(outcome, "substring")[1] == 1


def test_substring_finds_words_containing_the_query_stem(notes):
    collection, _ = notes
    outcome = search(collection, "relation")  # stem "relat" is inside "relationship"
    assert ranks(outcome, "substring") == {3: 1}
    assert ranks(outcome, "any_word") == {}  # no indexed word has the stem "relat"


def test_vector_search_ranks_the_closest_chunk_first(notes):
    collection, _ = notes
    outcome = search(collection, "confidence interval population parameter")
    by_vector = ranks(outcome, "vector")
    assert min(by_vector, key=by_vector.get) == 1
    assert outcome.results[0].chunk_id.endswith(":1")


def test_a_query_of_only_stop_words_still_searches_exact_and_vector(notes):
    collection, _ = notes
    outcome = search(collection, "to be or not to be")
    assert outcome.status == "ok"
    assert ranks(outcome, "exact") == {4: 1}
    assert 4 in ranks(outcome, "vector")
    assert outcome.results[0].chunk_id.endswith(":4")
    assert all(r not in p.sources for p in outcome.results for r in ("any_word", "all_words", "substring"))


@pytest.mark.parametrize(
    "query",
    [
        'C++ "unbalanced (paren | @text:x -y ~z *',
        "@file_id:{1} | *",
        "' OR 1=1 --",
        "a\\b / c? `d` $x^2$ {e} [f] <g> #h; i=j & k!",
        "mean AND median",
        "**",
        "-",
        "Using the same $\\overline{x}$ , ${s}_{x}$ , and *n* = 39",  # OpenStax exercises
        "a) $\\overline{x}$ = __________ _ b) σ",
        "either/or a|b c?d e`f g\\h i\u00a0j k\u2014l x²",
    ],
)
def test_special_characters_never_break_the_search(notes, query):
    collection, _ = notes
    outcome = search(collection, query)
    assert outcome.status in {"ok", "nothing_relevant"}
    assert not [n for n in outcome.notes if "failed" in n]


def test_punctuated_terms_match_as_the_index_split_them(notes):
    collection, _ = notes
    assert ranks(search(collection, "node.js"), "exact") == {5: 1}
    assert ranks(search(collection, "e-mail"), "exact") == {5: 1}
    assert ranks(search(collection, "C++ compilers"), "exact") == {5: 1}


def test_results_carry_file_page_section_and_sources(search_collection):
    index_texts(
        search_collection,
        ["Bayes theorem updates a prior."],
        file_id=9,
        file_name="bayes.pdf",
        section="Ch 3 > Bayes",
        page=12,
    )
    result = search(search_collection, "Bayes theorem").results[0]
    assert (result.file_id, result.file_name, result.page, result.section) == (9, "bayes.pdf", 12, "Ch 3 > Bayes")
    assert result.collection_id == search_collection.id
    assert result.sources["exact"] == 1 and result.score > 0
    assert result.text == "Bayes theorem updates a prior."


def test_finnish_collection_matches_inflected_words(make_collection):
    finnish = make_collection("Tilastotiede", "finnish")
    index_texts(finnish, ["Taloissa asuu ihmisiä ja koiria.", "Keskiarvo lasketaan summasta."])
    assert ranks(search(finnish, "talo"), "any_word") == {0: 1}  # the text has "taloissa"
    found = search(finnish, "keskiarvon summa")  # genitive and base form; the text has the others
    assert ranks(found, "all_words") == {1: 1}
    # "ja" is a Finnish stop word: it alone finds nothing through the word retrievers.
    assert ranks(search(finnish, "ja"), "any_word") == {}


def test_german_collection_matches_inflections_and_compound_parts(make_collection):
    german = make_collection("Statistik", "german")
    index_texts(german, ["Die Häuser sind alt.", "Die Wahrscheinlichkeitsverteilung einer Zufallsvariablen."])
    assert ranks(search(german, "Haus"), "any_word") == {0: 1}
    compound = search(german, "Verteilungen")  # inside the compound word
    assert ranks(compound, "substring") == {1: 1}
    assert ranks(search(german, "und die"), "any_word") == {}  # stop words only


def test_a_collection_without_files_returns_nothing_relevant(make_collection):
    empty = make_collection("Empty")
    outcome = search(empty, "anything at all")
    assert outcome.status == "nothing_relevant" and outcome.results == []
    assert not [n for n in outcome.notes if "failed" in n]


def test_an_unrelated_query_is_nothing_relevant_without_curation(notes, settings):
    # The test server's 64-dimensional bag-of-words vectors collide by chance (cosine ~0.2).
    settings.SEARCH_MIN_SIMILARITY = 0.5
    collection, _ = notes
    outcome = search(collection, "photosynthesis chlorophyll")
    assert outcome.status == "nothing_relevant"
    assert outcome.results == []
    assert outcome.dropped  # the teacher can still see what was closest


def test_timings_cover_every_stage(notes):
    collection, _ = notes
    timings = search(collection, "standard deviation").timings_ms
    assert {"embed", "retrieve", "fuse", "fetch", "total"} <= set(timings)
    assert timings["total"] >= timings["retrieve"] > 0


def test_keyword_retrievers_still_answer_when_the_embedding_server_fails(notes, ollama):
    collection, _ = notes
    ollama.fail_embed = True
    outcome = search(collection, "standard deviation")
    assert outcome.status == "ok"
    assert outcome.results[0].chunk_id.endswith(":0")
    assert all("vector" not in p.sources for p in outcome.results)
    assert any("Search by meaning is unavailable" in n for n in outcome.notes)


@pytest.mark.slow
def test_random_punctuation_soup_never_makes_a_retriever_fail(notes):
    import random

    collection, _ = notes
    rng = random.Random(3)
    alphabet = "ab σ_-\\/|?`'\"()[]{}@:~*%$^&!<>=+.,;# \u00a0\u2014²é"
    for _ in range(60):
        query = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))
        if not query.strip():
            continue
        outcome = search(collection, query)
        assert not [n for n in outcome.notes if "failed" in n], query


def test_replies_read_the_same_over_resp2_and_resp3(notes):
    import redis
    from django.conf import settings

    collection, _ = notes
    resp2 = redis.Redis.from_url(settings.REDIS_URL, protocol=2)
    for query in ("standard deviation", "to be or not to be", "relation"):
        over3 = search(collection, query)
        over2 = search(collection, query, client=resp2)
        assert [(p.chunk_id, p.sources) for p in over2.results] == [(p.chunk_id, p.sources) for p in over3.results]
        assert over2.results, query


def test_a_query_with_a_ligature_finds_the_words_ingestion_split_it_into(search_collection):
    from rag.text import normalize_text

    # A PDF gives "ﬁ" as one code point; ingestion stores it as "fi", and the query is folded alike.
    index_texts(search_collection, [normalize_text("The deﬁnition of a ﬁnite population."), "Unrelated text."])
    for query in ("deﬁnition ﬁnite", "definition finite"):
        assert ranks(search(search_collection, query), "exact") == {0: 1}, query


def test_every_query_names_its_scorer_and_dialect():
    # Redis 8 changed the default scorer and query dialect: no command may rely on a default.
    from rag.query import parse
    from rag.retrievers import Target, commands_for

    for query in ("standard deviations of samples", "to be or not to be"):
        commands = commands_for(Target(1, "idx", parse(query, "english"), [0.1] * 4), 15)
        assert commands, query
        for retriever, command in commands.items():
            assert command[-2:] == ["DIALECT", 2], (query, retriever)
            if command[0] == "FT.SEARCH":  # FT.AGGREGATE (the literal scan) ranks nothing
                assert command[-4:-2] == ["SCORER", "BM25STD"], (query, retriever)


@pytest.mark.parametrize(
    "query",
    [
        '"confidence" "interval" population parameter',
        "confidence | interval | population | parameter",
        "-confidence -interval -population -parameter",
        "@confidence:interval @population:{parameter}",
        "{confidence} [interval] (population) <parameter>",
        "confidence ~interval *population* parameter!",
        "confidence AND interval OR population NOT parameter",
    ],
)
def test_query_language_characters_search_as_plain_words(notes, query):
    # Quotes, operators, field prefixes, braces: the words still match as words, on every retriever
    # that needs them all ("all words"), and the passage holding them comes first.
    collection, _ = notes
    outcome = search(collection, query)
    assert not [n for n in outcome.notes if "failed" in n]
    assert ranks(outcome, "all_words").get(1) == 1
    assert outcome.results[0].chunk_id.endswith(":1")
