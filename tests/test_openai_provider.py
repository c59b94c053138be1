"""The provider tests run against both protocols: Ollama's and the OpenAI-compatible one (vLLM,
llama.cpp, LM Studio, TGI, Azure OpenAI), each through its test server on loopback. Chat streaming,
tool calls, structured output for curation, images for the VLM, embeddings, a whole chat turn,
and how failures reach the student."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest

from chat.course.allowances import allowance
from chat.models import MessageStatus
from chat.turn.agent import run_turn, start_turn
from chat.turn.events import ListSink
from kernel.errors import ProviderError
from rag import curation
from rag.providers import (
    ChatMessage,
    Done,
    TextDelta,
    ToolSpec,
    available_models,
    get_chat_model,
    get_embedding_model,
    is_available,
)
from rag.providers.base import ToolCallEvent, UnknownModel
from rag.providers.registry import split_name
from rag.results import Passage
from tests.fake_ollama import FakeOllama, Reply, hashed_embedding
from tests.fake_openai import FakeOpenAI
from tests.fixtures_chat import search_call

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)
SEARCH = ToolSpec("document_search", "Search documents.", {"type": "object", "properties": {}})


@dataclass
class Served:
    protocol: str
    fake: FakeOllama | FakeOpenAI
    chat: str  # model names as settings and prompts take them
    vlm: str
    embedding: str

    def sent_schema(self, body: dict):
        return body["format"] if self.protocol == "ollama" else body["response_format"]["json_schema"]["schema"]

    def temperature(self, body: dict):
        return (body.get("options") or {}).get("temperature") if self.protocol == "ollama" else body.get("temperature")


@pytest.fixture(params=["ollama", "openai"])
def served(request, ollama, openai_server, settings):
    if request.param == "ollama":
        return Served("ollama", ollama, "qwen3:8b", "qwen3-vl:8b", "ollama:snowflake-arctic-embed2")
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    settings.CURATION_MODEL = "openai:Qwen/Qwen3-8B"
    return Served("openai", openai_server, "openai:Qwen/Qwen3-8B", "openai:Qwen/Qwen3-VL-8B", "openai:BAAI/bge-m3")


def test_text_streams_in_pieces_and_ends_with_the_token_counts(served):
    served.fake.script(Reply(content="Samples can be biased.", prompt_tokens=42))
    events = list(get_chat_model(served.chat).stream([ChatMessage(role="user", content="Why?")]))
    texts = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(texts) == 4 and "".join(texts) == "Samples can be biased."
    assert events[-1] == Done(prompt_tokens=42, completion_tokens=4)


def test_tool_calls_arrive_whole_with_their_arguments(served):
    served.fake.script(Reply(tool_calls=[search_call("selection bias"), search_call("sample size")]))
    events = list(get_chat_model(served.chat).stream([ChatMessage(role="user", content="?")], tools=[SEARCH]))
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == [
        ("document_search", {"query": "selection bias"}),
        ("document_search", {"query": "sample size"}),
    ]
    assert len({c.id for c in calls}) == 2
    assert isinstance(events[-1], Done) and events[-1].tool_calls == tuple(calls)
    assert served.fake.chat_requests()[0]["tools"][0]["function"]["name"] == "document_search"


def test_curation_asks_for_structured_output_and_counts_its_tokens(served):
    served.fake.responder = lambda body: Reply(
        content='{"score": 9, "include": true, "reason": "defines it"}', prompt_tokens=200, completion_tokens=10
    )
    passage = Passage(7, "c1", 1, "notes.md", None, None, "Bias", "Selection bias is ...", 0.5, {})
    counted: list[tuple[int, int]] = []
    run = curation.curate(
        "what is bias", [passage], model_name=served.chat, usage=lambda p, c, model: counted.append((p, c, model))
    )
    assert run.verdicts[0] is not None and run.verdicts[0].score == 9 and run.verdicts[0].include
    [body] = served.fake.chat_requests()
    assert served.sent_schema(body) == curation.SCHEMA
    assert served.temperature(body) == 0
    assert counted == [(200, 10, served.chat)]


def test_the_vlm_gets_the_page_image(served):
    served.fake.script(Reply(content="# Page 1"))
    model = get_chat_model(served.vlm)
    text = model.complete([ChatMessage(role="user", content="Transcribe.", images=(PNG,))])
    assert text == "# Page 1"
    [body] = served.fake.chat_requests()
    sent = body["messages"][-1]
    if served.protocol == "ollama":
        assert base64.b64decode(sent["images"][0]) == PNG
    else:
        assert sent["content"][0] == {"type": "text", "text": "Transcribe."}
        assert sent["content"][1]["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


def test_embeddings_come_back_in_order(served):
    embedder = get_embedding_model(served.embedding)
    vectors = embedder.embed_batch(["selection bias", "sample size", "regression"])
    assert vectors == [pytest.approx(hashed_embedding(t, 64)) for t in ["selection bias", "sample size", "regression"]]
    assert embedder.dimensions == 64


def test_a_chat_turn_searches_cites_and_counts(served, session):
    session.prompt.chat_model = served.chat
    session.prompt.temperature = 0.3
    session.prompt.save()
    served.fake.script(
        Reply(tool_calls=[search_call("selection bias")], prompt_tokens=300, completion_tokens=20),
        Reply(content="Bias means an unrepresentative sample [1].", prompt_tokens=700),
    )
    sink = ListSink()
    reply = run_turn(start_turn(session, "What is selection bias?"), sink)
    reply.refresh_from_db()

    assert reply.status == MessageStatus.COMPLETE, reply.error
    assert reply.content == "Bias means an unrepresentative sample [1]."
    assert reply.citations[0]["file_name"] == "lecture-3.pdf"
    assert sink.of_type("tool_result")[0]["query"] == "selection bias"
    assert allowance(session.user_id, session.prompt).used == 300 + 20 + 700 + 6
    first, second = served.fake.chat_requests()
    assert served.temperature(first) == served.temperature(second) == 0.3
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and "Selection bias arises" in tool_message["content"]
    if served.protocol == "openai":  # the result names the call it answers
        assert tool_message["tool_call_id"] == second["messages"][-2]["tool_calls"][0]["id"]


def test_server_failures_say_whether_to_retry(served):
    model = get_chat_model(served.chat)
    served.fake.script(Reply(status=500, error="out of memory"))
    with pytest.raises(ProviderError) as failed:
        list(model.stream([ChatMessage(role="user", content="?")]))
    assert failed.value.retryable and "out of memory" in str(failed.value)

    served.fake.script(Reply(content="one two three four", cut_after=2))
    got: list = []
    with pytest.raises(ProviderError) as cut:  # never passed off as a complete answer
        got.extend(model.stream([ChatMessage(role="user", content="?")]))
    assert cut.value.retryable and not any(isinstance(e, Done) for e in got)

    missing = get_chat_model(served.chat.replace("8", "404"))
    with pytest.raises(ProviderError) as gone:
        list(missing.stream([ChatMessage(role="user", content="?")]))
    assert not gone.value.retryable and "does not have the model" in str(gone.value)


def test_availability_follows_the_servers_list(served):
    assert is_available(served.chat) and is_available(served.embedding)
    served.fake.models.remove(served.chat.removeprefix("openai:"))
    assert not is_available(served.chat, fresh=True)


def test_a_servers_model_list_is_kept_for_the_health_cache_time(served, settings):
    """One list per server, kept HEALTH_CACHE_SECONDS for both protocols alike (the badge, search
    and the agent ask on every request); a fresh look asks the server again and is kept in turn."""
    settings.HEALTH_CACHE_SECONDS = 60
    assert served.chat in available_models(fresh=True).names()
    served.fake.models.remove(split_name(served.chat)[1])
    assert is_available(served.chat) and served.chat in available_models().names()
    assert not is_available(served.chat, fresh=True)
    assert served.chat not in available_models().names()


def test_an_openai_model_needs_a_configured_server(settings, openai_server):
    settings.OPENAI_BASE_URL = ""
    with pytest.raises(UnknownModel, match="OPENAI_BASE_URL"):
        get_chat_model("openai:Qwen/Qwen3-8B")
    assert not is_available("openai:Qwen/Qwen3-8B")


def test_a_server_without_usage_chunks_still_answers(settings, openai_server):
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    openai_server.send_usage = False
    openai_server.script(Reply(content="Fine."))
    events = list(get_chat_model("openai:Qwen/Qwen3-8B").stream([ChatMessage(role="user", content="?")]))
    assert events[-1] == Done(prompt_tokens=0, completion_tokens=0)


def test_health_and_the_badge_list_both_servers(settings, openai_server, ollama, client_for, owner):
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    client = client_for(owner)
    health = client.get("/api/v1/health").json()
    assert health["model_server"]["ok"] and health["openai_server"]["ok"]
    assert {"qwen3:8b", "openai:Qwen/Qwen3-8B", "openai:BAAI/bge-m3"} <= set(health["available_models"])
    assert f"OpenAI-compatible server at {openai_server.url} lists 3 models" in client.get("/").content.decode()
    settings.OPENAI_BASE_URL = "http://127.0.0.1:1/v1"
    down = client.get("/api/v1/health").json()["openai_server"]
    assert down["ok"] is False and "No OpenAI-compatible server" in down["detail"]


def test_a_prompt_may_use_a_model_of_either_server(settings, openai_server, ollama, owner, client_for):
    openai_server.reset()
    settings.OPENAI_BASE_URL = openai_server.url
    client = client_for(owner)
    made = client.post(
        "/api/v1/prompts", {"name": "vLLM course", "model": "openai:Qwen/Qwen3-8B"}, content_type="application/json"
    )
    assert made.status_code == 201 and made.json()["model"] == "openai:Qwen/Qwen3-8B"
    missing = client.post(
        "/api/v1/prompts", {"name": "Typo", "model": "openai:Qwen/Qwen9"}, content_type="application/json"
    )
    assert missing.status_code == 400 and "openai:Qwen/Qwen3-8B" in missing.json()["detail"]
