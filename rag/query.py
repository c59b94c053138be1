"""Turn a user's (or a model's) search string into safe RediSearch clauses, one per keyword retriever.

The query is split the way RediSearch splits documents (on its separator characters and
whitespace), so every query term can match an indexed term: `node.js` becomes `node js`, as in the
index. Whatever special character survives the split (`|`, `/`, `\\`, `?`, ...) is escaped with a
backslash, so no user input can change the query's structure. Clauses are joined with RediSearch's
own operators (space = intersection, `|` = union), never with a literal `AND` word, which RediSearch
would search for as a term.

Stop words of the collection's language are removed for the keyword retrievers; a query made only
of stop words still searches (vector, and an exact match over the raw text, see `literal`).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

from rag.languages import stopwords
from rag.text import fold_characters, search_form

# The characters RediSearch 2.10 splits documents on (its documented list, plus `/|?` and the
# backtick, which its tokenizer also treats as separators: checked against a real index).
_SEPARATORS = ",.<>{}[]\"':;!@#$%^&*()-+=~/|?`"
_SPLIT = re.compile(r"[\s" + re.escape(_SEPARATORS) + r"]+")
# Characters that still carry meaning in the query language after the split above.
_SPECIAL = re.compile(r"([^\w])", re.UNICODE)
_WORD = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 32  # a pasted paragraph must not turn into a query with hundreds of clauses
MIN_INFIX = 4  # shorter fragments match nearly every term in the suffix trie
MAX_INFIX = 6


@dataclass(frozen=True)
class ParsedQuery:
    text: str  # the query as given, normalised
    terms: tuple[str, ...]  # tokens in `search_form` (case folded), stop words kept, in order
    content: tuple[str, ...]  # tokens without stop words, in order, de-duplicated
    stems: tuple[str, ...]  # Snowball stems of `content` (for infix matching)
    language: str

    @property
    def stopwords_only(self) -> bool:
        return bool(self.terms) and not self.content

    def exact(self) -> str | None:
        """Exact phrase: the content words adjacent and in order (the index skips stop words too)."""
        if not self.content:
            return None
        return '"' + " ".join(escape(t) for t in _ordered_content(self)) + '"'

    def substring(self) -> str | None:
        """Infix match on word stems, through the suffix trie (needs DIALECT 2).

        Each fragment expands to every indexed term containing it, so the cost grows with the
        number of fragments and falls with their length: the longest MAX_INFIX stems are used
        (for long queries; on SciFact's training claims this lost nothing against using all)."""
        # Only plain words: an escaped character inside `*...*` is a syntax error in RediSearch.
        plain = {s for s in self.stems if len(s) >= MIN_INFIX and _WORD.fullmatch(s)}
        stems = sorted(plain, key=lambda s: (-len(s), s))
        fragments = stems[:MAX_INFIX]
        if not fragments:
            return None
        return "(" + "|".join(f"*{escape(s)}*" for s in fragments) + ")"

    def all_words(self) -> str | None:
        """Every content word, in any inflection (run with VERBATIM, see `word_forms`)."""
        return " ".join(self.word_forms()) if self.content else None

    def any_word(self) -> str | None:
        """At least one content word, in any inflection (run with VERBATIM, see `word_forms`)."""
        return "(" + "|".join(self.word_forms()) + ")" if self.content else None

    def word_forms(self) -> list[str]:
        """One clause per content word that matches each of its inflections exactly once.

        RediSearch indexes a word as itself and, when its stem differs, also as `+stem`. Its own
        query expansion turns `running` into `running | +run | run`, so a chunk with "running"
        matches two branches and BM25 counts the word twice (three times with "run" as well):
        one frequent query word then outranks chunks that match several different words. On
        SciFact's training claims that cost 0.05 nDCG@10 against a plain stemmed BM25. With
        VERBATIM and `(\\+stem|stem)` every inflection matches exactly one branch."""
        seen = dict.fromkeys(self.stems)
        return [f"(\\+{escape(s)}|{escape(s)})" for s in seen]

    def literal(self) -> str:
        """The query as plain case-folded words, for the substring scan of stop-word-only queries."""
        return " ".join(self.terms)


def _ordered_content(parsed: ParsedQuery) -> list[str]:
    stop = stopwords(parsed.language)
    return [t for t in parsed.terms if t not in stop][:MAX_TERMS]


def normalise(text: str) -> str:
    """The query's characters folded as ingested text's are (`fold_characters`); control
    characters become spaces."""
    return "".join(ch if ch.isprintable() else " " for ch in fold_characters(text)).strip()


def tokenize(text: str, language: str = "") -> list[str]:
    """Terms as the index holds them: in `search_form` (case folded, stress marks and quotation
    marks gone, the same function the index applies to its text). A backslash escapes the next
    character in the document tokenizer (`\\overline` is indexed as `overline`), so it is dropped;
    tokens without a letter or digit (`_`, `__`) are no terms at all and would only break the
    query syntax."""
    tokens = (t.replace("\\", "") for t in _SPLIT.split(search_form(text, language)))
    return [t for t in tokens if any(ch.isalnum() for ch in t)]


def escape(term: str) -> str:
    return _SPECIAL.sub(r"\\\1", term)


_local = threading.local()


def _stemmer(language: str):
    """A Snowball stemmer per thread: a stemmer object keeps its word in itself while it works, so
    web threads searching at the same time must not share one."""
    import snowballstemmer

    stemmers = _local.__dict__.setdefault("stemmers", {})
    if language not in stemmers:
        try:
            stemmers[language] = snowballstemmer.stemmer(language)
        except KeyError:
            stemmers[language] = None
    return stemmers[language]


def stem(term: str, language: str) -> str:
    stemmer = _stemmer(language)
    return stemmer.stemWord(term) if stemmer else term


def parse(query: str, language: str) -> ParsedQuery:
    text = normalise(query)
    terms = tuple(tokenize(text, language))
    stop = stopwords(language)
    content = tuple(dict.fromkeys(t for t in terms if t not in stop))[:MAX_TERMS]
    stems = tuple(stem(t, language) for t in content)
    return ParsedQuery(text=text, terms=terms, content=content, stems=stems, language=language)
