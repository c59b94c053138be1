"""The limits of one chat turn: how many searches it may run, and how many passages fit the model's context."""

from __future__ import annotations

from chat.models import Message, MessageStatus
from chat.turn.agent import run_turn, start_turn
from chat.turn.events import ListSink
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call


def ask(session, text: str) -> tuple[Message, ListSink]:
    sink = ListSink()
    reply = run_turn(start_turn(session, text), sink)
    reply.refresh_from_db()
    return reply, sink


def embedded_queries(ollama, query: str) -> int:
    """How many times the query was embedded: once for every search that actually ran."""
    return sum(1 for path, body in ollama.requests if path == "/api/embed" and query in str(body.get("input")))


def test_searches_past_the_cap_are_refused_and_not_run(session, ollama, settings):
    settings.CHAT_MAX_SEARCHES = 2
    settings.CHAT_MAX_TOOL_ROUNDS = 10  # the search cap, not the round limit, is what stops the model here
    ollama.script(
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(content="Bias arises from unrepresentative samples [1]."),
    )
    reply, sink = ask(session, "What is selection bias?")

    assert reply.status == MessageStatus.COMPLETE
    assert [r["status"] for r in sink.of_type("tool_result")] == ["ok", "ok", "error", "error"]
    assert embedded_queries(ollama, "selection bias") == 2
    requests = ollama.chat_requests()
    assert len(requests) == 5
    for request in requests[3:]:  # the model read the refusal after its third and fourth call
        tool_message = request["messages"][-1]
        assert tool_message["role"] == "tool"
        assert "search limit for this answer is reached" in tool_message["content"]
        assert "<<<PASSAGES" not in tool_message["content"]
    assert [r["passages"] for r in reply.tool_results[2:]] == [[], []]


def test_several_calls_in_one_round_share_the_cap(session, ollama, settings):
    settings.CHAT_MAX_SEARCHES = 1
    ollama.script(
        Reply(tool_calls=[search_call("selection bias"), search_call("least squares regression")]),
        Reply(content="Bias [1]."),
    )
    reply, sink = ask(session, "Bias and regression?")

    assert [r["status"] for r in sink.of_type("tool_result")] == ["ok", "error"]
    assert embedded_queries(ollama, "least squares regression") == 0
    last = ollama.chat_requests()[1]["messages"]
    assert "Least squares" not in last[-1]["content"]
    assert "search limit for this answer is reached" in last[-1]["content"]
    assert reply.status == MessageStatus.COMPLETE


def test_passages_beyond_the_context_budget_are_left_out_with_a_note(session, ollama, settings):
    # Each material passage costs about 45 tokens (60 characters at 3 a token, plus numbering):
    # a 50-token budget for results holds exactly one.
    settings.CHAT_RESULTS_RESERVE_TOKENS = 50
    ollama.script(
        Reply(tool_calls=[search_call("sample")]),
        Reply(tool_calls=[search_call("regression")]),
        Reply(content="A representative sample avoids bias [1]."),
    )
    reply, sink = ask(session, "How big should a sample be?")

    first, second = sink.of_type("tool_result")
    assert first["status"] == "ok" and [p["n"] for p in first["passages"]] == [1]
    [note] = reply.tool_results[0]["notes"]
    assert "left out: no room in the model's context" in note
    requests = ollama.chat_requests()
    read = requests[1]["messages"][-1]["content"]
    assert first["passages"][0]["text"] in read
    assert "[2]" not in read  # nothing beyond the budget reached the model
    # The budget is spent for the whole turn: the next search finds passages but has no room for them.
    assert second["status"] == "error" and second["passages"] == []
    assert "no room is left for more passages" in requests[2]["messages"][-1]["content"]
    assert reply.status == MessageStatus.COMPLETE and [c["n"] for c in reply.citations] == [1]
