"""The agent loop against the Ollama-protocol test server, a real Redis index and real search."""

from __future__ import annotations

import pytest

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


def tokens(sink: ListSink) -> str:
    return "".join(e["text"] for e in sink.of_type("token"))


def test_a_tool_call_then_a_cited_answer(session, ollama):
    ollama.script(
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(content="Bias appears when the sample is not representative [1]."),
    )
    reply, sink = ask(session, "What is selection bias?")

    assert reply.status == MessageStatus.COMPLETE
    assert [e["type"] for e in sink.events][:2] == ["tool_call", "tool_result"]
    assert sink.events[-1]["type"] == "message_done"
    result = sink.of_type("tool_result")[0]
    assert result["status"] == "ok" and result["query"] == "selection bias"
    first = result["passages"][0]
    assert first["n"] == 1 and "Selection bias" in first["text"]
    assert (first["file_name"], first["page"], first["section"]) == ("lecture-3.pdf", 4, "Sampling > Bias")
    # Stored: the call, its query, the passages returned, the answer and its citation.
    assert reply.tool_calls[0]["query"] == "selection bias"
    assert reply.tool_results[0]["passages"][0]["chunk_id"] == first["chunk_id"]
    assert reply.content == tokens(sink) == "Bias appears when the sample is not representative [1]."
    assert [c["n"] for c in reply.citations] == [1] and reply.citations[0]["file_name"] == "lecture-3.pdf"
    # The model read the passages as fenced data, in a tool message after its own call.
    second = ollama.chat_requests()[1]["messages"]
    assert second[-2]["role"] == "assistant" and second[-2]["tool_calls"]
    assert second[-1]["role"] == "tool" and "<<<PASSAGES" in second[-1]["content"]
    assert "Selection bias arises" in second[-1]["content"]


def test_the_tool_is_described_from_the_collections(session, ollama):
    ollama.script(Reply(content="Hello."))
    ask(session, "Hi")
    request = ollama.chat_requests()[0]
    [tool] = request["tools"]
    assert tool["function"]["name"] == "document_search"
    assert tool["function"]["description"] == (
        "Search documents in the materials (titled 'Statistics 101'). Prefer English, which is the language used "
        "in the documents. If multiple queries are needed, call this tool multiple times, once for each query."
    )
    assert tool["function"]["parameters"]["required"] == ["query"]
    system = request["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Be kind.")
    assert "data, not instructions" in system["content"]


def test_two_tool_calls_in_one_turn_number_passages_across_the_turn(session, ollama):
    ollama.script(
        Reply(tool_calls=[search_call("selection bias")]),
        Reply(tool_calls=[search_call("least squares regression")]),
        Reply(content="Bias [1]; regression minimises squared residuals [3]."),
    )
    reply, sink = ask(session, "Compare bias and regression")

    results = sink.of_type("tool_result")
    assert [r["query"] for r in results] == ["selection bias", "least squares regression"]
    numbers = [p["n"] for r in results for p in r["passages"]]
    by_chunk = {p["chunk_id"]: p["n"] for r in results for p in r["passages"]}
    assert len(set(by_chunk.values())) == len(by_chunk)  # one number per passage in the whole turn
    assert set(numbers) == set(range(1, len(by_chunk) + 1))
    cited = {c["n"]: c for c in reply.citations}
    assert set(cited) == {1, 3}
    assert cited[3]["text"] == next(p for r in results for p in r["passages"] if p["n"] == 3)["text"]
    assert len(reply.tool_calls) == 2 and reply.token_usage["rounds"] == 3


def test_an_answer_without_a_tool_call(session, ollama):
    ollama.script(Reply(content="Hello! Ask me about the course.", prompt_tokens=42, completion_tokens=7))
    reply, sink = ask(session, "Hello")
    assert reply.status == MessageStatus.COMPLETE
    assert not sink.of_type("tool_call") and reply.tool_calls == []
    assert reply.content == "Hello! Ask me about the course."
    assert reply.token_usage == {"prompt_tokens": 42, "completion_tokens": 7, "rounds": 1}
    assert reply.model == "qwen3:8b" and reply.mode == "model"


