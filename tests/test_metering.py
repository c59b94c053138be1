"""Every model call is metered: a student's searches on the search page and through the API pay for
their curation and stop when the budget is spent, and chats opened together cannot spend the
budget several times over. Attacks by a student on their own weekly budget."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from chat.course.allowances import allowance
from chat.metering import usage
from chat.metering.usage import UsageMeter, current_week
from chat.models import ChatSession, Enrollment, EnrollmentStatus, TokenUsage
from tests.fake_ollama import Reply
from tests.fixtures_chat import connect_ws, receive_turn

VERDICT = json.dumps({"score": 8, "include": True, "reason": "on topic"})


def curating_server(ollama) -> list[int]:
    """Answers every curation call with a verdict of 120 + 9 tokens; returns the list of calls."""
    calls: list[int] = []

    def answer(body: dict) -> Reply:
        assert body.get("format"), "only curation calls are expected here"
        calls.append(129)
        return Reply(content=VERDICT, prompt_tokens=120, completion_tokens=9)

    ollama.responder = answer
    return calls


def api_search(client, collection_id: int, **body):
    url = f"/api/v1/collections/{collection_id}/search"
    return client.post(url, json.dumps(body), content_type="application/json")


@pytest.fixture
def course(prompt, material):
    """The student's prompt over indexed material, curated, with a weekly budget of 1,000 tokens."""
    prompt.curation_enabled = True
    prompt.weekly_token_budget = 1000
    prompt.save()
    return prompt


def test_a_students_search_pays_for_its_curation(client_for, student, course, material, ollama):
    calls = curating_server(ollama)
    response = api_search(client_for(student), material.pk, query="selection bias")
    assert response.status_code == 200 and calls, "the search was curated"
    page = client_for(student).get(f"/collections/{material.pk}/search/?q=sample+size&curate=on")
    assert page.status_code == 200
    standing = allowance(student.pk, course)
    assert standing.used == standing.total_used == sum(calls), "page and API alike, prompt and user budgets"
    assert TokenUsage.objects.get(user=student, prompt=course).tokens == sum(calls), "the statistics too"


def test_a_student_whose_budget_is_spent_is_refused_on_the_page_and_the_api(
    client_for, student, course, material, ollama
):
    UsageMeter(student.pk, course.pk)(1000, 0, "qwen3:8b")  # the week's budget, spent chatting
    calls = curating_server(ollama)
    client = client_for(student)
    refused = api_search(client, material.pk, query="selection bias")
    page = client.get(f"/collections/{material.pk}/search/?q=selection+bias&curate=on")
    when = usage.describe_reset(current_week())
    assert refused.status_code == 429 and refused.json()["code"] == "budget_exhausted"
    assert "You have used this week's allowance" in refused.json()["detail"] and when in refused.json()["detail"]
    assert page.status_code == 429 and when in page.content.decode()
    left = current_week().seconds_left()
    assert int(refused["Retry-After"]) == pytest.approx(left, abs=5) and int(page["Retry-After"]) == pytest.approx(
        left, abs=5
    )
    assert not calls and allowance(student.pk, course).used == 1000, "no model was asked"
    # Without curation no model answers: the search itself still works.
    assert api_search(client, material.pk, query="selection bias", curate=False).status_code == 200


def test_the_user_budget_across_prompts_stops_a_search_too(client_for, student, course, material, ollama, settings):
    settings.USER_WEEKLY_TOKEN_BUDGET = 500
    course.weekly_token_budget = None
    course.save()
    UsageMeter(student.pk, None)(500, 0, "qwen3:8b")
    curating_server(ollama)
    refused = api_search(client_for(student), material.pk, query="selection bias")
    assert refused.status_code == 429 and "across all assistants" in refused.json()["detail"]


def test_a_teacher_pays_for_searching_their_own_collection(client_for, owner, course, material, ollama, settings):
    settings.USER_WEEKLY_TOKEN_BUDGET = 100_000
    calls = curating_server(ollama)
    assert api_search(client_for(owner), material.pk, query="selection bias").status_code == 200
    assert calls and int(allowance(owner.pk, course).total_used) == sum(calls)
    assert allowance(owner.pk, course).used == 0, "charged to no prompt: a teacher's own collection"


def test_the_prompts_curation_switch_holds_for_its_students(client_for, owner, student, course, material, ollama):
    course.curation_enabled = False
    course.save()
    calls = curating_server(ollama)
    response = api_search(client_for(student), material.pk, query="selection bias", curate=True)
    page = client_for(student).get(f"/collections/{material.pk}/search/?q=selection+bias&curate=on")
    assert response.status_code == page.status_code == 200 and not calls
    assert any("Curation is off" in note for note in response.json()["notes"])
    assert "Curation is off" in page.content.decode()
    assert api_search(client_for(owner), material.pk, query="selection bias").status_code == 200
    assert calls, "the collection's owner still curates in their own collection"


