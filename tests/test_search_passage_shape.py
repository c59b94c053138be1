"""A passage has one definition (rag.results.Passage); the API, the chat events and the stored
messages carry it in shapes derived from it, so a field added there cannot go missing elsewhere."""

from __future__ import annotations

import dataclasses
import typing

from chat.turn.events import PassageView, passage_view
from collections_app.search import PassageOut
from rag.results import Passage

PASSAGE = Passage(
    chunk_id="cc:c1:chunk:4:0",
    collection_id=1,
    file_id=4,
    file_name="averages.md",
    page=None,
    page_end=None,
    section="Ch 1 > Averages",
    text="The median is the middle value.\n\n| a | b |",
    score=0.0312,
    sources={"vector": 1, "any_word": 3},
)


def test_chat_passage_view_is_a_passage_plus_its_citation_number():
    passage_types = typing.get_type_hints(Passage)
    view_types = typing.get_type_hints(PassageView)
    assert view_types.pop("n") is int
    assert view_types.pop("html") is str
    assert {name: passage_types[name] for name in view_types} == view_types  # same names, same types
    view = passage_view(PASSAGE, 3)
    assert view["n"] == 3
    assert {k: v for k, v in view.items() if k not in ("n", "html")} == {k: getattr(PASSAGE, k) for k in view_types}


def test_chat_passage_view_carries_the_text_rendered_like_an_answer():
    text = "The **median** is $$m = x_{(n+1)/2}$$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n<script>alert(1)</script>"
    view = passage_view(dataclasses.replace(PASSAGE, text=text), 3)
    assert "<strong>median</strong>" in view["html"] and "<math" in view["html"]
    assert "<table>" in view["html"] and "| a | b |" not in view["html"]
    assert "<script" not in view["html"], "a file's markup is sanitised as an answer's is"


def test_api_passage_schema_carries_every_passage_field_unchanged():
    as_json = PassageOut(**dataclasses.asdict(PASSAGE)).model_dump()
    assert as_json == dataclasses.asdict(PASSAGE)
    schema = PassageOut.model_json_schema()
    assert set(schema["required"]) == {f.name for f in dataclasses.fields(Passage) if f.default is dataclasses.MISSING}
    assert schema["properties"]["score"]["description"] == "Fused (weighted RRF) score."
