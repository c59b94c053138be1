"""`/metrics`: off without METRICS_TOKEN, refused without the token, and the named series there."""

from __future__ import annotations

import re

from chat.turn.agent import run_turn, start_turn
from chat.turn.events import ListSink
from tests.fake_ollama import Reply
from tests.fixtures_chat import search_call

TOKEN = "s3cret-metrics-token"


def scrape(client, token: str | None = TOKEN):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    return client.get("/metrics", **headers)


def value(text: str, series: str) -> float:
    """The sample of a series given with its labels (as Prometheus prints them), 0 when absent."""
    match = re.search(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def test_metrics_are_off_without_a_configured_token(client, settings, db):
    settings.METRICS_TOKEN = ""
    assert scrape(client).status_code == 404


def test_metrics_need_the_token(client, settings, db):
    settings.METRICS_TOKEN = TOKEN
    assert scrape(client, None).status_code == 401
    assert scrape(client, "wrong").status_code == 401
    assert scrape(client, TOKEN + "x").status_code == 401
    response = scrape(client)
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")


def test_the_named_series_are_exposed_with_low_cardinality_labels(client_for, student, session, ollama, settings):
    settings.METRICS_TOKEN = TOKEN
    client = client_for(student)
    before = scrape(client).content.decode()
    ollama.script(Reply(tool_calls=[search_call("selection bias")]), Reply(content="Skewed [1].", prompt_tokens=70))
    run_turn(start_turn(session, "What is selection bias?"), ListSink())
    client.get(f"/api/v1/chats/{session.id}")
    after = scrape(client).content.decode()

    route = 'route="api/v1/chats/<int:chat_id>"'
    assert value(after, f'currechat_http_requests_total{{method="GET",{route},status="200"}}') == (
        value(before, f'currechat_http_requests_total{{method="GET",{route},status="200"}}') + 1
    )
    assert f'currechat_http_request_seconds_bucket{{le="0.005",{route}}}' in after
    turns = 'currechat_chat_turns_total{mode="model",status="complete"}'
    assert value(after, turns) == value(before, turns) + 1
    prompt_tokens = 'currechat_model_tokens_total{kind="prompt",model="qwen3:8b"}'
    assert value(after, prompt_tokens) - value(before, prompt_tokens) == 11 + 70
    searches = 'currechat_searches_total{status="ok"}'
    assert value(after, searches) == value(before, searches) + 1
    assert 'currechat_search_stage_seconds_count{stage="retrieve"}' in after
    assert 'currechat_queue_jobs{queue="ingest"} 0.0' in after and "currechat_workers 0.0" in after
    assert "currechat_model_errors_total" in after or "# HELP currechat_model_errors_total" in after
    # Routes are patterns, never paths with ids; no label names a user.
    routes = set(re.findall(r'route="([^"]*)"', after))
    assert routes and not any(re.search(r"/\d+(/|$)", r) for r in routes)
    assert student.username not in after


def test_a_model_failure_is_counted(session, ollama, settings, client):
    settings.METRICS_TOKEN = TOKEN
    series = 'currechat_model_errors_total{retryable="true"}'
    before = value(scrape(client).content.decode(), series)
    ollama.script(Reply(status=500, error="out of memory"))
    run_turn(start_turn(session, "Hello?"), ListSink())
    assert value(scrape(client).content.decode(), series) == before + 1


def test_made_up_http_methods_are_counted_as_other(client, settings, db):
    """A visitor sending invented methods cannot add a series per method name."""
    settings.METRICS_TOKEN = TOKEN
    series = 'currechat_http_requests_total{method="other",route="unmatched",status="404"}'
    before = value(scrape(client).content.decode(), series)
    for invented in ("FROBNICATE", "X-PROBE-1", "X-PROBE-2"):
        client.generic(invented, "/no-such-page/")
    after = scrape(client).content.decode()
    assert value(after, series) == before + 3
    assert "FROBNICATE" not in after and "X-PROBE" not in after