def test_a_student_removed_mid_week_cannot_search_at_all(client_for, student, course, material, ollama):
    curating_server(ollama)
    client = client_for(student)
    assert api_search(client, material.pk, query="selection bias").status_code == 200
    Enrollment.objects.filter(student=student).update(status=EnrollmentStatus.REMOVED)
    assert api_search(client, material.pk, query="selection bias").status_code == 404
    assert client.get(f"/collections/{material.pk}/search/?q=bias").status_code == 404


class HeldAnswers:
    """A model server whose answers (600 tokens each) wait until the test lets each go, and which
    tells the test's event loop each time a turn reaches it."""

    def __init__(self, loop: asyncio.AbstractEventLoop, progress: asyncio.Event):
        self.loop, self.progress = loop, progress
        self.arrived = 0
        self.gate = threading.Semaphore(0)
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self._lock:
            self.arrived += 1
        self.loop.call_soon_threadsafe(self.progress.set)
        self.gate.acquire(timeout=60)
        return Reply(content="Bias is a skewed sample.", prompt_tokens=590, completion_tokens=10)


async def until(condition, progress: asyncio.Event) -> None:
    """Wait for `condition()`, re-checked at each sign of progress."""
    while not condition():
        await asyncio.wait_for(progress.wait(), timeout=60)
        progress.clear()


@pytest.mark.django_db(transaction=True)
async def test_five_turns_started_together_overshoot_a_1000_token_budget_by_at_most_one_estimate(
    student, chat_prompt, ollama, settings
):
    settings.USAGE_RESERVE_TOKENS = 700  # one turn's estimate; each turn really costs 600
    chat_prompt.weekly_token_budget = 1000
    await database_sync_to_async(chat_prompt.save)()
    new_chat = database_sync_to_async(ChatSession.objects.create)
    chats = [await new_chat(prompt=chat_prompt, user=student) for _ in range(5)]
    progress = asyncio.Event()
    server = HeldAnswers(asyncio.get_running_loop(), progress)
    ollama.responder = server
    sockets = [(await connect_ws(student, c.id))[0] for c in chats]
    turns = [asyncio.create_task(receive_turn(ws, timeout=60)) for ws in sockets]
    for turn in turns:
        turn.add_done_callback(lambda _t: progress.set())

    def under_way() -> int:  # turns at the model server or refused; none has been answered yet
        return server.arrived + sum(t.done() for t in turns)

    # Five chats in five tabs, asked at once. SQLite's in-memory test database refuses a reader
    # while another thread writes, so there each question goes once the one before is under way
    # (all five still run together); on PostgreSQL (make test-postgres) all five go at the same moment.
    at_once = connection.vendor == "postgresql"
    try:
        for n, ws in enumerate(sockets, start=1):
            await ws.send_json_to({"type": "user_message", "content": "What is selection bias?"})
            if not at_once:
                await until(lambda n=n: under_way() == n, progress)
        await until(lambda: under_way() == 5, progress)
        # The answers then end one after another (SQLite's in-memory test database takes one writer).
        for finished in range(sum(t.done() for t in turns) + 1, 6):
            server.gate.release()
            await until(lambda n=finished: sum(t.done() for t in turns) >= n, progress)
        ends = [(await turn)[-1] for turn in turns]
    finally:
        for _ in range(5):
            server.gate.release()
        for ws in sockets:
            await ws.disconnect()

    answered = [e for e in ends if e["type"] == "message_done"]
    refused = [e for e in ends if e["type"] == "error"]
    used = (await database_sync_to_async(allowance)(student.pk, chat_prompt)).used
    assert answered and refused, "some turns ran, the others were refused"
    assert used == 600 * len(answered), "every answer was counted"
    assert used < 1000 + 700, "overshot by less than one turn's estimate"
    for event in refused:
        assert event["code"] == "budget_exhausted" and "Try again when they have finished" in event["detail"]
    # The week's budget is now spent: the next question is refused with the time it starts again.
    ws, _, _ = await connect_ws(student, chats[0].id)
    await ws.send_json_to({"type": "user_message", "content": "One more?"})
    after = await ws.receive_json_from(timeout=30)
    await ws.disconnect()
    assert after["code"] == "budget_exhausted" and usage.describe_reset(current_week()) in after["detail"]


def test_a_message_refused_after_the_budget_check_gives_its_estimate_back(student, chat_prompt, settings):
    """A second message in a chat still answering is refused (busy): what it set aside goes back,
    so another chat can still start while the first answer holds its estimate."""
    from chat.turn.agent import start_turn
    from chat.turn.limits import ChatBusy

    settings.USAGE_RESERVE_TOKENS = 700
    chat_prompt.weekly_token_budget = 1000
    chat_prompt.save()
    first, second = (ChatSession.objects.create(prompt=chat_prompt, user=student) for _ in range(2))
    running = start_turn(first, "What is bias?")
    with pytest.raises(ChatBusy):
        start_turn(first, "Hello again?")
    other = start_turn(second, "And variance?")  # 0 spent + 700 held < 1,000
    for turn in (running, other):
        turn.meter.settle()
        turn.lock.release()
    assert allowance(student.pk, chat_prompt).used == 0, "nothing was spent: no model was asked"
