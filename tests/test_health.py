"""The status badge and /api/v1/health tell the truth about Redis and the model server."""

from __future__ import annotations

import pytest

from scripts.redis_stack import RedisStackServer, free_port


def test_health_reports_redis_search_and_models_to_teachers(client_for, owner, ollama, settings):
    data = client_for(owner).get("/api/v1/health").json()
    assert data["redis"]["ok"] is True
    assert data["model_server"]["ok"] is True
    assert data["models"]["chat"] == settings.CHAT_MODEL
    assert data["models"]["embedding"] == settings.EMBEDDING_MODEL
    assert data["llm_available"] is True


def test_health_says_when_chat_model_is_missing_on_server(client_for, owner, ollama):
    ollama.models = ["some-other-model:1b"]
    data = client_for(owner).get("/api/v1/health").json()
    assert data["model_server"]["ok"] is True
    assert data["llm_available"] is False


def test_every_page_shows_connected_models(client_for, owner, ollama, settings):
    page = client_for(owner).get("/").content.decode()
    assert "Search index: connected" in page
    assert settings.CHAT_MODEL in page and settings.EMBEDDING_MODEL in page


def test_pages_say_when_no_model_server(client_for, owner, settings):
    settings.OLLAMA_HOST = f"http://127.0.0.1:{free_port()}"
    response = client_for(owner).get("/")
    assert response.status_code == 200
    assert "no model server" in response.content.decode()
    assert response.client.get("/api/v1/health").json()["model_server"]["ok"] is False


def test_redis_down_then_back_without_restart(client_for, owner, settings, tmp_path, ollama):
    server = RedisStackServer(port=free_port(), data_dir=tmp_path / "r", persistent=False)
    server.start()
    settings.REDIS_URL = server.url
    client = client_for(owner)
    try:
        assert client.get("/api/v1/health").json()["redis"]["ok"] is True
        server.stop()

        health = client.get("/api/v1/health").json()
        assert health["redis"]["ok"] is False
        assert "cannot be reached" in health["redis"]["detail"]
        page = client.get("/")
        assert page.status_code == 200
        assert "Search index: <strong>unavailable</strong>" in page.content.decode()

        server.start()
        assert client.get("/api/v1/health").json()["redis"]["ok"] is True
        assert "Search index: connected" in client.get("/").content.decode()
    finally:
        server.stop()


def test_redis_without_search_module_is_named_clearly(client_for, owner, settings, tmp_path):
    server = RedisStackServer(port=free_port(), data_dir=tmp_path / "plain", persistent=False, with_search=False)
    server.start()
    settings.REDIS_URL = server.url
    try:
        detail = client_for(owner).get("/api/v1/health").json()["redis"]
        assert detail["ok"] is False
        assert "Redis Stack, or Redis 8 with the Query Engine" in detail["detail"]
    finally:
        server.stop()


def test_badge_says_whether_a_background_worker_is_running(client_for, owner, db):
    from rq import Worker

    from kernel.redis_client import get_redis

    page = client_for(owner).get("/").content.decode()
    assert "No background worker is running" in page
    worker = Worker(["default"], connection=get_redis())
    worker.register_birth()
    try:
        assert "1 background worker running. Busy: 0, idle: 1." in client_for(owner).get("/").content.decode()
        assert client_for(owner).get("/api/v1/health").json()["workers"] == {
            "ok": True,
            "detail": "1 background worker running (0 busy, 1 idle).",
            "count": 1,
            "busy": 0,
            "idle": 1,
        }
        worker.set_state("busy")  # in a job: the page says so, and that new files wait
        page = client_for(owner).get("/").content.decode()
        assert "Busy: 1, idle: 0. New files wait until one is free." in page
    finally:
        worker.register_death()


@pytest.mark.slow
def test_pages_and_api_that_need_redis_explain_when_it_is_down(client_for, owner, collection, settings, tmp_path):
    server = RedisStackServer(port=free_port(), data_dir=tmp_path / "r", persistent=False)
    server.start()
    settings.REDIS_URL = server.url
    server.stop()
    client = client_for(owner)
    page = client.get(f"/collections/{collection.id}/search/?q=mean")
    assert page.status_code == 503
    assert "cannot be reached right now" in page.content.decode()
    api = client.post(f"/api/v1/collections/{collection.id}/search", {"query": "mean"}, content_type="application/json")
    assert api.status_code == 503
    assert "try again" in api.json()["detail"]
    assert client.get(f"/collections/{collection.id}/").status_code in (200, 503)  # never a 500


def test_a_page_asks_the_model_server_for_its_models_once_and_the_next_page_asks_again(
    client_for, owner, prompt, ollama
):
    """The badge, the prompt's model choices and its warnings all read one look at the server (the
    suite keeps no list between requests: HEALTH_CACHE_SECONDS=0)."""
    client = client_for(owner)
    ollama.requests.clear()
    page = client.get(f"/prompts/{prompt.pk}/").content.decode()
    assert [path for path, _ in ollama.requests if path == "/api/tags"] == ["/api/tags"]
    assert "qwen3:8b" in page
    ollama.models = ["llama3.2:3b"]
    page = client.get(f"/prompts/{prompt.pk}/").content.decode()
    assert len([path for path, _ in ollama.requests if path == "/api/tags"]) == 2
    assert "llama3.2:3b" in page
