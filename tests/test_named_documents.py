"""A question that names documents gets passages from each of them (issue 46, item 13): in the
search API and page, in a chat answer, and in an answer check, on a real index."""

from __future__ import annotations

import json

import pytest

from chat.models import ChatSession
from chat.turn.agent import run_turn, start_turn
from chat.turn.events import ListSink
from collections_app.checks import TOP, run_checks
from collections_app.models import FileStatus, SearchCheck, SourceFile
from rag.documents import Document, named_in
from rag.search import search_collections
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call
from tests.fixtures_search import index_texts

# The textbook says much about photosynthesis; the lab guide mentions it once, among other things:
# a search for "photosynthesis" alone ranks every textbook passage above the lab guide's.
TEXTBOOK = [f"Photosynthesis in chloroplasts, part {i}: photosynthesis turns light into sugar." for i in range(20)]
LAB_GUIDE = [
    "Measure the oxygen bubbles of the pondweed under the lamp; photosynthesis gives them off.",
    "Wear goggles and gloves at all times in the laboratory.",
]


def _file(collection, name: str, texts: list[str]) -> SourceFile:
    source = SourceFile.objects.create(
        collection=collection,
        original_name=name,
        file=f"collections/{collection.pk}/{name}",
        file_type="markdown",
        size=100,
        sha256=name.ljust(64, "0"),
        status=FileStatus.READY,
        uploaded_by=collection.owner,
    )
    index_texts(collection, texts, file_id=source.pk, file_name=name)
    return source


@pytest.fixture
def two_documents(search_collection):
    textbook = _file(search_collection, "Biology-Textbook.md", TEXTBOOK)
    return textbook, _file(search_collection, "lab-guide.md", LAB_GUIDE)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("What do lab-guide.md and the biology textbook say?", ["lab-guide.md", "Biology-Textbook.md"]),
        ("in the Lab Guide", ["lab-guide.md"]),  # case and separators read alike
        ("LAB_GUIDE.MD", ["lab-guide.md"]),
        ("the lab guidelines", []),  # a name spans whole words
        ("photosynthesis", []),
    ],
)
def test_a_document_is_named_by_its_file_name_with_or_without_extension(text, named):
    documents = [Document(1, 1, "Biology-Textbook.md"), Document(1, 2, "lab-guide.md"), Document(1, 3, "a.md")]
    assert [d.name for d in named_in(text, documents)] == named


def test_names_too_short_to_tell_from_words_and_names_inside_longer_ones_do_not_count():
    documents = [Document(1, 1, "a.pdf"), Document(1, 2, "week2.pptx"), Document(1, 3, "week2-notes.pdf")]
    assert named_in("read a pdf", documents) == []
    assert [d.name for d in named_in("the week2 notes", documents)] == ["week2-notes.pdf"]
    assert [d.name for d in named_in("the week2 notes and week2 itself", documents)] == [
        "week2-notes.pdf",
        "week2.pptx",
    ]
    assert [d.name for d in named_in("Käsikirja ja kasikirja.PDF:ssä", [Document(1, 4, "käsikirja.pdf")])] == [
        "käsikirja.pdf"
    ]


def test_each_named_document_gets_passages_of_its_own(two_documents, search_collection):
    textbook, guide = two_documents
    plain = search_collections([search_collection], "photosynthesis", limit=4, curate=False)
    assert {p.file_name for p in plain.results} == {"Biology-Textbook.md"}  # the general ranking alone

    named = [Document(search_collection.pk, textbook.pk, textbook.original_name)]
    named.append(Document(search_collection.pk, guide.pk, guide.original_name))
    outcome = search_collections([search_collection], "photosynthesis", limit=4, curate=False, named=named)
    files = [p.file_name for p in outcome.results]
    assert len(files) == 4 and set(files) == {"Biology-Textbook.md", "lab-guide.md"}
    # The lab guide's own best passage, not any of its passages.
    assert next(p.text for p in outcome.results if p.file_name == "lab-guide.md") == LAB_GUIDE[0]
    assert any("Biology-Textbook.md, lab-guide.md" in note for note in outcome.notes)


def test_the_search_api_finds_the_documents_a_query_names(two_documents, search_collection, owner, client_for):
    body = {"query": "photosynthesis in the lab guide and the biology textbook", "limit": 4, "curate": False}
    response = client_for(owner).post(
        f"/api/v1/collections/{search_collection.pk}/search", json.dumps(body), content_type="application/json"
    )
    assert response.status_code == 200
    assert {r["file_name"] for r in response.json()["results"]} == {"Biology-Textbook.md", "lab-guide.md"}


def test_a_chat_question_naming_two_documents_gets_passages_from_both(two_documents, prompt, student, ollama, settings):
    settings.CHAT_SEARCH_LIMIT = 4
    settings.CHAT_SEARCH_CANDIDATES = 4
    prompt.curation_enabled = False
    prompt.save()
    session = ChatSession.objects.create(prompt=prompt, user=student)
    # The model's query names neither document; the student's question names both.
    ollama.script(
        Reply(tool_calls=[search_call("photosynthesis")]),
        Reply(content="The textbook explains it [1]; the lab guide measures it [2]."),
    )
    sink = ListSink()
    run_turn(start_turn(session, "What do the biology textbook and lab-guide.md say about photosynthesis?"), sink)
    result = sink.of_type("tool_result")[0]
    assert {p["file_name"] for p in result["passages"]} == {"Biology-Textbook.md", "lab-guide.md"}
    # The model reads them grouped under each document's name, told to say which says what.
    told = json.dumps(ollama.chat_requests()[-1]["messages"])
    assert "## Document: Biology-Textbook.md" in told and "## Document: lab-guide.md" in told
    assert "which document says what" in told


def test_a_test_question_naming_a_document_is_searched_as_the_chat_would(two_documents, search_collection):
    _, guide = two_documents
    question = "What does lab-guide.md say about photosynthesis?"
    plain = search_collections([search_collection], question, limit=TOP, curate=False)
    files = [p.file_name for p in plain.results]
    assert "lab-guide.md" not in files[:3]  # below the textbook when the name counts as words only
    check = SearchCheck.objects.create(collection=search_collection, question=question, expect_file=guide)
    run = run_checks(search_collection)
    assert run.passed == 1 and check.results.get().rank == 1
