"""Answer checks: each question played through the real chat turn (the test model server scripted
per case, the real index and search, the real RQ worker), each expectation's verdict with its
reason, and nothing of it in a student's chat or the statistics."""

from __future__ import annotations

import pytest

from chat.checks import expect as check_writes
from chat.checks import runs
from chat.models import AnswerCheckRun, ChatSession, Message, Prompt, PromptDay, RunStatus
from collections_app.models import FileStatus
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call

COURSE = b"""# Statistics 101

## Exam

The final exam is on 12 December in hall B. Bring a calculator and your student card.

## Grading

The course is graded on a scale from 0 to 5. Weekly exercises give up to 20 percent of the grade.
"""

NOTES = b"""# Reading notes

## Sampling

A random sample gives every member of the population the same chance of being chosen.
"""

FAITHFUL = "The final exam is on 12 December in hall B [1]. Bring a calculator and your student card [1]."


@pytest.fixture
def course(fast_collection, ingest_upload, owner, student):
    """A prompt over two ingested files (curation off: every model reply is scripted)."""
    from chat.models import Enrollment

    lecture = ingest_upload(fast_collection, COURSE, "statistics.md")
    notes = ingest_upload(fast_collection, NOTES, "notes.md")
    assert lecture.status == notes.status == FileStatus.READY
    prompt = Prompt.objects.create(owner=owner, name="Stats helper", system_prompt="Be kind.", curation_enabled=False)
    prompt.collections.add(fast_collection)
    Enrollment.objects.create(student=student, prompt=prompt)
    return prompt, lecture, notes


@pytest.fixture
def play_run(run_worker, django_capture_on_commit_callbacks, owner):
    """Start a run as the owner and let the real worker play it; the stored run."""

    def do(prompt, draft=None) -> AnswerCheckRun:
        with django_capture_on_commit_callbacks(execute=True):
            run = runs.start_run(owner, prompt, draft=draft)
        run_worker()
        run.refresh_from_db()
        return run

    return do


def check(prompt, question: str, **expect):
    return check_writes.create_check(prompt.owner, prompt, {"question": question, "expect": expect})


def only_result(run):
    [result] = run.results.all()
    return result


def test_a_faithful_answer_passes_and_leaves_no_trace_in_chats_or_statistics(course, ollama, play_run):
    prompt, lecture, _notes = course
    check(prompt, "When is the exam?", facts=[["12 December", "December 12"]], cites={"file_id": lecture.pk},
          searches=True, refuses=False, forbidden=["solution"])  # fmt: skip
    ollama.script(Reply(tool_calls=[search_call("exam date")]), Reply(content=FAITHFUL))

    run = play_run(prompt)

    assert (run.status, run.passed, run.total, run.ran) == (RunStatus.DONE, 1, 1, 1)
    result = only_result(run)
    assert result.passed, result.reasons
    assert result.answer == FAITHFUL and result.mode == "model"
    assert result.searched and result.searches == ["exam date"]
    assert result.cited[0]["file_id"] == lecture.pk and not result.refused
    assert result.grounded == 1.0 and result.unsupported == []
    # The model read the prompt's instructions and the grounding rules, with the search tool.
    first = ollama.chat_requests()[0]
    assert first["messages"][0]["content"].startswith("Be kind.") and first["tools"]
    # No chat, no message, no statistics.
    assert not ChatSession.objects.exists() and not Message.objects.exists()
    assert not PromptDay.objects.exists() and not prompt.gaps.exists()


def test_a_missing_fact_fails_naming_it(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "When is the exam?", facts=[["12 December"], ["room 101", "hall C"]])
    ollama.script(Reply(tool_calls=[search_call("exam")]), Reply(content=FAITHFUL))

    result = only_result(play_run(prompt))

    assert not result.passed
    assert result.facts_missing == [["room 101", "hall C"]]
    assert result.reasons == ["The answer leaves out “room 101 / hall C”."]


