"""Each expectation's verdict on one played answer (chat/checks/play.py's `Played`).

Text is compared in one normal form (`normal`): Unicode NFKD with the combining marks dropped
(é -> e, ﬁ -> fi), case folded, every run of characters other than letters and digits a single
space, and numbers written one way (`1,000`, `1 000` and `1000` are 1000; `3.14` and `3,14` are
3.14; `2.50` is 2.5). A separator followed by exactly three digits groups thousands (`1.000`,
`1,000,000`); otherwise the last `.` or `,` is the decimal mark. A fact or forbidden phrase is
found when its normal form appears in the answer's as whole words.

Whether the answer refused is read from the turn itself, never from its wording: it searched, and
its answer cites no passage — every search found nothing relevant (the tool then told the model to
say so, chat/turn/grounding.nothing_found; the extractive answer says so itself, with no passage to
quote), or it used none of what it found (the grounding rules' "say so plainly" instead of
answering from them). An answer that cites numbers no search returned claims the material, so it
did not refuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from chat.checks.grounded import Groundedness, measure
from chat.turn.citations import cited_numbers
from chat.turn.tools import TOOL_NAME
from rag.text import canonical_number, compare_form, search_form

# A check whose answer cites passages fails when a smaller share of its sentences is supported by them
# (chat/checks/grounded.py; docs/ARCHITECTURE.md "Answer checks").
GROUNDED_FLOOR = 0.8

_SPACED_THOUSANDS = re.compile(r"(?<![\d.,])(\d{1,3})((?:[ \u00a0\u202f]\d{3})+)(?![\d])")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)+")
_NOT_WORD = re.compile(r"[^\w.]+|(?<!\d)\.|\.(?!\d)|_")


def normal(text: str) -> str:
    """`text` in the one form facts, forbidden phrases and answers are compared in (rag's
    `compare_form`, numbers by `canonical_number`, as the leak guard compares them)."""
    text = compare_form(text)
    text = _SPACED_THOUSANDS.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), text)
    text = _NUMBER.sub(lambda m: canonical_number(m.group(0)), text)
    return " ".join(_NOT_WORD.sub(" ", text).split())


def contains(answer_normal: str, phrase: str) -> bool:
    wanted = normal(phrase)
    return bool(wanted) and f" {wanted} " in f" {answer_normal} "


@dataclass
class Verdict:
    """What a result stores: the evidence, each failed expectation's sentence, and whether it passed."""

    searched: bool
    searches: list[str]
    cited: list[dict[str, Any]]
    facts_missing: list[list[str]] = field(default_factory=list)
    forbidden_found: list[str] = field(default_factory=list)
    refused: bool = False
    grounded: float | None = None
    unsupported: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.reasons


def refused(tool_results: list[dict], answer: str) -> bool:
    """The turn searched and its answer cites nothing: every search found nothing relevant, or it
    used none of what it found. An answer citing numbers no search returned claims the material:
    no refusal."""
    searched = any(r.get("query") for r in tool_results)
    return searched and not cited_numbers(answer)


def cites_match(cited: list[dict], wanted: dict[str, Any]) -> bool:
    """A cited passage of the file, on the page and in the section wanted (where given)."""
    for passage in cited:
        if passage.get("file_id") != wanted["file_id"]:
            continue
        page = wanted.get("page")
        if page is not None:
            first = passage.get("page")
            last = passage.get("page_end") or first
            if first is None or not first <= page <= last:
                continue
        section = wanted.get("section")
        if section and search_form(section) not in search_form(passage.get("section") or ""):
            continue
        return True
    return False


def judge(expect: dict[str, Any], played, *, language: str) -> Verdict:
    """Every expectation of `expect` against the played answer; `reasons` says which failed and why."""
    searches = [c.get("query") or "" for c in played.tool_calls if c.get("name") == TOOL_NAME]
    cited = [{k: p.get(k) for k in ("file_id", "file_name", "page", "page_end", "section")} for p in played.cited]
    verdict = Verdict(searched=bool(searches), searches=[s for s in searches if s], cited=cited)
    verdict.refused = refused(played.tool_results, played.text)
    answer = normal(played.text)
    verdict.facts_missing = [fact for fact in expect.get("facts", []) if not any(contains(answer, w) for w in fact)]
    verdict.forbidden_found = [p for p in expect.get("forbidden", []) if contains(answer, p)]
    if not verdict.refused:
        measured: Groundedness = measure(played.text, played.cited, language=language, quoted=played.extractive)
        verdict.grounded, verdict.unsupported = measured.share, measured.unsupported
    verdict.reasons = _reasons(expect, verdict, played)
    return verdict


def _reasons(expect: dict[str, Any], v: Verdict, played) -> list[str]:
    reasons = []
    if played.error:
        reasons.append(_("The answer failed: %(error)s") % {"error": played.error})
    for fact in v.facts_missing:
        reasons.append(_("The answer leaves out “%(fact)s”.") % {"fact": " / ".join(fact)})
    cites = expect.get("cites")
    if cites and not cites_match(played.cited, cites):
        where = played.file_names.get(cites["file_id"]) or f"#{cites['file_id']}"
        if cites.get("page"):
            where += ", " + _("page %(page)s") % {"page": cites["page"]}
        if cites.get("section"):
            where += f", {cites['section']}"
        reasons.append(_("The answer does not cite %(where)s.") % {"where": where})
    if expect.get("refuses") is True and not v.refused:
        reasons.append(_("The answer should say the material does not cover this, but it answered from the material."))
    if expect.get("refuses") is False and v.refused:
        reasons.append(_("The answer says the material does not cover this, but it should answer from it."))
    for phrase in v.forbidden_found:
        reasons.append(_("The answer contains “%(phrase)s”, which it must not.") % {"phrase": phrase})
    if expect.get("searches") is True and not v.searched:
        reasons.append(_("The assistant answered without searching the material."))
    if expect.get("searches") is False and v.searched:
        reasons.append(_("The assistant searched the material, which this question should not need."))
    if v.grounded is not None and v.grounded < GROUNDED_FLOOR:
        sentence = _("Only %(share)s%% of the answer's sentences are supported by the passages it cites.")
        reasons.append(sentence % {"share": round(v.grounded * 100)})
    return reasons
