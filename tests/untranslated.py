"""Finding English left on a translated page: the catalogue's English sentences (msgids), each with
its translation, and which of them a page's visible text still shows in English; and the other way
round, which catalogue entry a translated sentence came from (`catalogue_source`).

Used by tests/test_i18n.py (pages fetched with the test client), tests/test_i18n_failures.py (the
sentences people get when something fails) and the browser journeys (the text a real browser
shows, including what the page's scripts write)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

LOCALE = Path(__file__).resolve().parent.parent / "locale"
_PLACEHOLDER = re.compile(r"%\(\w+\)[sdr]|\{\w+\}")


@dataclass(frozen=True)
class Sentence:
    """One English string of the catalogue, and how to find it in a page's text."""

    msgid: str
    translated: str
    pattern: re.Pattern

    @property
    def words(self) -> int:
        return len(_PLACEHOLDER.sub(" ", self.msgid).split())


def _entries(po: Path):
    """(msgid, msgstr) pairs of a catalogue, continuation lines joined; a plural's two forms each."""
    for block in po.read_text(encoding="utf-8").split("\n\n"):
        fields: dict[str, str] = {}
        key = None
        for line in block.splitlines():
            if line.startswith("#"):
                continue
            if line.startswith('"') and key is not None:
                fields[key] += _unquote(line)
            elif " " in line:
                key, value = line.split(" ", 1)
                fields[key] = _unquote(value)
        if fields.get("msgid"):
            if "msgid_plural" in fields:
                yield fields["msgid"], fields.get("msgstr[0]", "")
                yield fields["msgid_plural"], fields.get("msgstr[1]", "")
            else:
                yield fields["msgid"], fields.get("msgstr", "")


def _unquote(quoted: str) -> str:
    """A quoted line of a catalogue as the text it stands for (its C escapes undone)."""
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), quoted.strip()[1:-1])


def catalogue_sentences(language: str = "fi", *, placeholders: bool = False) -> list[Sentence]:
    """The English strings of the Python and JavaScript catalogues whose translation differs from
    them (so finding one on a page means it was not translated). Strings with markup are left out;
    with `placeholders`, strings with %(name)s / {name} are kept, each placeholder matching a few
    words."""
    sentences = []
    for po in sorted((LOCALE / language / "LC_MESSAGES").glob("*.po")):
        for msgid, translated in _entries(po):
            has_placeholder = bool(_PLACEHOLDER.search(msgid))
            if "<" in msgid or (has_placeholder and not placeholders) or translated in (msgid, ""):
                continue
            pattern = r".{1,80}?".join(re.escape(part) for part in _PLACEHOLDER.split(msgid))
            sentences.append(Sentence(msgid, translated, re.compile(rf"(?<![\w-]){pattern}(?![\w-])")))
    return sentences


def english_left(text: str, sentences: list[Sentence], *, min_words: int = 1, min_chars: int = 4) -> list[str]:
    """The English strings among `sentences` (of at least `min_words` words besides placeholders)
    that `text` shows."""
    text = re.sub(r"\s+", " ", text)
    return sorted(
        {s.msgid for s in sentences if s.words >= min_words and len(s.msgid) >= min_chars and s.pattern.search(text)}
    )


@functools.cache
def _translations(language: str) -> tuple[tuple[str, re.Pattern], ...]:
    """(msgid, its translation as a pattern whose placeholders match any text) of every entry of
    the language's catalogues that is translated into something other than the English."""
    found = []
    for po in sorted((LOCALE / language / "LC_MESSAGES").glob("*.po")):
        for msgid, translated in _entries(po):
            if translated in (msgid, ""):
                continue
            parts = _PLACEHOLDER.split(translated)
            if len(parts) > 1:  # python-format: "%%" is a literal "%"
                parts = [part.replace("%%", "%") for part in parts]
            found.append((msgid, re.compile("(.+?)".join(re.escape(part) for part in parts), re.S)))
    return tuple(found)


def catalogue_source(text: str, language: str, data: Iterable[str] = ()) -> str | None:
    """The msgid whose translation into `language` `text` is, or None when it is none of them.

    Each placeholder of the translation must be filled with one of `data` (what the sentence names:
    a file, a server's address, the server's own words) or with a sentence that is itself a
    translation from the catalogue (an error inside an error), so English filled in where a
    translated sentence belongs is not taken for a translation either."""
    data = set(data)
    for msgid, pattern in _translations(language):
        match = pattern.fullmatch(text)
        if match and all(
            part in data or (part != text and catalogue_source(part, language, data)) for part in match.groups()
        ):
            return msgid
    return None
