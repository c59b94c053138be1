"""Pseudonyms hold whatever the prompt's level becomes: attacks by a prompt's teachers on the
"Student N" their students were promised, through the roster (page, API, exports) and through the
side list and search of a student's chat page."""

from __future__ import annotations

import csv
import io
import json

import pytest

from accounts.models import Role, User
from chat.models import ChatSession, ChatVisibility, Enrollment, Feedback, Message

NAME = "Sanna Suomi"


def api(client, method: str, url: str, data=None):
    kwargs = {"content_type": "application/json"} if data is not None else {}
    return getattr(client, method)(f"/api/v1{url}", json.dumps(data) if data is not None else None, **kwargs)


def chat(prompt, user, level: str, question: str) -> ChatSession:
    """A chat started under `level`, with its first question as its title (as start_turn names it)."""
    session = ChatSession.objects.create(prompt=prompt, user=user, visibility=level, title=question)
    Message.objects.create(session=session, role="user", content=question)
    answer = Message.objects.create(session=session, role="assistant", content="An answer.", status="complete")
    Feedback.objects.create(message=answer, prompt=prompt, rating="down", comment=f"comment on {question}")
    return session


@pytest.fixture
def sanna(student):
    student.first_name, student.last_name = "Sanna", "Suomi"
    student.save()
    return student


def everything_a_teacher_reads_of_the_roster(client, prompt) -> dict[str, str]:
    return {
        "roster API": json.dumps(api(client, "get", f"/prompts/{prompt.pk}/students").json()),
        "prompt page": client.get(f"/prompts/{prompt.pk}/").content.decode(),
        "feedback CSV": api(client, "get", f"/prompts/{prompt.pk}/export.csv?what=feedback").content.decode(),
        "chats JSON Lines": b"".join(api(client, "get", f"/prompts/{prompt.pk}/chats/export.jsonl")).decode(),
    }


def test_switching_a_prompt_to_named_does_not_name_a_student_with_pseudonymous_chats(
    client_for, owner, sanna, other_student, prompt
):
    other_student.first_name, other_student.last_name = "Oona", "Opiskelija"
    other_student.save()
    Enrollment.objects.create(prompt=prompt, student=other_student)  # Student 2, no chat yet
    pseudonymous = chat(prompt, sanna, ChatVisibility.PSEUDONYMOUS, "What is a p-value?")
    teacher = client_for(owner)
    for where, body in everything_a_teacher_reads_of_the_roster(teacher, prompt).items():
        assert NAME not in body and "Oona Opiskelija" not in body, where

    assert api(teacher, "patch", f"/prompts/{prompt.pk}", {"chat_visibility": "named"}).status_code == 200

    labels = {r["id"]: r["label"] for r in api(teacher, "get", f"/prompts/{prompt.pk}/students").json()}
    assert labels == {1: "Student 1", 2: "Oona Opiskelija"}, "named only when no chat of theirs says otherwise"
    for where, body in everything_a_teacher_reads_of_the_roster(teacher, prompt).items():
        assert NAME not in body, where
    # A named chat beside the pseudonymous one: each keeps its own label, and the roster its number.
    named = chat(prompt, sanna, ChatVisibility.NAMED, "And a confidence interval?")
    reads = everything_a_teacher_reads_of_the_roster(teacher, prompt)
    assert json.loads(reads["roster API"])[0]["label"] == "Student 1"
    records = {r["chat_id"]: r for r in map(json.loads, reads["chats JSON Lines"].splitlines())}
    assert (records[pseudonymous.pk]["student"], records[named.pk]["student"]) == ("Student 1", NAME)
    rows = {r["question"]: r["student"] for r in csv.DictReader(io.StringIO(reads["feedback CSV"]))}
    assert rows == {"What is a p-value?": "Student 1", "And a confidence interval?": NAME}
    removed = teacher.post(f"/prompts/{prompt.pk}/students/1/remove/", follow=True).content.decode()
    assert "Student 1 removed" in removed and f"{NAME} removed" not in removed
    teacher.post(f"/prompts/{prompt.pk}/students/1/readmit/")

    # Once the student deleted every chat they wrote as Student 1, nothing links the two: named.
    api(client_for(sanna), "delete", f"/chats/{pseudonymous.pk}")
    assert api(teacher, "get", f"/prompts/{prompt.pk}/students").json()[0]["label"] == NAME


@pytest.fixture
def three_chats(prompt, sanna):
    """Sanna's chats under each level the prompt has had: titles a teacher may or may not read."""
    return {
        "none": chat(prompt, sanna, ChatVisibility.NONE, "My secret worry about the exam"),
        "pseudonymous": chat(prompt, sanna, ChatVisibility.PSEUDONYMOUS, "What is a p-value on the exam?"),
        "named": chat(prompt, sanna, ChatVisibility.NAMED, "And a confidence interval?"),
    }


def side_list(page) -> str:
    body = page.content.decode()
    start = body.index('class="session-list"')
    return body[start : body.index("</ul>", start)]


def titles_in(page, three_chats) -> set[str]:
    listed = side_list(page)
    return {level for level, c in three_chats.items() if c.title in listed}


@pytest.mark.parametrize("who", ["owner", "co_owner", "admin_user"])
def test_a_teacher_reading_a_chat_sees_only_the_chats_of_its_level_beside_it(
    request, client_for, prompt, co_owner, three_chats, who
):
    prompt.co_teachers.add(co_owner)
    teacher = client_for(request.getfixturevalue(who))
    url = f"/prompts/{prompt.pk}/chat/{{}}/"
    reading = teacher.get(url.format(three_chats["pseudonymous"].pk))
    assert reading.status_code == 200 and titles_in(reading, three_chats) == {"pseudonymous"}
    # The search of the side list looks only within it: the words of the "none" chat find nothing.
    searched = teacher.get(url.format(three_chats["pseudonymous"].pk) + "?q=secret")
    assert titles_in(searched, three_chats) == set() and "No chat matches" in side_list(searched)
    assert titles_in(teacher.get(url.format(three_chats["pseudonymous"].pk) + "?q=exam"), three_chats) == {
        "pseudonymous"
    }
    # A named chat lists no chat its student wrote as "Student 1", and the other way round.
    assert titles_in(teacher.get(url.format(three_chats["named"].pk)), three_chats) == {"named"}
    assert teacher.get(url.format(three_chats["none"].pk)).status_code == 404


def test_the_student_sees_all_their_chats_and_a_teacher_who_lost_access_none(
    client_for, prompt, sanna, co_owner, three_chats
):
    url = f"/prompts/{prompt.pk}/chat/{three_chats['pseudonymous'].pk}/"
    assert titles_in(client_for(sanna).get(url), three_chats) == {"none", "pseudonymous", "named"}
    assert titles_in(client_for(sanna).get(url + "?q=secret"), three_chats) == {"none"}
    prompt.co_teachers.add(co_owner)
    teacher = client_for(co_owner)
    assert teacher.get(url).status_code == 200
    prompt.co_teachers.remove(co_owner)  # access taken away: the next page is refused
    assert teacher.get(url).status_code == 404
    outsider = User.objects.create_user("otto-outsider", password="x", role=Role.TEACHER)
    assert client_for(outsider).get(url + "?q=secret").status_code == 404
