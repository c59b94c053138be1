"""The model providers speak real HTTP to an Ollama-protocol server and say clearly when it fails."""

from __future__ import annotations

import base64
import math

import pytest

from kernel.errors import ProviderError
from rag.providers import ChatMessage, Done, TextDelta, ToolSpec, get_chat_model, get_embedding_model, registry
from rag.providers.base import ToolCallEvent
from rag.providers.local import MiniLMEmbedder
from rag.providers.registry import UnknownModel, available_models, is_available, split_name
from tests.fake_ollama import Reply

TOOL = ToolSpec("document_search", "Search.", {"type": "object", "properties": {"query": {"type": "string"}}})


def test_chat_streams_tokens_in_order_and_reports_usage(ollama):
    ollama.script(Reply(chunks=["Photo", "synthesis ", "makes ", "sugar."], prompt_tokens=42))
    events = list(get_chat_model("qwen3:8b").stream([ChatMessage("user", "What is photosynthesis?")]))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Photosynthesis makes sugar."
    assert events[-1] == Done(prompt_tokens=42, completion_tokens=4, tool_calls=())


def test_chat_passes_tools_and_returns_tool_calls(ollama):
    ollama.script(Reply(tool_calls=[{"name": "document_search", "arguments": {"query": "mitosis"}}]))
    events = list(get_chat_model().stream([ChatMessage("user", "Explain mitosis")], tools=[TOOL]))
    calls = [e.call for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.arguments) for c in calls] == [("document_search", {"query": "mitosis"})]
    sent = ollama.chat_requests()[-1]
    assert sent["tools"][0]["function"]["name"] == "document_search"


def test_structured_output_sends_the_json_schema(ollama):
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}
    ollama.script(Reply(content='{"score": 7}'))
    assert get_chat_model().complete([ChatMessage("user", "Rate it")], format=schema) == '{"score": 7}'
    assert ollama.chat_requests()[-1]["format"] == schema


def test_images_reach_the_server_base64_encoded(ollama):
    png = b"\x89PNG\r\n\x1a\nfake-page"
    ollama.script(Reply(content="# Page 1"))
    get_chat_model("qwen3-vl:8b").complete([ChatMessage("user", "Page to Markdown", images=(png,))])
    sent_image = ollama.chat_requests()[-1]["messages"][0]["images"][0]
    assert base64.b64decode(sent_image) == png


def test_context_length_comes_from_the_server(ollama):
    ollama.context_length = 8192
    assert get_chat_model().info().context_length == 8192


def test_missing_model_is_not_worth_retrying(ollama):
    with pytest.raises(ProviderError, match="ollama pull nope:1b") as info:
        list(get_chat_model("nope:1b").stream([ChatMessage("user", "hi")]))
    assert info.value.retryable is False


def test_server_error_is_retryable(ollama):
    ollama.script(Reply(status=500, error="out of memory"))
    with pytest.raises(ProviderError, match="out of memory") as info:
        list(get_chat_model().stream([ChatMessage("user", "hi")]))
    assert info.value.retryable is True


def test_failure_mid_stream_raises_after_the_tokens_already_sent(ollama):
    ollama.script(Reply(chunks=["one ", "two ", "three"], fail_after=2, error="GPU fell over"))
    received = []
    with pytest.raises(ProviderError, match="GPU fell over"):
        for event in get_chat_model().stream([ChatMessage("user", "count")]):
            received.append(event)
    assert [e.text for e in received if isinstance(e, TextDelta)] == ["one ", "two "]


def test_stream_cut_before_done_is_an_error_not_an_answer(ollama):
    ollama.script(Reply(chunks=["half ", "an ", "answer"], cut_after=2))
    with pytest.raises(ProviderError):
        list(get_chat_model().stream([ChatMessage("user", "hi")]))


def test_unreachable_server_says_so(settings):
    settings.OLLAMA_HOST = "http://127.0.0.1:9"
    with pytest.raises(ProviderError, match="cannot be reached"):
        list(get_chat_model().stream([ChatMessage("user", "hi")]))


def test_ollama_embeddings_are_batched_with_query_prefix(ollama):
    model = get_embedding_model("ollama:snowflake-arctic-embed2")
    vectors = model.embed_batch(["first text", "second text"])
    assert len(vectors) == 2 and model.dimensions == ollama.embed_dims
    model.embed_query("what is x")
    assert ollama.requests[-1][1]["input"] == ["query: what is x"]


@pytest.mark.slow
def test_local_minilm_embeds_offline_with_meaning():
    model = get_embedding_model("local:all-MiniLM-L6-v2")
    assert isinstance(model, MiniLMEmbedder)
    cat, kitten, tax = model.embed_batch(["a cat sat on the mat", "a kitten sleeps on a rug", "income tax forms"])
    assert len(cat) == 384

    def cos(a, b):
        return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    assert cos(cat, kitten) > cos(cat, tax) + 0.2


def test_model_names_choose_the_provider():
    assert split_name("qwen3:8b") == ("ollama", "qwen3:8b")
    assert split_name("ollama:qwen3:8b") == ("ollama", "qwen3:8b")
    assert split_name("local:all-MiniLM-L6-v2") == ("local", "all-MiniLM-L6-v2")
    with pytest.raises(UnknownModel):
        get_embedding_model("local:not-a-model")


def test_availability_is_the_servers_model_list(ollama, settings):
    ollama.models = ["qwen3:8b", "embeddinggemma:latest"]
    assert is_available("qwen3:8b") and is_available("ollama:qwen3:8b")
    assert is_available("embeddinggemma")  # no tag means :latest, as in Ollama
    assert not is_available("qwen3:32b")
    assert is_available("local:all-MiniLM-L6-v2")  # ships with the app: no server needed
    assert not is_available("local:not-a-model")
    settings.OLLAMA_HOST = "http://127.0.0.1:9"
    assert not is_available("qwen3:8b")
    assert is_available("local:all-MiniLM-L6-v2")


class EchoModel:
    """A provider written the way any new one is: built from its name, asked which models it has."""

    def __init__(self, model: str, timeout: float | None):
        self.name, self.timeout = model, timeout

    @classmethod
    def from_name(cls, model, *, timeout=None):
        return cls(model, timeout)

    @classmethod
    def list_models(cls):
        return ["echo-1"]

    @classmethod
    def serves(cls, listed, model):
        return model in listed


def test_a_new_provider_is_one_class_and_one_registry_entry(monkeypatch, ollama):
    monkeypatch.setitem(registry.CHAT_PROVIDERS, "echo", f"{__name__}.EchoModel")
    model = get_chat_model("echo:echo-1", timeout=3.0)
    assert isinstance(model, EchoModel) and (model.name, model.timeout) == ("echo-1", 3.0)
    assert is_available("echo:echo-1") and not is_available("echo:echo-2")
    assert "echo:echo-1" in available_models().names()  # offered to teachers beside the servers' models
