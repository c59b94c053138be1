"""Passages carry their text rendered as answers are, in the chat events, the stored reply and the
API; replies stored before that get it when read; the file page renders its passages too."""

from __future__ import annotations

from chat.models import Message
from chat.serializers import message_dict
from chat.turn.agent import run_turn, start_turn
from chat.turn.events import ListSink
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call


def test_search_results_and_citations_carry_sanitised_html(session, ollama, client_for, student):
    ollama.script(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Bias [1]."))
    sink = ListSink()
    reply = run_turn(start_turn(session, "What is selection bias?"), sink)
    reply.refresh_from_db()

    event_passage = sink.of_type("tool_result")[0]["passages"][0]
    assert event_passage["html"] == "<p>Selection bias arises when the sample is not representative.</p>"
    assert reply.tool_results[0]["passages"][0]["html"] == event_passage["html"]
    api = client_for(student).get(f"/api/v1/chats/{session.pk}").json()
    answer = api["messages"][-1]
    assert answer["citations"][0]["html"] == event_passage["html"]
    assert answer["tool_results"][0]["passages"][0]["html"] == event_passage["html"]


def test_a_reply_stored_without_passage_html_is_rendered_when_read(session):
    old = {"n": 1, "text": "**Mean** is $\\bar x$ <img src=x onerror=alert(1)>", "file_name": "a.md", "page": None}
    message = Message.objects.create(
        session=session,
        role="assistant",
        status="complete",
        content="See [1].",
        tool_results=[{"tool_call_id": "c1", "query": "mean", "status": "ok", "error": "", "passages": [old]}],
        citations=[old],
    )
    data = message_dict(message)
    for passage in (data["citations"][0], data["tool_results"][0]["passages"][0]):
        assert "<strong>Mean</strong>" in passage["html"] and "<math" in passage["html"]
        assert "<img" not in passage["html"] and "onerror" not in passage["html"]
    message.refresh_from_db()
    assert "html" not in message.citations[0], "reading a reply does not rewrite what is stored"


def test_wide_blocks_scroll_in_a_box_reachable_by_keyboard_and_only_ours():
    from kernel.rendering import render_markdown

    html = render_markdown(
        "$$x^2$$\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```py\ncode\n```\n\n<div tabindex=0 class=scroll>x</div>"
    )
    assert '<div class="scroll" tabindex="0"><table>' in html
    assert '<div class="scroll" tabindex="0"><pre>' in html
    assert '<span class="scroll" tabindex="0"><math' in html
    assert html.count('tabindex="0"') == 3, "markup from the text itself gets no tabindex"
