"""Model servers over https whose certificate a university's own authority signed: trusted once the
administrator names that authority (MODEL_SERVER_CA_FILE), on every path to the server — the streamed
answer read by the process's reader, and the model list read by each protocol's client library; until
then, every path says what to set instead of calling the server unreachable."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from kernel.errors import ProviderError
from rag.providers import ChatMessage, Done, get_chat_model
from rag.providers.ollama import OllamaChatModel
from rag.providers.openai import OpenAIChatModel
from tests.fake_ollama import FakeOllama, Reply
from tests.fake_openai import FakeOpenAI
from tests.tls_certs import campus_ca

ASK = [ChatMessage(role="user", content="What is a tangent?")]


@pytest.fixture(scope="module")
def ca(tmp_path_factory):
    return campus_ca(tmp_path_factory.mktemp("campus-ca"))


@pytest.fixture(params=["ollama", "openai"])
def server(request, ca, settings):
    """A model server of each protocol over https, its certificate signed by the campus CA."""
    if request.param == "ollama":
        fake = FakeOllama(tls=ca.server).start()
        settings.OLLAMA_HOST = fake.url
        model, listed, models = "qwen3:8b", "qwen3:8b", OllamaChatModel
    else:
        fake = FakeOpenAI(tls=ca.server).start()
        settings.OPENAI_BASE_URL = fake.url
        model, listed, models = "openai:Qwen/Qwen3-8B", "Qwen/Qwen3-8B", OpenAIChatModel
    assert fake.url.startswith("https://127.0.0.1:")
    yield fake, model, listed, models
    fake.stop()


def test_with_the_campus_ca_set_the_answer_streams_and_the_models_are_listed(server, ca, settings):
    fake, model, listed, models = server
    settings.MODEL_SERVER_CA_FILE = str(ca.ca_file)
    fake.script(Reply(chunks=["A tangent ", "touches ", "a curve."]))
    got: list[str] = []
    events = list(get_chat_model(model).stream(ASK, on_text=got.append))
    assert "".join(got) == "A tangent touches a curve." and isinstance(events[-1], Done)
    assert listed in models.list_models()


def test_without_it_every_path_names_the_setting_to_set(server, settings):
    fake, model, _listed, models = server
    settings.MODEL_SERVER_CA_FILE = ""
    fake.script(Reply(content="never read"))
    with pytest.raises(ProviderError) as streamed:
        list(get_chat_model(model).stream(ASK))
    with pytest.raises(ProviderError) as in_list:
        models.list_models()
    for failure in (streamed.value, in_list.value):
        assert "MODEL_SERVER_CA_FILE" in str(failure) and "is not trusted" in str(failure)
        assert failure.reason == "unreachable"  # the student's words: the assistant is not reachable
    assert not [path for path, _body in fake.requests if "chat" in path], "no request got through"


@pytest.mark.django_db
def test_check_services_tells_the_operator_why_and_what_to_set(server, ca, settings):
    fake, _model, _listed, _models = server
    settings.MODEL_SERVER_CA_FILE = ""
    out = io.StringIO()
    call_command("check_services", stdout=out)
    assert f"at {fake.url}" in out.getvalue() and "is not trusted" in out.getvalue()
    assert "MODEL_SERVER_CA_FILE" in out.getvalue()
    settings.MODEL_SERVER_CA_FILE = str(ca.ca_file)
    out = io.StringIO()
    call_command("check_services", stdout=out)
    assert "is not trusted" not in out.getvalue() and f"{fake.url} lists 3 models" in out.getvalue()
