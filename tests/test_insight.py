"""Teacher insight: statistics and gaps on a scripted set of chats (exact numbers), feedback, the
privacy levels per role, and who may see any of it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from accounts.models import Role, User
from chat.insight import stats as insight
from chat.metering.usage import UsageMeter
from chat.models import ChatSession, ChatVisibility, Enrollment, EnrollmentStatus, Message, MessageRole, MessageStatus
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call


def api(client, method: str, url: str, data=None):
    kwargs = {"content_type": "application/json"} if data is not None else {}
    return getattr(client, method)(f"/api/v1{url}", json.dumps(data) if data is not None else None, **kwargs)


def passage(n: int, file_id: int, file_name: str, section: str) -> dict:
    return {"n": n, "chunk_id": f"c{n}", "file_id": file_id, "file_name": file_name, "section": section, "text": "t"}


def answer(
    session: ChatSession,
    question: str | None,
    *,
    searches=(),
    cited=(),
    tokens=(0, 0),
    when: datetime | None = None,
    status=MessageStatus.COMPLETE,
) -> Message:
    """Store a question (None: a retry of the last one) and its answer as the agent would, and count
    it. `searches` are (query, status, passages kept, passages dropped)."""
    if question is not None:
        asked = Message.objects.create(session=session, role=MessageRole.USER, content=question)
        if when:
            Message.objects.filter(pk=asked.pk).update(created=when)
    results = [
        {"tool_call_id": str(i), "query": q, "status": st, "passages": [{}] * kept, "dropped": dropped}
        for i, (q, st, kept, dropped) in enumerate(searches)
    ]
    reply = Message.objects.create(
        session=session,
        role=MessageRole.ASSISTANT,
        content="An answer.",
        tool_results=results,
        citations=list(cited),
        token_usage={"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
        status=status,
    )
    if when:
        Message.objects.filter(pk=reply.pk).update(created=when)
        reply.refresh_from_db()
    insight.record_answer(reply)
    # Its model calls are counted as the agent's meter counts them (the statistics' tokens).
    meter = UsageMeter(session.user_id, session.prompt_id)
    meter(*tokens, "qwen3:8b")
    meter.flush(day=timezone.localdate(when) if when else None)
    return reply


@pytest.fixture
def co_teacher(prompt):
    teacher = User.objects.create_user("cleo-coteacher", password="x", role=Role.TEACHER)
    prompt.co_teachers.add(teacher)
    return teacher


@pytest.fixture
def course(prompt, student, other_student):
    """Two students' chats over three days, and a teacher's preview chat that must not count."""
    Enrollment.objects.create(student=other_student, prompt=prompt)
    now = timezone.now()
    today, yesterday = now, now - timedelta(days=1)
    lecture = passage(1, 7, "lecture-3.pdf", "Sampling > Bias")
    notes = passage(2, 8, "notes.md", "Regression")
    first = ChatSession.objects.create(prompt=prompt, user=student, visibility=ChatVisibility.PSEUDONYMOUS)
    answer(first, "What is selection bias?", searches=[("selection bias", "ok", 3, 1)], cited=[lecture],
           tokens=(100, 20), when=yesterday)  # fmt: skip
    answer(first, "And photosynthesis?", searches=[("photosynthesis of plants", "nothing_relevant", 0, 4)],
           tokens=(120, 10), when=yesterday)  # fmt: skip
    answer(first, None, searches=[("plant photosynthesis", "nothing_relevant", 0, 4)], tokens=(50, 5),
           when=today)  # a retry of the same question  # fmt: skip
    second = ChatSession.objects.create(prompt=prompt, user=other_student, visibility=ChatVisibility.NONE)
    answer(second, "Explain regression and bias", cited=[lecture, notes], tokens=(80, 40), when=today,
           searches=[("regression", "ok", 2, 0), ("bias", "ok", 2, 0)])  # fmt: skip
    answer(second, "Who won the 1998 world cup?", searches=[("1998 World Cup winner", "nothing_relevant", 0, 0)],
           tokens=(10, 0), when=today)  # fmt: skip
    preview = ChatSession.objects.create(prompt=prompt, user=prompt.owner)
    answer(preview, "Test question", searches=[("teacher test gap", "nothing_relevant", 0, 2)], tokens=(999, 999))
    Enrollment.objects.filter(prompt=prompt, student=student).update(last_active=now - timedelta(days=10))
    Enrollment.objects.filter(prompt=prompt, student=other_student).update(last_active=now - timedelta(hours=1))
    return prompt


# --- Statistics ------------------------------------------------------------------------------------


def test_statistics_of_a_scripted_course_are_exact(course, client_for, owner):
    stats = api(client_for(owner), "get", f"/prompts/{course.pk}/stats?days=7").json()
    assert (stats["enrolled"], stats["active_7d"], stats["active_30d"]) == (2, 1, 2)
    assert stats["chats"] == 2, "the teacher's preview chat is not counted"
    # 4 distinct questions (the retry asks nothing new) and 5 answers.
    assert stats["messages"] == 9
    assert stats["tokens"] == 120 + 130 + 55 + 120 + 10
    assert stats["searches_per_answer"] == 1.2  # 6 searches / 5 answers
    assert stats["nothing_relevant_share"] == 0.6  # 3 of 5 answers had a search that found nothing
    assert stats["curation_drop_rate"] == round(9 / 16, 4)  # kept 3+2+2, dropped 1+4+4
    assert stats["top_sources"] == [
        {"file_id": 7, "file_name": "lecture-3.pdf", "section": "Sampling > Bias", "citations": 2},
        {"file_id": 8, "file_name": "notes.md", "section": "Regression", "citations": 1},
    ]
    assert stats["feedback"] == {"up": 0, "down": 0}
    by_day = {d["date"]: d for d in stats["by_day"]}
    assert len(stats["by_day"]) == 7
    today = timezone.localdate().isoformat()
    yesterday = (timezone.localdate() - timedelta(days=1)).isoformat()
    assert by_day[yesterday] == {"date": yesterday, "messages": 4, "tokens": 250, "searches": 2}
    assert by_day[today] == {"date": today, "messages": 5, "tokens": 185, "searches": 4}


def test_the_period_limits_the_counts_and_bad_periods_are_refused(course, client_for, owner):
    client = client_for(owner)
    assert api(client, "get", f"/prompts/{course.pk}/stats?days=1").json()["messages"] == 5
    refused = api(client, "get", f"/prompts/{course.pk}/stats?days=0")
    assert refused.status_code == 422 and "days" in refused.json()["detail"]
    assert api(client, "get", f"/prompts/{course.pk}/stats?days=366").status_code == 422


def test_statistics_keep_their_counts_when_a_student_deletes_a_chat(course, client_for, owner, other_student):
    before = api(client_for(owner), "get", f"/prompts/{course.pk}/stats").json()
    chat = ChatSession.objects.get(prompt=course, user=other_student)
    assert api(client_for(other_student), "delete", f"/chats/{chat.pk}").status_code == 204
    after = api(client_for(owner), "get", f"/prompts/{course.pk}/stats").json()
    assert after == before
    assert chat.pk not in [c["id"] for c in api(client_for(owner), "get", f"/prompts/{course.pk}/chats").json()]


def test_statistics_take_the_same_queries_for_more_chats(course, client_for, owner, django_assert_max_num_queries):
    with django_assert_max_num_queries(4):  # the day rows, the enrollments, the sources, the safety counts
        insight.statistics(course, 30)


# --- Material gaps ---------------------------------------------------------------------------------


def test_gaps_group_word_forms_and_order_and_hide_text_the_student_was_not_told_about(course, client_for, owner):
    gaps = api(client_for(owner), "get", f"/prompts/{course.pk}/gaps").json()
    assert [(g["query"], g["count"], g["handled"]) for g in gaps] == [
        ("plant photosynthesis", 2, False),  # "photosynthesis of plants" and "plant photosynthesis"
        ("1998 World Cup winner", 1, False),
    ]
    assert gaps[0]["example"] == "And photosynthesis?"
    assert gaps[1]["example"] is None, "that chat was started as 'teachers see no chat text'"
    assert gaps[0]["search_url"].endswith("/search/?q=plant+photosynthesis")
    assert "teacher test gap" not in json.dumps(gaps)


def test_a_handled_gap_comes_back_when_asked_again(course, client_for, owner, student):
    client = client_for(owner)
    gap = api(client, "get", f"/prompts/{course.pk}/gaps").json()[0]
    handled = api(client, "post", f"/prompts/{course.pk}/gaps/{gap['id']}/handled")
    assert handled.status_code == 200 and handled.json()["handled"] is True
    listed = {g["id"]: g for g in api(client, "get", f"/prompts/{course.pk}/gaps").json()}
    assert listed[gap["id"]]["handled"] is True
    assert list(listed)[-1] == gap["id"], "handled gaps come after the open ones"

    chat = ChatSession.objects.filter(prompt=course, user=student).first()
    answer(chat, "Photosynthesis again?", searches=[("photosynthesis in plants", "nothing_relevant", 0, 0)])
    again = {g["id"]: g for g in api(client, "get", f"/prompts/{course.pk}/gaps").json()}[gap["id"]]
    assert (again["handled"], again["count"], again["example"]) == (False, 3, "Photosynthesis again?")
    reopened = api(client, "post", f"/prompts/{course.pk}/gaps/{gap['id']}/handled?handled=false")
    assert reopened.json()["handled"] is False


def test_gap_of_another_prompt_cannot_be_marked(course, client_for, owner):
    from chat.models import Prompt

    mine = Prompt.objects.create(owner=owner, name="Other")
    gap = api(client_for(owner), "get", f"/prompts/{course.pk}/gaps").json()[0]
    assert api(client_for(owner), "post", f"/prompts/{mine.pk}/gaps/{gap['id']}/handled").status_code == 404


def test_a_students_unanswerable_question_becomes_a_gap_through_a_real_turn(
    client_for, owner, student, session, ollama, settings
):
    settings.SEARCH_MIN_SIMILARITY = 0.5  # the test server's vectors collide by chance (see the search tests)
    ollama.script(Reply(tool_calls=[search_call("photosynthesis chlorophyll")]), Reply(content="Not in the material."))
    sent = api(client_for(student), "post", f"/chats/{session.pk}/messages", {"content": "How do leaves work?"})
    assert sent.status_code == 200
    assert sent.json()["tool_results"][0]["status"] == "nothing_relevant"
    gaps = api(client_for(owner), "get", f"/prompts/{session.prompt_id}/gaps").json()
    assert [(g["query"], g["count"], g["example"]) for g in gaps] == [
        ("photosynthesis chlorophyll", 1, "How do leaves work?")
    ]
    stats = api(client_for(owner), "get", f"/prompts/{session.prompt_id}/stats").json()
    assert (stats["chats"], stats["messages"], stats["nothing_relevant_share"]) == (1, 2, 1.0)
    assert stats["tokens"] == sum(sent.json()["token_usage"].get(k, 0) for k in ("prompt_tokens", "completion_tokens"))


# --- Who may see it --------------------------------------------------------------------------------

INSIGHT_URLS = ["/stats", "/gaps", "/export.csv?what=stats", "/export.csv?what=gaps", "/export.csv?what=feedback"]


@pytest.mark.parametrize("path", INSIGHT_URLS)
def test_teachers_see_insight_and_students_and_outsiders_do_not(
    course, client_for, owner, co_teacher, student, other_teacher, path
):
    url = f"/api/v1/prompts/{course.pk}{path}"
    assert client_for(owner).get(url).status_code == 200
    assert client_for(co_teacher).get(url).status_code == 200
    assert client_for(student).get(url).status_code == 403
    assert client_for(other_teacher).get(url).status_code == 404
    assert client_for(None).get(url).status_code == 401
    course.co_teachers.remove(co_teacher)
    assert client_for(co_teacher).get(url).status_code == 404, "access taken away works at once"


def test_students_and_outsiders_cannot_mark_gaps_or_open_the_page(course, client_for, student, other_teacher):
    gap = insight.gaps(course)[0]
    for user in (student, other_teacher):
        assert api(client_for(user), "post", f"/prompts/{course.pk}/gaps/{gap.id}/handled").status_code in (403, 404)
        assert client_for(user).get(f"/prompts/{course.pk}/insight/").status_code in (403, 404)
    assert insight.gaps(course)[0].handled is False


# --- Feedback --------------------------------------------------------------------------------------


def test_feedback_round_trip_and_change(course, client_for, owner, student):
    chat = ChatSession.objects.get(prompt=course, user=student)
    reply = chat.messages.filter(role=MessageRole.ASSISTANT).first()
    client = client_for(student)
    given = api(client, "post", f"/messages/{reply.pk}/feedback", {"rating": "down", "comment": "  Too vague. "})
    assert given.status_code == 200 and given.json()["rating"] == "down" and given.json()["comment"] == "Too vague."
    assert api(client_for(owner), "get", f"/prompts/{course.pk}/stats").json()["feedback"] == {"up": 0, "down": 1}
    changed = api(client, "post", f"/messages/{reply.pk}/feedback", {"rating": "up"})
    assert changed.json()["rating"] == "up"
    assert api(client_for(owner), "get", f"/prompts/{course.pk}/stats").json()["feedback"] == {"up": 1, "down": 0}
    page = client.get(f"/prompts/{course.pk}/chat/{chat.pk}/").content.decode()
    assert f'"{reply.pk}": {{"rating": "up", "comment": "Too vague."}}' in page, "the comment stays"
    csv_text = client_for(owner).get(f"/api/v1/prompts/{course.pk}/export.csv?what=feedback").content.decode()
    assert "up" in csv_text and "What is selection bias?" in csv_text and "Student 1" in csv_text
    assert "Too vague." in csv_text


def test_feedback_is_refused_for_others_and_for_bad_input(course, client_for, owner, student, other_student):
    reply = ChatSession.objects.get(prompt=course, user=student).messages.filter(role=MessageRole.ASSISTANT).first()
    url = f"/messages/{reply.pk}/feedback"
    assert api(client_for(other_student), "post", url, {"rating": "up"}).status_code == 404
    assert api(client_for(owner), "post", url, {"rating": "up"}).status_code == 403, "teachers read, not rate"
    assert api(client_for(student), "post", url, {"rating": "meh"}).status_code == 422
    long = api(client_for(student), "post", url, {"rating": "up", "comment": "x" * 2001})
    assert long.status_code == 400 and "the most is 2,000" in long.json()["detail"]
    question = reply.session.messages.filter(role=MessageRole.USER).first()
    assert api(client_for(student), "post", f"/messages/{question.pk}/feedback", {"rating": "up"}).status_code == 404
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.STREAMING)
    assert api(client_for(student), "post", url, {"rating": "up"}).status_code == 409
    Enrollment.objects.filter(prompt=course, student=student).update(status=EnrollmentStatus.REMOVED)
    Message.objects.filter(pk=reply.pk).update(status=MessageStatus.COMPLETE)
    assert api(client_for(student), "post", url, {"rating": "up"}).status_code == 404, "a removed student"
    assert api(client_for(owner), "get", f"/prompts/{course.pk}/stats").json()["feedback"] == {"up": 0, "down": 0}


# --- Privacy per level and role ----------------------------------------------------------------------


def _everything_a_teacher_sees(client, prompt) -> str:
    parts = [client.get(f"/prompts/{prompt.pk}/insight/").content.decode()]
    parts += [client.get(f"/api/v1/prompts/{prompt.pk}{path}").content.decode() for path in INSIGHT_URLS]
    parts.append(client.get(f"/api/v1/prompts/{prompt.pk}/chats").content.decode())
    parts.append(client.get(f"/api/v1/prompts/{prompt.pk}/students").content.decode())
    return "\n".join(parts)


@pytest.mark.parametrize("level", ["none", "pseudonymous", "named"])
def test_what_teachers_see_follows_the_level_each_chat_was_started_under(
    level, prompt, client_for, owner, co_teacher, student
):
    student.first_name, student.last_name = "Samira", "Quist"
    student.save()
    prompt.chat_visibility = level
    prompt.save()
    chat = ChatSession.objects.create(prompt=prompt, user=student, visibility=level)
    reply = answer(chat, "My secret question about bias", searches=[("gluon colour charge", "nothing_relevant", 0, 1)])
    api(client_for(student), "post", f"/messages/{reply.pk}/feedback", {"rating": "down", "comment": "Confusing"})
    for teacher in (owner, co_teacher):
        seen = _everything_a_teacher_sees(client_for(teacher), prompt)
        assert "gluon colour charge" in seen, "gaps' search words are shown at every level"
        assert "sam-student" not in seen, "the username is never shown to teachers"
        if level == "none":
            assert "My secret question" not in seen and "Confusing" not in seen
            assert "Samira" not in seen
        elif level == "pseudonymous":
            assert "My secret question" in seen and "Confusing" in seen and "Student 1" in seen
            assert "Samira" not in seen and "Quist" not in seen
            assert f'"user_id": {student.pk}' not in seen
        else:
            assert "My secret question" in seen and "Samira Quist" in seen


def test_a_change_of_level_applies_only_to_later_chats(prompt, client_for, owner, student):
    old = ChatSession.objects.create(prompt=prompt, user=student, visibility=ChatVisibility.NONE)
    answer(old, "An old private question", searches=[("dark matter", "nothing_relevant", 0, 0)])
    prompt.chat_visibility = ChatVisibility.PSEUDONYMOUS
    prompt.save()
    assert _everything_a_teacher_sees(client_for(owner), prompt).count("An old private question") == 0
    new = ChatSession.objects.create(prompt=prompt, user=student, visibility=ChatVisibility.PSEUDONYMOUS)
    answer(new, "A new readable question", searches=[("dark matter halo", "nothing_relevant", 0, 0)])
    assert "A new readable question" in _everything_a_teacher_sees(client_for(owner), prompt)


def test_csv_cells_cannot_run_as_spreadsheet_formulas(prompt, student, client_for, owner):
    chat = ChatSession.objects.create(prompt=prompt, user=student)
    answer(chat, '=HYPERLINK("http://evil")', searches=[("=cmd|' /C calc'!A0", "nothing_relevant", 0, 0)])
    text = client_for(owner).get(f"/api/v1/prompts/{prompt.pk}/export.csv?what=gaps").content.decode()
    assert "'=cmd" in text and "'=HYPERLINK" in text
    assert "\n=" not in text and ",=" not in text