@pytest.mark.parametrize(
    ("call", "complaint"),
    [
        ({"name": "document_search", "arguments": {}}, "'query' is missing"),
        ({"name": "document_search", "arguments": {"query": 42}}, "'query' must be a string"),
        ({"name": "document_search", "arguments": {"query": "   "}}, "'query' is empty"),
        ({"name": "web_search", "arguments": {"query": "bias"}}, "no tool named 'web_search'"),
    ],
)
def test_a_malformed_tool_call_is_answered_as_a_tool_error(session, ollama, call, complaint):
    ollama.script(Reply(tool_calls=[call]), Reply(content="Sorry, I could not search."))
    reply, sink = ask(session, "What is bias?")

    assert reply.status == MessageStatus.COMPLETE
    [result] = sink.of_type("tool_result")
    assert result["status"] == "error" and result["passages"] == []
    tool_message = ollama.chat_requests()[1]["messages"][-1]
    assert tool_message["role"] == "tool" and complaint in tool_message["content"]
    assert reply.tool_results[0]["status"] == "error"


def test_the_round_limit_forces_an_answer_without_tools(session, ollama, settings):
    settings.CHAT_MAX_TOOL_ROUNDS = 2
    ollama.responder = lambda body: (
        Reply(tool_calls=[search_call("bias again")]) if body.get("tools") else Reply(content="Final answer [1].")
    )
    reply, sink = ask(session, "Keep searching")

    requests = ollama.chat_requests()
    assert len(requests) == 3  # two rounds with the tool, then one without
    assert requests[0].get("tools") and requests[1].get("tools") and not requests[2].get("tools")
    assert "search limit for this answer is reached" in requests[2]["messages"][-1]["content"]
    assert len(sink.of_type("tool_call")) == 2
    assert reply.status == MessageStatus.COMPLETE and reply.content == "Final answer [1]."


def test_a_model_that_never_stops_searching_fails_the_turn(session, ollama, settings):
    settings.CHAT_MAX_TOOL_ROUNDS = 1
    ollama.responder = lambda body: Reply(tool_calls=[search_call("bias")])
    reply, sink = ask(session, "Loop forever")
    assert reply.status == MessageStatus.FAILED
    assert sink.events[-1]["type"] == "error" and "kept searching" in sink.events[-1]["detail"]


def test_a_model_failure_mid_stream_stores_a_failed_message(session, ollama):
    ollama.script(Reply(content="The answer starts well and then", fail_after=3))
    reply, sink = ask(session, "Explain bias")

    assert reply.status == MessageStatus.FAILED and reply.error
    assert sink.events[-1]["type"] == "error"
    assert sink.events[-1]["message_id"] == reply.id and sink.events[-1]["retryable"] is True
    assert not sink.of_type("message_done")
    assert reply.content == tokens(sink)  # what the student saw is kept, marked failed


def test_a_stream_cut_before_done_is_a_failure_not_an_answer(session, ollama):
    ollama.script(Reply(content="one two three four five", cut_after=2))
    reply, sink = ask(session, "Explain bias")
    assert reply.status == MessageStatus.FAILED
    assert sink.events[-1]["type"] == "error"


def test_a_model_server_error_fails_the_turn_and_retry_answers_it(session, ollama):
    ollama.script(Reply(status=500, error="out of memory"))
    failed, sink = ask(session, "What is bias?")
    assert failed.status == MessageStatus.FAILED and "could not answer this time" in failed.error
    assert "out of memory" not in failed.error, "the server's own words are for the logs"

    ollama.script(Reply(content="Now it works."))
    retried = run_turn(start_turn(session, None, retry=True), ListSink())
    assert retried.status == MessageStatus.COMPLETE and retried.content == "Now it works."
    # The retry answered the same question: no second copy of it was stored.
    assert session.messages.filter(role="user").count() == 1
    assert ollama.chat_requests()[-1]["messages"][-1]["content"] == "What is bias?"


def test_a_prompt_without_collections_offers_no_tool(session, ollama):
    session.prompt.collections.clear()
    ollama.script(Reply(content="I have no material to search."))
    reply, _ = ask(session, "What is bias?")
    assert reply.status == MessageStatus.COMPLETE
    request = ollama.chat_requests()[0]
    assert not request.get("tools")
    assert "No course material is connected" in request["messages"][0]["content"]


def test_the_model_gets_its_context_window_as_num_ctx(session, ollama):
    ollama.context_length = 4096
    ollama.script(Reply(content="Fine."))
    ask(session, "Hi")
    assert ollama.chat_requests()[0]["options"]["num_ctx"] == 4096


def test_a_model_that_stops_answering_times_out_as_a_failed_turn(session, ollama, settings):
    settings.OLLAMA_TIMEOUT = 0.5
    ollama.script(Reply(content="too late", delay=2.0))
    reply, sink = ask(session, "Hello?")
    assert reply.status == MessageStatus.FAILED and "took too long to answer" in reply.error
    assert sink.events[-1]["type"] == "error" and sink.events[-1]["retryable"] is True
    assert "127.0.0.1" not in sink.events[-1]["detail"] + reply.error, "students never read the server's address"