def test_facts_match_across_case_accents_spaces_and_number_formats(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "How is it graded?", facts=[["SCALE FROM 0 TO 5"], ["20 %", "20 percent"], ["1,000 points"],
                                               ["3,5"], ["cafe"]])  # fmt: skip
    answer = (
        "It is graded on a scale  from 0 to 5 [1]; exercises give up to 20 percent [1]. 1 000 points, 3.5, café [1]."
    )
    ollama.script(Reply(tool_calls=[search_call("grading")]), Reply(content=answer))

    result = only_result(play_run(prompt))

    assert result.facts_missing == []


def test_citing_the_wrong_file_fails(course, ollama, play_run):
    prompt, _lecture, notes = course
    check(prompt, "When is the exam?", cites={"file_id": notes.pk, "section": "Sampling"})
    ollama.script(Reply(tool_calls=[search_call("exam date")]), Reply(content=FAITHFUL))

    result = only_result(play_run(prompt))

    assert not result.passed
    assert result.reasons == ["The answer does not cite notes.md, Sampling."]


def test_an_invented_sentence_no_passage_supports_fails_and_is_marked(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "When is the exam?", facts=[["12 December"]])
    invented = "Students who fail may retake it online during the summer holidays."
    ollama.script(Reply(tool_calls=[search_call("exam date")]), Reply(content=f"{FAITHFUL} {invented} [1]"))

    result = only_result(play_run(prompt))

    assert not result.passed
    assert result.unsupported == [invented]
    assert result.grounded == pytest.approx(2 / 3, abs=0.001)
    assert result.reasons == ["Only 67% of the answer's sentences are supported by the passages it cites."]


def test_a_forbidden_phrase_fails(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "When is the exam?", forbidden=["HALL B"])
    ollama.script(Reply(tool_calls=[search_call("exam date")]), Reply(content=FAITHFUL))

    result = only_result(play_run(prompt))

    assert not result.passed and result.forbidden_found == ["HALL B"]
    assert result.reasons == ["The answer contains “HALL B”, which it must not."]


def test_answering_what_it_should_refuse_fails_and_declining_passes(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "Who won the football world cup in 1998?", refuses=True)
    ollama.script(Reply(tool_calls=[search_call("football world cup")]), Reply(content=FAITHFUL))
    answered = only_result(play_run(prompt))
    assert not answered.passed and not answered.refused
    assert answered.reasons == [
        "The answer should say the material does not cover this, but it answered from the material."
    ]

    # Declining: the passages it was given are not used (the grounding rules' "say so plainly").
    ollama.script(
        Reply(tool_calls=[search_call("football world cup")]),
        Reply(content="The course material does not cover this."),
    )
    declined = only_result(play_run(prompt))
    assert declined.passed and declined.refused and declined.grounded is None
    assert declined.changed == "newly_passing"


def test_no_search_where_one_is_required_fails(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "When is the exam?", searches=True)
    ollama.script(Reply(content="The exam is in December, I believe."))

    result = only_result(play_run(prompt))

    assert not result.passed and not result.searched and result.searches == []
    assert result.reasons == ["The assistant answered without searching the material."]


def test_without_a_model_the_extractive_answer_is_checked(course, ollama, play_run):
    prompt, lecture, _notes = course
    ollama.models = ["snowflake-arctic-embed2:latest"]  # no chat model on the server
    check(prompt, "When is the final exam?", facts=[["12 December"]], cites={"file_id": lecture.pk}, searches=True)

    run = play_run(prompt)

    result = only_result(run)
    assert result.mode == "extractive" and result.passed, result.reasons
    assert result.searches == ["When is the final exam?"] and result.grounded == 1.0
    assert not ollama.chat_requests()


def test_a_newly_failing_check_is_marked_against_the_last_live_run(course, ollama, play_run):
    prompt, _lecture, _notes = course
    check(prompt, "When is the exam?", facts=[["12 December"]])
    ollama.script(Reply(tool_calls=[search_call("exam")]), Reply(content=FAITHFUL))
    assert only_result(play_run(prompt)).changed == ""
    ollama.script(Reply(tool_calls=[search_call("exam")]), Reply(content="It is in hall B [1]."))
    assert only_result(play_run(prompt)).changed == "newly_failing"
