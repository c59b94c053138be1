"""Weekly token budgets: counting every model call made for a student, refusing past the budget,
the week's boundary, and what teachers see and do about it."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest

from chat.course import allowances
from chat.course.allowances import allowance
from chat.metering import usage
from chat.metering.usage import BudgetExhausted, UsageMeter, current_week
from chat.models import ChatSession, Enrollment, Message, Prompt, TokenUsage
from chat.turn.agent import run_turn, start_turn
from chat.turn.events import ListSink
from rag.providers import ChatMessage, Done, get_chat_model
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call

VERDICT = json.dumps({"score": 8, "include": True, "reason": "on topic"})


def ask(session, text: str = "What is selection bias?") -> Message:
    reply = run_turn(start_turn(session, text), ListSink())
    reply.refresh_from_db()
    return reply


def post_json(client, url: str, data: dict):
    return client.post(url, json.dumps(data), content_type="application/json")


def spend(user, prompt, tokens: int) -> None:
    """Tokens reported for the user this week, as a finished model call would count them."""
    UsageMeter(user.pk, prompt.pk)(tokens, 0, "qwen3:8b")


class CountingServer:
    """Answers chat rounds from a queue and every curation call with a verdict, and records
    the token counts it reported, as a model server's bill would."""

    def __init__(self, *chat_replies: Reply):
        self.chat_replies = list(chat_replies)
        self.reported: list[int] = []
        self.curation_calls = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict) -> Reply:
        with self._lock:
            if body.get("format"):
                self.curation_calls += 1
                reply = Reply(content=VERDICT, prompt_tokens=120, completion_tokens=9)
            else:
                reply = self.chat_replies.pop(0)
            self.reported.append(reply.prompt_tokens + (reply.completion_tokens or len(reply.pieces())))
            return reply


def test_chat_rounds_tool_rounds_and_curation_are_all_counted(session, ollama):
    session.prompt.curation_enabled = True
    session.prompt.save()
    server = CountingServer(
        Reply(tool_calls=[search_call("selection bias")], prompt_tokens=300, completion_tokens=12),
        Reply(content="Bias is a skewed sample [1].", prompt_tokens=900, completion_tokens=40),
    )
    ollama.responder = server

    reply = ask(session)

    assert server.curation_calls >= 1, "the search was curated"
    billed = sum(server.reported)
    assert billed == 300 + 12 + 900 + 40 + server.curation_calls * 129
    standing = allowance(session.user_id, session.prompt)
    assert standing.used == standing.total_used == billed
    # The chat's own rounds are on the message; the database mirror has everything.
    assert reply.token_usage["prompt_tokens"] + reply.token_usage["completion_tokens"] == 1252
    row = TokenUsage.objects.get(user=session.user, prompt=session.prompt)
    assert row.tokens == billed and row.calls == 2 + server.curation_calls
    assert row.week_start == current_week().start


