"""The one write path of answer checks: the question and its expectations, for the page, the API
and the starting points alike (`clean_check`, `create_check`, `update_check`).

`expect` is stored exactly as `clean_expect` returns it, with only the expectations given:
    facts      [[alternative, ...], ...]   each fact must appear in the answer, in one of its wordings
    cites      {file_id, page?, section?}  a file of one of the prompt's collections the answer cites
    refuses    bool                        the material does not cover it: the answer must say so (or not)
    forbidden  [phrase, ...]               phrases that must not appear in the answer
    searches   bool                        the model must (or must not) call document_search
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from chat.models import AnswerCheck, Prompt
from collections_app.checks import page_number
from collections_app.models import SourceFile
from kernel.errors import InvalidInput
from kernel.records import save_values

MAX_QUESTION = 500
MAX_PHRASE = 300
MAX_PHRASES = 20
KEYS = ("facts", "cites", "refuses", "forbidden", "searches")


def clean_check(prompt: Prompt, spec: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Validated model fields (`question`, `expect`) from `spec`. Raises InvalidInput naming the
    field, with a sentence the teacher can act on."""
    cleaned: dict[str, Any] = {}
    if "question" in spec or not partial:
        question = " ".join(str(spec.get("question") or "").split())
        if not question:
            raise InvalidInput(_("Write the question a student would ask."), field="question")
        if len(question) > MAX_QUESTION:
            raise InvalidInput(_("Keep the question to 500 characters."), field="question")
        cleaned["question"] = question
    if "expect" in spec or not partial:
        cleaned["expect"] = clean_expect(prompt, spec.get("expect") or {})
    return cleaned


def clean_expect(prompt: Prompt, expect: Any) -> dict[str, Any]:
    """The expectations as stored: only those given, each in its one shape."""
    if not isinstance(expect, dict):
        raise InvalidInput(_("Expectations are an object of facts, cites, refuses, forbidden and searches."))
    unknown = sorted(set(expect) - set(KEYS))
    if unknown:
        sentence = _("“%(name)s” is not an expectation; use facts, cites, refuses, forbidden or searches.")
        raise InvalidInput(sentence % {"name": unknown[0]}, field=f"expect.{unknown[0]}")
    cleaned: dict[str, Any] = {}
    if expect.get("facts") is not None:
        facts = _clean_facts(expect["facts"])
        if facts:
            cleaned["facts"] = facts
    if expect.get("cites") is not None:
        cleaned["cites"] = _clean_cites(prompt, expect["cites"])
    for name in ("refuses", "searches"):
        if expect.get(name) is not None:
            if not isinstance(expect[name], bool):
                raise InvalidInput(_("“%(name)s” is true or false.") % {"name": name}, field=f"expect.{name}")
            cleaned[name] = expect[name]
    if expect.get("forbidden") is not None:
        forbidden = _phrases(expect["forbidden"], field="expect.forbidden")
        if forbidden:
            cleaned["forbidden"] = forbidden
    if cleaned.get("refuses") and (cleaned.get("facts") or cleaned.get("cites")):
        sentence = _(
            "An answer that must say the material does not cover the question cannot also need facts or a citation."
        )
        raise InvalidInput(sentence, field="expect.refuses")
    return cleaned


def _phrases(value: Any, *, field: str) -> list[str]:
    """Non-empty phrases with their spaces tidied; a string is one phrase per line (the form)."""
    if isinstance(value, str):
        value = value.splitlines()
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(_("List the phrases as text, one per line."), field=field)
    phrases = list(dict.fromkeys(" ".join(v.split()) for v in value if v.strip()))
    if len(phrases) > MAX_PHRASES:
        raise InvalidInput(_("Give at most 20 phrases."), field=field)
    if any(len(p) > MAX_PHRASE for p in phrases):
        raise InvalidInput(_("Keep each phrase to 300 characters."), field=field)
    return phrases


def _clean_facts(value: Any) -> list[list[str]]:
    """Each fact as its list of alternative wordings. The form writes one fact per line with its
    alternatives separated by `|`; a plain string stands for a fact with one wording."""
    if isinstance(value, str):
        value = [line.split("|") for line in value.splitlines()]
    if not isinstance(value, list | tuple):
        raise InvalidInput(_("Facts are a list, each a list of alternative wordings."), field="expect.facts")
    facts = []
    for fact in value:
        wordings = _phrases([fact] if isinstance(fact, str) else fact, field="expect.facts")
        if wordings:
            facts.append(wordings)
    if len(facts) > MAX_PHRASES:
        raise InvalidInput(_("Give at most 20 facts."), field="expect.facts")
    return facts


def _clean_cites(prompt: Prompt, value: Any) -> dict[str, Any]:
    """A file of one of the prompt's collections, with a page from 1 up and a section, if given."""
    if not isinstance(value, dict):
        raise InvalidInput(_("Choose the file the answer must cite."), field="expect.cites")
    try:
        file_id = int(value.get("file_id") or 0)
    except (TypeError, ValueError):
        file_id = 0
    source = SourceFile.objects.filter(pk=file_id, collection__in=prompt.collections.all()).first()
    if source is None:
        raise InvalidInput(_("Choose a file of one of the prompt's collections."), field="expect.cites.file_id")
    cites: dict[str, Any] = {"file_id": source.pk}
    page = page_number(value.get("page"), field="expect.cites.page")
    if page is not None:
        cites["page"] = page
    section = " ".join(str(value.get("section") or "").split())
    if len(section) > MAX_PHRASE:
        raise InvalidInput(_("Keep the section to 300 characters."), field="expect.cites.section")
    if section:
        cites["section"] = section
    return cites


def create_check(actor, prompt: Prompt, spec: dict[str, Any]) -> AnswerCheck:
    return AnswerCheck.objects.create(prompt=prompt, created_by=actor, **clean_check(prompt, spec))


def update_check(check: AnswerCheck, spec: dict[str, Any]) -> AnswerCheck:
    return save_values(check, clean_check(check.prompt, spec, partial=True))
