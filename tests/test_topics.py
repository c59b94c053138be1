"""Topics of the week's questions: grouped by meaning with the local MiniLM embedder, named by the
test model server on the teacher's budget (or by their words), shown only from 3 students up and
within the privacy level, this week against the week before; and the clustering on its own."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.models import Role, User
from chat.insight import clustering
from chat.metering.usage import count_key, current_week
from chat.models import ChatSession, ChatVisibility, Enrollment, Message, MessageRole, TokenUsage
from kernel.redis_client import get_redis
from tests.fake_ollama import Reply

MINILM = "local:all-MiniLM-L6-v2"
EXAM = ["When is the final exam?", "What date is the exam on?", "When do we have the exam?", "Exam date please?"]
REGRESSION = [
    "How do I interpret the slope of a regression line?",
    "What does the regression coefficient mean?",
    "How do I read the slope in linear regression?",
]
SAMPLING = ["What is sampling bias?", "Why is a biased sample a problem?"]  # 2 students only: hidden


def api(client, url: str):
    return client.get(f"/api/v1{url}")


@pytest.fixture
def week_prompt(prompt, collection, owner):
    collection.embedding_model = MINILM
    collection.save()
    prompt.curation_enabled = False
    prompt.save()
    return prompt


def students(prompt, n: int) -> list[User]:
    made = []
    for i in range(n):
        user = User.objects.create_user(f"student-{i}", password="x", role=Role.STUDENT)
        Enrollment.objects.create(student=user, prompt=prompt)
        made.append(user)
    return made


def asks(prompt, user, text: str, *, visibility=ChatVisibility.PSEUDONYMOUS, when=None) -> Message:
    session = ChatSession.objects.create(prompt=prompt, user=user, visibility=visibility)
    question = Message.objects.create(session=session, role=MessageRole.USER, content=text)
    Message.objects.create(session=session, role=MessageRole.ASSISTANT, content="An answer.")
    if when is not None:
        Message.objects.filter(session=session).update(created=when)
    return question


@pytest.fixture
def week(week_prompt, owner):
    """This week: 4 students ask about the exam, 3 about regression, 2 about sampling; the teacher's
    own preview asks about the exam too."""
    people = students(week_prompt, 4)
    for user, text in zip(people, EXAM, strict=True):
        asks(week_prompt, user, text)
    for user, text in zip(people, REGRESSION, strict=False):
        asks(week_prompt, user, text)
    for user, text in zip(people, SAMPLING, strict=False):
        asks(week_prompt, user, text)
    asks(week_prompt, owner, "When is the exam, teacher preview?")
    return people


def test_clustering_groups_by_threshold_largest_first():
    vectors = [[1, 0, 0], [0.95, 0.1, 0], [0, 1, 0], [0.05, 0.98, 0], [0, 0.1, 1], [0.9, 0.05, 0.05]]
    assert clustering.cluster(vectors, 0.8) == [[0, 1, 5], [2, 3], [4]]
    assert clustering.cluster(vectors, -1.0) == [[0, 1, 2, 3, 4, 5]]
    assert clustering.cluster([], 0.5) == []


def test_characteristic_words_rank_what_sets_a_group_apart():
    groups = [["the exam date", "exam dates", "the exam"], ["the slope", "regression slope"]]
    words = clustering.characteristic_words(groups, lambda t: [(w.rstrip("s"), w) for w in t.split() if w != "the"], 1)
    assert words == [["exam"], ["slope"]]


def test_topics_are_grouped_named_by_the_model_and_charged_to_the_teacher(week, week_prompt, owner, client_for, ollama):
    ollama.script(Reply(content=json.dumps({"names": ["Exam date", "Regression slope"]}), prompt_tokens=120))
    found = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert [(t["name"], t["questions"], t["students"]) for t in found] == [
        ("Exam date", 4, 4),
        ("Regression slope", 3, 3),
    ], "the sampling topic of 2 students is left out; the teacher's preview is not counted"
    assert set(found[0]["examples"]) <= set(EXAM) and len(found[0]["examples"]) == 3
    [request] = ollama.chat_requests()
    sent = request["messages"][1]["content"]
    assert "When is the final exam?" in sent and "sampling" not in sent.lower(), "hidden topics are not sent"
    week_key = count_key(current_week(), owner.pk, week_prompt.pk)
    assert int(get_redis().get(week_key)) >= 120, "the teacher's budget in the prompt paid for the names"
    assert TokenUsage.objects.get(user=owner, prompt=week_prompt).calls == 1
    again = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert again == found and len(ollama.chat_requests()) == 1, "a week's topics are kept, not named again"


def test_without_a_model_topics_are_named_by_their_words(week, week_prompt, owner, client_for, ollama):
    ollama.models = []
    found = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert "exam" in found[0]["name"] and "regression" in found[1]["name"]
    assert ollama.chat_requests() == []


def test_a_spent_teacher_budget_names_topics_by_their_words(week, week_prompt, owner, client_for, ollama):
    week_prompt.weekly_token_budget = 10
    week_prompt.save()
    get_redis().set(count_key(current_week(), owner.pk, week_prompt.pk), 10)
    found = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert "exam" in found[0]["name"] and ollama.chat_requests() == []


def test_under_none_a_topic_shows_counts_only(week, week_prompt, owner, client_for, ollama):
    week_prompt.chat_visibility = ChatVisibility.NONE
    week_prompt.save()
    found = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert [(t["name"], t["questions"], t["examples"]) for t in found] == [("Topic 1", 4, []), ("Topic 2", 3, [])]
    assert ollama.chat_requests() == [], "no student text is sent to be named"
    page = client_for(owner).get(f"/prompts/{week_prompt.pk}/insight/").content.decode()
    assert "Topic 1" in page and "When is the final exam?" not in page


def test_examples_come_only_from_chats_teachers_may_read(week_prompt, owner, client_for, ollama):
    ollama.models = []
    people = students(week_prompt, 3)
    asks(week_prompt, people[0], EXAM[0], visibility=ChatVisibility.NONE)
    asks(week_prompt, people[1], EXAM[1], visibility=ChatVisibility.NAMED)
    asks(week_prompt, people[2], EXAM[2])
    [topic] = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert topic["questions"] == 3 and sorted(topic["examples"]) == sorted(EXAM[1:3])
    assert not any(p.username in json.dumps(topic) for p in people), "never a student's name"


def test_the_page_shows_this_week_against_the_week_before(week_prompt, owner, client_for, ollama):
    ollama.models = []
    people = students(week_prompt, 3)
    last_week = timezone.now() - timedelta(days=7)
    for user, text in zip(people, EXAM, strict=False):
        asks(week_prompt, user, text)
        asks(week_prompt, user, text, when=last_week)
    asks(week_prompt, people[0], EXAM[3], when=last_week)
    page = client_for(owner).get(f"/prompts/{week_prompt.pk}/insight/").content.decode()
    assert "3 questions this week, 4 the week before" in page
    assert "week before: 4" in page and 'data-testid="topic-to-answer"' in page


def test_a_malformed_week_is_refused_with_a_sentence(week_prompt, owner, client_for):
    response = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics?week=last")
    assert response.status_code == 400 and "2026-W09" in response.json()["detail"]


def test_a_deleted_chat_takes_its_question_out_of_the_kept_topics(week_prompt, owner, client_for, ollama, settings):
    ollama.models = []
    settings.TOPICS_REFRESH_SECONDS = 3600  # the kept digest is not built again meanwhile
    people = students(week_prompt, 3)
    asked = [asks(week_prompt, user, text) for user, text in zip(people, EXAM, strict=False)]
    [topic] = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert EXAM[0] in topic["examples"]
    asked[0].session.delete()  # by its student, or by retention
    [topic] = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert EXAM[0] not in topic["examples"] and topic["questions"] == 3, "counts stay until the next build"


def test_a_failing_embedder_leaves_the_page_working_and_the_api_says_why(prompt, owner, client_for, ollama, collection):
    from tests.fixtures_chat import TEST_EMBEDDER

    collection.embedding_model = TEST_EMBEDDER
    collection.save()
    for user in students(prompt, 3):
        asks(prompt, user, EXAM[0])  # the same words: the test server's embedder gives the same vector
    ollama.fail_embed = True
    response = api(client_for(owner), f"/prompts/{prompt.pk}/topics")
    assert response.status_code == 503 and "cannot be grouped right now" in response.json()["detail"]
    page = client_for(owner).get(f"/prompts/{prompt.pk}/insight/")
    assert page.status_code == 200 and "cannot be grouped right now" in page.content.decode()
    ollama.fail_embed = False
    ollama.models = ["snowflake-arctic-embed2:latest"]  # no chat model: named by their words
    [topic] = api(client_for(owner), f"/prompts/{prompt.pk}/topics").json()
    assert topic["questions"] == 3, "built as soon as the embedder answers again"


def test_a_topic_counts_nothing_found_and_ratings_and_links_its_gaps(week_prompt, owner, client_for, ollama):
    from chat.insight import feedback
    from chat.insight.stats import record_answer
    from chat.models import MaterialGap

    ollama.models = []
    for n, user in enumerate(students(week_prompt, 3)):
        question = asks(week_prompt, user, EXAM[n])
        reply = Message.objects.filter(session=question.session, role=MessageRole.ASSISTANT).get()
        reply.tool_results = [{"tool_call_id": "0", "query": "exam date", "status": "nothing_relevant", "passages": []}]
        reply.save()
        record_answer(reply)
        feedback.give_feedback(reply, "down" if n else "up")
    [topic] = api(client_for(owner), f"/prompts/{week_prompt.pk}/topics").json()
    assert (topic["nothing_found"], topic["ratings"]) == (3, {"up": 1, "down": 2})
    gap = MaterialGap.objects.get(prompt=week_prompt)
    page = client_for(owner).get(f"/prompts/{week_prompt.pk}/insight/").content.decode()
    assert f'href="#gap-{gap.pk}"' in page and f'id="gap-{gap.pk}"' in page