def test_a_cached_curation_verdict_costs_nothing(session, ollama):
    session.prompt.curation_enabled = True
    session.prompt.save()
    first = CountingServer(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Skewed [1]."))
    ollama.responder = first
    ask(session)
    second = CountingServer(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Skewed [1]."))
    ollama.responder = second
    ask(session, "And again?")
    assert second.curation_calls == 0
    assert allowance(session.user_id, session.prompt).used == sum(first.reported) + sum(second.reported)


def test_a_student_past_the_budget_is_refused_until_the_reset(session, ollama, client_for, student):
    session.prompt.weekly_token_budget = 1000
    session.prompt.save()
    ollama.script(Reply(content="Fine.", prompt_tokens=990, completion_tokens=10))
    ask(session, "first")
    stored = Message.objects.filter(session=session).count()

    with pytest.raises(BudgetExhausted) as refused:
        start_turn(session, "second")
    assert Message.objects.filter(session=session).count() == stored, "a refused message is not stored"
    week = current_week()
    assert refused.value.status_code == 429
    assert usage.describe_reset(week) in str(refused.value)
    assert "You have used this week's allowance in this assistant." in str(refused.value)
    assert "token" not in str(refused.value), "students read plain words"
    assert abs(refused.value.retry_after - (week.end - datetime.now(UTC)).total_seconds()) < 5

    response = post_json(client_for(student), f"/api/v1/chats/{session.id}/messages", {"content": "third"})
    assert response.status_code == 429
    assert response.json()["code"] == "budget_exhausted"
    assert int(response["Retry-After"]) == pytest.approx(refused.value.retry_after, abs=5)


def test_the_warning_starts_at_ninety_percent(prompt, student):
    prompt.weekly_token_budget = 1000
    prompt.save()
    spend(student, prompt, 899)
    assert not allowance(student.pk, prompt).warning
    spend(student, prompt, 1)
    assert allowance(student.pk, prompt).warning and not allowance(student.pk, prompt).exhausted


def test_the_user_budget_spans_prompts(prompt, owner, student, settings, client_for):
    settings.USER_WEEKLY_TOKEN_BUDGET = 500
    other = Prompt.objects.create(owner=owner, name="Another course")
    Enrollment.objects.create(student=student, prompt=other)
    spend(student, prompt, 500)
    with pytest.raises(BudgetExhausted, match="across all assistants"):
        start_turn(ChatSession.objects.create(prompt=other, user=student), "hello")
    mine = client_for(student).get("/api/v1/me/usage").json()
    assert mine["total"] == {"used": 500, "budget": 500}
    by_prompt = {row["prompt_id"]: row for row in mine["prompts"]}
    assert by_prompt[prompt.pk]["used"] == 500 and by_prompt[other.pk]["used"] == 0
    assert by_prompt[other.pk]["warning"], "the total is used up: the chat warns there too"


def test_the_week_resets_at_the_configured_hour_in_the_time_zone(settings, prompt, student):
    settings.TIME_ZONE = "Pacific/Auckland"  # UTC+13 in March (daylight saving)
    settings.USAGE_WEEK_RESET_WEEKDAY = 0  # Monday
    settings.USAGE_WEEK_RESET_HOUR = 6
    before = datetime(2026, 3, 1, 16, 59, tzinfo=UTC)  # Monday 2 March, 05:59 in Auckland
    after = datetime(2026, 3, 1, 17, 0, tzinfo=UTC)  # 06:00 there
    old, new = current_week(before), current_week(after)
    assert old.start.isoformat() == "2026-02-23T06:00:00+13:00"
    assert old.end == new.start and new.start.isoformat() == "2026-03-02T06:00:00+13:00"
    assert usage.describe_reset(old) == "Mar 2, 2026, 6:00 AM (Pacific/Auckland)"
    UsageMeter(student.pk, prompt.pk, week=old)(700, 0, "qwen3:8b")
    assert allowance(student.pk, prompt, week=old).used == 700
    assert allowance(student.pk, prompt, week=new).used == 0, "a new week starts from nothing"


def test_a_week_across_a_daylight_saving_change_keeps_the_wall_clock_hour(settings):
    settings.TIME_ZONE = "Europe/Helsinki"
    settings.USAGE_WEEK_RESET_WEEKDAY = 6  # Sunday; clocks go forward on Sunday 29 March 2026
    settings.USAGE_WEEK_RESET_HOUR = 12
    week = current_week(datetime(2026, 3, 25, tzinfo=UTC))
    assert (week.start.isoformat(), week.end.isoformat()) == ("2026-03-22T12:00:00+02:00", "2026-03-29T12:00:00+03:00")
    assert (week.end.astimezone(UTC) - week.start.astimezone(UTC)).total_seconds() == 7 * 86400 - 3600


def test_teachers_reset_and_raise_one_students_budget(prompt, student, co_owner, client_for):
    prompt.weekly_token_budget = 1000
    prompt.save()
    prompt.co_teachers.add(co_owner)
    spend(student, prompt, 1200)
    number = Enrollment.objects.get(prompt=prompt, student=student).number
    url = f"/api/v1/prompts/{prompt.pk}/students/{number}/budget"
    [row] = client_for(co_owner).get(f"/api/v1/prompts/{prompt.pk}/students").json()
    assert (row["tokens_this_week"], row["budget"]) == (1200, 1000)

    reset = post_json(client_for(co_owner), url, {"reset": True})
    assert reset.status_code == 200 and reset.json()["tokens_this_week"] == 0
    standing = allowance(student.pk, prompt)
    assert standing.used == standing.total_used == 0 and standing.exhausted is None

    raised = post_json(client_for(co_owner), url, {"weekly_token_budget": 5000})
    assert raised.json()["budget"] == 5000 and allowance(student.pk, prompt).budget == 5000
    back = post_json(client_for(co_owner), url, {"weekly_token_budget": None})
    assert back.json()["budget"] == 1000
    assert post_json(client_for(co_owner), url, {}).status_code == 400
    assert post_json(client_for(co_owner), url, {"weekly_token_budget": -1}).status_code == 422


@pytest.mark.parametrize(("who", "status"), [("student", 404), ("other_teacher", 404), ("other_student", 404)])
def test_only_the_prompts_teachers_change_a_budget(request, prompt, student, client_for, who, status):
    spend(student, prompt, 300)
    number = Enrollment.objects.get(prompt=prompt, student=student).number
    url = f"/api/v1/prompts/{prompt.pk}/students/{number}/budget"
    response = post_json(client_for(request.getfixturevalue(who)), url, {"reset": True})
    assert response.status_code in {status, 403}
    assert allowance(student.pk, prompt).used == 300


def test_a_removed_co_teacher_can_no_longer_reset(prompt, student, co_owner, client_for):
    prompt.co_teachers.add(co_owner)
    spend(student, prompt, 300)
    number = Enrollment.objects.get(prompt=prompt, student=student).number
    url = f"/api/v1/prompts/{prompt.pk}/students/{number}/budget"
    client = client_for(co_owner)
    assert post_json(client, url, {"weekly_token_budget": 10}).status_code == 200
    prompt.co_teachers.remove(co_owner)
    assert post_json(client, url, {"reset": True}).status_code in {403, 404}
    assert allowance(student.pk, prompt).used == 300


def test_teachers_exempt_themselves_and_students_cannot(prompt, owner, student, client_for):
    prompt.weekly_token_budget = 100
    prompt.save()
    spend(owner, prompt, 150)
    own_chat = ChatSession.objects.create(prompt=prompt, user=owner)
    with pytest.raises(BudgetExhausted):
        start_turn(own_chat, "testing my prompt")
    response = post_json(client_for(owner), f"/api/v1/prompts/{prompt.pk}/budget/exempt", {"exempt": True})
    assert response.status_code == 200 and response.json()["exempt"] is True
    start_turn(own_chat, "testing my prompt").lock.release()  # no longer refused

    refused = post_json(client_for(student), f"/api/v1/prompts/{prompt.pk}/budget/exempt", {"exempt": True})
    assert refused.status_code in {403, 404}
    spend(student, prompt, 150)
    with pytest.raises(BudgetExhausted):
        start_turn(ChatSession.objects.create(prompt=prompt, user=student), "me too")


def test_an_exemption_ends_with_teaching(prompt, co_owner):
    prompt.weekly_token_budget = 100
    prompt.save()
    prompt.co_teachers.add(co_owner)
    allowances.set_exempt(co_owner.pk, prompt, True)
    assert allowance(co_owner.pk, prompt).exempt
    prompt.co_teachers.remove(co_owner)
    assert not allowance(co_owner.pk, prompt).exempt


def test_a_new_prompt_gets_the_deployments_default_budget(owner, client_for, settings):
    settings.CHAT_WEEKLY_TOKEN_BUDGET = 50000
    made = post_json(client_for(owner), "/api/v1/prompts", {"name": "Physics"}).json()
    assert made["weekly_token_budget"] == 50000
    unlimited = post_json(client_for(owner), "/api/v1/prompts", {"name": "Chemistry", "weekly_token_budget": None})
    assert unlimited.json()["weekly_token_budget"] is None


def test_fifty_turns_at_once_overshoot_the_budget_by_at_most_one_estimate(prompt, student, ollama, settings):
    """One student starts 50 pieces of work at the same moment (a barrier), each a model call of
    16 tokens: what start_turn and the agent loop do with the budget (`reserve`, the call counted as
    it ends, `settle`), without the database writes that SQLite's shared in-memory test database
    cannot take from 50 threads (five real turns: tests/test_metering.py). Work is let in only while
    the count plus what running work holds is under the budget, and every count arrives."""
    per_turn = 11 + 5
    settings.USAGE_RESERVE_TOKENS = 20  # the estimate: a little above a turn's real cost
    prompt.weekly_token_budget = 5 * per_turn
    prompt.save()
    ollama.responder = lambda body: Reply(content="one two three four five", prompt_tokens=11)
    answered, refused = [], []
    lock, barrier = threading.Lock(), threading.Barrier(50)

    def one() -> None:
        barrier.wait(30)
        try:
            meter = usage.reserve(student.pk, prompt)
        except BudgetExhausted as exc:
            with lock:
                refused.append(exc)
            return
        for event in get_chat_model("qwen3:8b").stream([ChatMessage(role="user", content="go")]):
            if isinstance(event, Done):
                meter(event.prompt_tokens, event.completion_tokens, "qwen3:8b")
        meter.settle()
        with lock:
            answered.append(meter.tokens)

    threads = [threading.Thread(target=one) for _ in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    used = allowance(student.pk, prompt).used
    assert len(answered) + len(refused) == 50 and answered and refused
    assert used == per_turn * len(answered), "every count arrived"
    assert used < prompt.weekly_token_budget + settings.USAGE_RESERVE_TOKENS, "overshot by less than one estimate"
    assert all(exc.status_code == 429 for exc in refused)


def test_the_chat_shows_the_week_and_warns_near_the_end(client_for, student, session, owner):
    session.prompt.weekly_token_budget = 50000
    session.prompt.save()
    spend(student, session.prompt, 12300)
    page = client_for(student).get(f"/prompts/{session.prompt_id}/chat/{session.id}/").content.decode()
    assert "You have used 24% of this week&#x27;s allowance." in page and "usage-line muted warn" not in page
    assert '<progress id="usage-bar" max="100" value="24"' in page
    spend(student, session.prompt, 33000)
    page = client_for(student).get(f"/prompts/{session.prompt_id}/chat/{session.id}/").content.decode()
    assert "You have used 90% of this week&#x27;s allowance. It starts again on" in page
    assert "usage-line muted warn" in page and "tokens" not in page.split('id="usage-line"')[1].split("</p>")[0]
    row = client_for(student).get(f"/api/v1/me/usage?prompt_id={session.prompt_id}").json()["prompts"][0]
    assert row["warning"] and not row["exhausted"] and row["share"] == pytest.approx(0.906)
    assert row["text"].startswith("You have used 90% of this week's allowance.")
    # A teacher reading the student's chat sees no usage line of their own there.
    assert (
        "usage-line" not in client_for(owner).get(f"/prompts/{session.prompt_id}/chat/{session.id}/").content.decode()
    )


def test_a_student_past_the_budget_reads_when_they_can_send_again(client_for, student, session):
    session.prompt.weekly_token_budget = 1000
    session.prompt.save()
    spend(student, session.prompt, 1000)
    response = client_for(student).get(f"/prompts/{session.prompt_id}/chat/{session.id}/")
    config = response.context["chat_config"]["usage"]
    assert config["exhausted"] and config["percent"] == 100
    assert config["resets_at"] == current_week().end.isoformat(), "the page writes it in the reader's time zone"
    assert "You have used this week&#x27;s allowance. It starts again on" in response.content.decode()


def test_statistics_count_the_tokens_the_budget_counts(session, ollama, client_for, owner, student):
    """A curated search costs model calls besides the chat's rounds: the statistics used to count
    only the rounds stored on the answer (180 against the budget's 1,350 for one student)."""
    session.prompt.curation_enabled = True
    session.prompt.save()
    ollama.responder = CountingServer(
        Reply(tool_calls=[search_call("selection bias")], prompt_tokens=300, completion_tokens=12),
        Reply(content="Bias is a skewed sample [1].", prompt_tokens=900, completion_tokens=40),
    )
    ask(session)
    billed = sum(ollama.responder.reported)
    stats = client_for(owner).get(f"/api/v1/prompts/{session.prompt_id}/stats?days=7").json()
    [row] = client_for(owner).get(f"/api/v1/prompts/{session.prompt_id}/students").json()
    assert stats["tokens"] == row["tokens_this_week"] == billed > 1252
    assert sum(day["tokens"] for day in stats["by_day"]) == billed
    # A teacher's reset starts the budget again; the statistics keep what was used.
    number = Enrollment.objects.get(prompt=session.prompt, student=student).number
    post_json(client_for(owner), f"/api/v1/prompts/{session.prompt_id}/students/{number}/budget", {"reset": True})
    assert client_for(owner).get(f"/api/v1/prompts/{session.prompt_id}/stats?days=7").json()["tokens"] == billed


def test_a_teachers_own_tries_are_not_in_the_statistics(prompt, owner, client_for):
    spend(owner, prompt, 500)
    assert client_for(owner).get(f"/api/v1/prompts/{prompt.pk}/stats?days=7").json()["tokens"] == 0
