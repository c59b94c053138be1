"""Query parsing: RediSearch's own tokenisation, escaping, stop words and stems per language."""

from __future__ import annotations

from rag.query import escape, parse, tokenize


def test_queries_split_where_the_index_splits_documents():
    assert tokenize("node.js, C++ and e-mail (2024)!") == ["node", "js", "c", "and", "e", "mail", "2024"]


def test_characters_left_after_splitting_are_escaped():
    assert escape("either/or") == "either\\/or"
    assert escape("a|b") == "a\\|b"
    assert escape("väärä_ä") == "väärä_ä"  # letters of any script and '_' are plain term characters


def test_stop_words_are_removed_in_the_collections_language():
    assert parse("what is the standard deviation", "english").content == ("standard", "deviation")
    assert parse("mikä on keskihajonta", "finnish").content == ("keskihajonta",)
    assert parse("was ist die Standardabweichung", "german").content == ("standardabweichung",)


def test_clauses_for_each_keyword_retriever():
    parsed = parse("The standard deviations of samples", "english")
    assert parsed.exact() == '"standard deviations samples"'
    # Each word as its stem: `+stem` holds the indexed inflections, `stem` the word as written.
    assert parsed.all_words() == r"(\+standard|standard) (\+deviat|deviat) (\+sampl|sampl)"
    assert parsed.any_word() == r"((\+standard|standard)|(\+deviat|deviat)|(\+sampl|sampl))"
    assert parsed.substring() == "(*standard*|*deviat*|*sampl*)"


def test_a_stop_word_only_query_keeps_its_words_for_the_literal_match():
    parsed = parse("To be, or not to be", "english")
    assert parsed.stopwords_only
    assert parsed.exact() is None and parsed.any_word() is None
    assert parsed.literal() == "to be or not to be"


def test_soft_hyphens_and_decomposed_accents_are_normalised():
    assert parse("alkali\u00adkalkki\u00adlasi", "finnish").content == ("alkalikalkkilasi",)
    assert parse("Sisa\u0308llys", "finnish").terms == ("sisällys",)
