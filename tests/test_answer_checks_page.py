"""The "Answer checks" page as a teacher uses it: three checks added (one from a material gap), run,
one failing with its unsupported sentence marked, a draft instruction tried side by side and
applied."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from chat.models import AnswerCheck, MaterialGap
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call
from tests.test_answer_checks import FAITHFUL, course  # noqa: F401  (the fixture)

INVENTED = "Students who fail may retake it online during the summer holidays."


@pytest.fixture
def page(client_for, owner, django_capture_on_commit_callbacks):
    client = client_for(owner)

    def post(prompt, **data):
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(f"/prompts/{prompt.pk}/answer-checks/", data)
        assert response.status_code == 302, response.content.decode()[:2000]
        return client.get(f"/prompts/{prompt.pk}/answer-checks/").content.decode()

    return client, post


def test_a_teacher_adds_runs_sees_a_failure_and_applies_a_draft(course, page, ollama, run_worker):  # noqa: F811
    prompt, lecture, _notes = course
    client, post = page
    now = timezone.now()
    gap = MaterialGap.objects.create(
        prompt=prompt, key="parking", query="where can I park", count=3, first_asked=now, last_asked=now
    )
    html = client.get(f"/prompts/{prompt.pk}/answer-checks/").content.decode()
    assert "where can I park" in html and 'data-testid="offer-gap"' in html

    post(prompt, action="start", kind="gap", key=gap.pk)
    post(prompt, action="add", question="When is the exam?", facts="12 December | December 12", file_id=lecture.pk,
         searches="yes")  # fmt: skip
    html = post(prompt, action="add", question="How is the course graded?", facts="0 to 5", forbidden="solution")
    checks = list(AnswerCheck.objects.filter(prompt=prompt).order_by("id"))
    assert [c.expect for c in checks] == [
        {"refuses": True},
        {"facts": [["12 December", "December 12"]], "cites": {"file_id": lecture.pk}, "searches": True},
        {"facts": [["0 to 5"]], "forbidden": ["solution"]},
    ]
    assert "where can I park" not in html.split('data-testid="starting-points"')[1]  # offered no more

    ollama.script(
        Reply(tool_calls=[search_call("parking")]), Reply(content="The course material does not cover this."),
        Reply(tool_calls=[search_call("exam")]), Reply(content=FAITHFUL),
        Reply(tool_calls=[search_call("grading")]),
        Reply(content=f"The course is graded on a scale from 0 to 5 [1]. {INVENTED} [1]"),
    )  # fmt: skip
    html = post(prompt, action="run")
    assert 'data-testid="run-under-way"' in html
    run_worker()
    html = client.get(f"/prompts/{prompt.pk}/answer-checks/").content.decode()
    assert "2 of 3 passed" in html
    rows = re.findall(r'<li class="ac-row( failing)?"', html)
    assert rows[0] == " failing"  # the failing check first
    assert "Only 50% of the answer&#x27;s sentences are supported by the passages it cites." in html

    detail = client.get(f"/prompts/{prompt.pk}/answer-checks/{checks[2].pk}/").content.decode()
    assert re.search(r'<mark class="unsupported"[^>]*>' + re.escape(INVENTED) + "</mark>", detail)
    assert "<span>The course is graded on a scale from 0 to 5.</span>" in detail

    # A draft instruction, tried side by side; the live prompt keeps its own until applied.
    ollama.script(
        Reply(tool_calls=[search_call("parking")]), Reply(content="The course material does not cover this."),
        Reply(tool_calls=[search_call("exam")]), Reply(content=FAITHFUL),
        Reply(tool_calls=[search_call("grading")]), Reply(content="The course is graded on a scale from 0 to 5 [1]."),
    )  # fmt: skip
    post(prompt, action="draft", system_prompt="Only say what the material says.", curation="",
         collection_ids=[lecture.collection_id])  # fmt: skip
    run_worker()
    html = client.get(f"/prompts/{prompt.pk}/answer-checks/").content.decode()
    assert 'data-testid="draft-result"' in html and "Draft: <strong>3 of 3 passed</strong>" in html
    prompt.refresh_from_db()
    assert prompt.system_prompt == "Be kind."
    draft_id = re.search(r'name="run_id" value="(\d+)"', html).group(1)
    html = post(prompt, action="apply", run_id=draft_id)
    prompt.refresh_from_db()
    assert prompt.system_prompt == "Only say what the material says."
    assert 'data-testid="run-under-way"' in html  # its checks run again, by themselves


def test_the_adversarial_set_comes_with_default_expectations(course, page):  # noqa: F811
    prompt, _lecture, _notes = course
    _client, post = page
    post(prompt, action="adversarial")
    post(prompt, action="adversarial")  # a second click adds nothing twice
    checks = list(AnswerCheck.objects.filter(prompt=prompt).order_by("id"))
    assert len(checks) == 3
    assert checks[0].expect["searches"] is True and checks[0].expect["forbidden"]
    assert "CurreChat rules" in checks[1].expect["forbidden"]
    assert checks[2].expect == {"refuses": True}


def test_a_gap_a_rated_answer_and_a_test_question_each_become_a_check_in_one_click(
    course,  # noqa: F811
    page,
    student,
):
    from chat.models import ChatSession, Feedback, Message
    from collections_app.models import SearchCheck

    prompt, lecture, _notes = course
    client, post = page
    now = timezone.now()
    gap = MaterialGap.objects.create(prompt=prompt, key="park", query="where can I park", count=2, first_asked=now,
                                     last_asked=now)  # fmt: skip
    chat = ChatSession.objects.create(prompt=prompt, user=student, visibility="pseudonymous")
    Message.objects.create(session=chat, role="user", content="When  is the exam?")
    cited = [{"n": 1, "file_id": lecture.pk, "file_name": "statistics.md"}]
    answer = Message.objects.create(
        session=chat, role="assistant", content="On 12 December [1].", status="complete", citations=cited
    )
    rating = Feedback.objects.create(message=answer, prompt=prompt, rating="up")
    test_question = SearchCheck.objects.create(
        collection=lecture.collection, question="How is it graded?", expect_file=lecture, expect_section="Grading",
        expect_phrase="0 to 5",
    )  # fmt: skip

    # From the insight page's gap row, one click.
    insight = client.get(f"/prompts/{prompt.pk}/insight/").content.decode()
    assert 'data-testid="gap-to-answer-check"' in insight
    post(prompt, action="start", kind="gap", key=gap.pk)
    post(prompt, action="start", kind="rated", key=rating.pk)
    post(prompt, action="start", kind="retrieval", key=test_question.pk)
    made = {c.question: c.expect for c in AnswerCheck.objects.filter(prompt=prompt)}
    assert made == {
        "where can I park": {"refuses": True},
        "When is the exam?": {"searches": True, "cites": {"file_id": lecture.pk}},
        "How is it graded?": {"searches": True, "cites": {"file_id": lecture.pk, "section": "Grading"},
                              "facts": [["0 to 5"]]},
    }  # fmt: skip
    # A second click on the same starting point adds nothing.
    response = client.post(f"/prompts/{prompt.pk}/answer-checks/", {"action": "start", "kind": "gap", "key": gap.pk})
    assert "is an answer check already" in response.content.decode()
