"""The one text normaliser of CurreChat: what makes the same word the same characters wherever it
comes from (extracted material, a query, a teacher's phrase, a model's answer).

`fold_characters` is the character-level step: ingestion (`normalize_text`) and search queries
(rag/query.py) both apply it, so what a user types finds what the material says. `search_form` goes
one step further for what RediSearch indexes and what queries look for (never for display): case
folded, stress marks removed, quotation marks split off words. The index stores it next to the
display text (rag/index.py), and every query term goes through it (rag/query.py); the stop words are
kept in it too (rag/languages.py). `compare_form` and `canonical_number` are the forms answers and
phrases are compared in.

PDF text extraction is the main source of damage: LaTeX-made PDFs emit accents as separate spacing
characters (`Sis¨allys` for `Sisällys`), words hyphenated at line ends arrive split, ligatures
arrive as single code points (`ﬁ`), and some fonts map glyphs to control characters.

Its own module at the bottom of `rag/`, below the index, the ingestion steps and the languages that
all use it (before, in `rag/ingest/`, it tied those three into a circle of imports).
"""

from __future__ import annotations

import re
import unicodedata

# Spacing accents as LaTeX/pdfTeX emits them -> the combining mark they stand for.
_SPACING_TO_COMBINING = {
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u00b4": "\u0301",  # ´ acute
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u02dc": "\u0303",  # ˜ tilde
    "\u00b8": "\u0327",  # ¸ cedilla
    "\u02da": "\u030a",  # ˚ ring
    "\u02c7": "\u030c",  # ˇ caron
    "\u00af": "\u0304",  # ¯ macron
    "\u02d8": "\u0306",  # ˘ breve
    "\u02d9": "\u0307",  # ˙ dot above
}
_MARKS = "".join(_SPACING_TO_COMBINING)
# The accent usually comes *before* its letter in the extracted text ("Sis¨allys"), sometimes after
# it at a word end ("Jyva¨").
_MARK_BEFORE = re.compile(rf"([{_MARKS}])([^\W\d_])")
_MARK_AFTER = re.compile(rf"([^\W\d_])([{_MARKS}])(?![^\W\d_])")

_LIGATURES = {
    "\ufb00": "ff",
    "\ufb01": "fi",
    "\ufb02": "fl",
    "\ufb03": "ffi",
    "\ufb04": "ffl",
    "\ufb05": "st",
    "\ufb06": "st",
}
# Typographic quotes -> ASCII. RediSearch splits words on `"` and `'` but not on these, so
# `“random survey”` would be indexed as the terms `“random` and `survey”`, which no query for
# "random" or "survey" matches.
_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"',
                         "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'"})  # fmt: skip
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"), None)  # soft hyphen, zero widths, BOM
# C0 controls other than tab and newline (form feed becomes a paragraph break first).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# "compu-\nter" -> "computer"; "Anglo-\nSaxon" keeps its hyphen (an uppercase continuation).
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_])")


def _recombine(text: str) -> str:
    text = _MARK_BEFORE.sub(lambda m: m.group(2) + _SPACING_TO_COMBINING[m.group(1)], text)
    text = _MARK_AFTER.sub(lambda m: m.group(1) + _SPACING_TO_COMBINING[m.group(2)], text)
    # A dotless i carrying an accent is how TeX builds í, ï, ...
    return re.sub("\u0131(?=[\u0300-\u036f])", "i", text)


def _join_hyphenated(text: str) -> str:
    def join(match: re.Match) -> str:
        following = text[match.end()]
        return "" if following.islower() else "-"

    return _HYPHEN_BREAK.sub(join, text)


def fold_characters(text: str) -> str:
    """The same characters for the same word, wherever the text comes from: NFC, invisible
    characters removed, ligatures split (`ﬁ` -> `fi`), spacing accents recombined, typographic
    quotes and the no-break space folded to ASCII. Applied to indexed text and to queries alike."""
    text = text.translate(_INVISIBLE).translate(_QUOTES).replace("\u00a0", " ")
    for ligature, letters in _LIGATURES.items():
        text = text.replace(ligature, letters)
    return unicodedata.normalize("NFC", _recombine(text))


# Quotation marks RediSearch does not split words on: « » ‹ › (guillemets), the CJK corner brackets
# and the fullwidth quote. `fold_characters` has already made the curly quotes ASCII.
_QUOTE_MARKS = dict.fromkeys(map(ord, "\u00ab\u00bb\u2039\u203a\u300c\u300d\u300e\u300f\uff02\u2e42"), " ")
# After NFC, an acute or grave accent still standing alone on its letter is a stress mark
# (Russian and Ukrainian textbooks: `госуда́рство`); letters that carry the accent as part of their
# spelling (é, á, ά) are precomposed by NFC and keep it. RediSearch's stemmer cuts words at it.
_STRESS_MARKS = re.compile("[\u0300\u0301]")
# `İ`.casefold() is `i` + combining dot above: the dot goes, so `İstanbul` is found as `istanbul`.
_DOTTED_I = re.compile("i\u0307")
# Turkish and Azerbaijani pair dotted and dotless i differently from every other language.
_TURKIC_CASE = str.maketrans({"I": "\u0131", "\u0130": "i"})
_TURKIC = frozenset({"turkish", "azerbaijani"})


def search_form(text: str, language: str = "") -> str:
    """The text as the keyword index holds it and as queries look for it: `fold_characters`,
    case folded (`Москва` -> `москва`, `Straße` -> `strasse`, `ΟΔΟΣ` -> `οδοσ`; in Turkish
    `I` -> `ı` and `İ` -> `i`), stress marks removed, quotation marks replaced by spaces.

    Never shown to anyone: the display text keeps its case and marks. Indexed text and query
    terms must both go through this one function, or capitalised words stop being found."""
    text = fold_characters(text).translate(_QUOTE_MARKS)
    if language in _TURKIC:
        text = text.translate(_TURKIC_CASE)
    text = _DOTTED_I.sub("i", text.casefold())
    return unicodedata.normalize("NFC", _STRESS_MARKS.sub("", text))


def compare_form(text: str) -> str:
    """`search_form` with every remaining mark dropped (`café` = `cafe`): the one form in which a
    teacher's phrases, protected material, questions and answers are compared with each other
    (answer checks, the leak guard, teachers' answers). Never shown to anyone."""
    decomposed = unicodedata.normalize("NFKD", search_form(text))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def canonical_number(raw: str) -> str:
    """One spelling per number, wherever it is compared: separators of thousands dropped, the
    decimal mark a point, no leading or trailing zeros that say nothing. A comma followed by
    exactly three digits is read as thousands (1,000), any other comma as the decimal mark (3,03);
    a single point is decimal."""
    text = re.sub(r"[ \u00a0\u202f]", "", raw)
    if "," in text and "." in text:
        last = max(text.rfind(","), text.rfind("."))
        text = re.sub(r"[.,]", "", text[:last]) + "." + text[last + 1 :]
    elif "," in text:
        parts = text.split(",")
        thousands = len(parts) > 2 or all(len(p) == 3 for p in parts[1:])
        text = "".join(parts) if thousands else ".".join(parts)
    elif text.count(".") > 1:
        text = text.replace(".", "")
    whole, _, fraction = text.partition(".")
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def normalize_text(text: str) -> str:
    """Extracted text as it is indexed: `fold_characters`, control characters removed, hyphenated
    line breaks joined, line ends and blank lines tidied."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    text = fold_characters(_CONTROL.sub("", text))
    text = _join_hyphenated(text)
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()
