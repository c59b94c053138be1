"""A pytest plugin (loaded with -p, before Django) that starts the real external services once:
a Redis Stack server on a free port and the Ollama-protocol test server, and points the
settings at them through the same environment variables production uses.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from scripts.redis_stack import RedisStackServer, free_port
from tests.fake_ollama import FakeOllama

_state: dict = {}


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    tmp = Path(tempfile.mkdtemp(prefix="currechat-test-"))
    redis_server = RedisStackServer(port=free_port(), data_dir=tmp / "redis", persistent=False)
    redis_server.start()
    ollama = FakeOllama().start()
    _state.update(tmp=tmp, redis=redis_server, ollama=ollama)
    os.environ.update(
        {
            "REDIS_URL": redis_server.url,
            "OLLAMA_HOST": ollama.url,
            "OLLAMA_TIMEOUT": "10",
            "CURRECHAT_VAR_DIR": str(tmp / "var"),
            "MEDIA_ROOT": str(tmp / "media"),
            "SECRET_KEY": "test-secret-key-not-for-production",
            "DEBUG": "0",
            "SECURE_COOKIES": "0",
            "HEALTH_CACHE_SECONDS": "0",
            "EMBEDDING_WARMUP": "0",  # tests that import the ASGI app must not load MiniLM each time
            "REDIS_INDEX_PREFIX": f"cctest{redis_server.port}",
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        }
    )


def pytest_unconfigure(config):
    if "ollama" in _state:
        _state["ollama"].stop()
    if "redis" in _state:
        _state["redis"].stop()
    if "tmp" in _state:
        shutil.rmtree(_state["tmp"], ignore_errors=True)


def redis_server() -> RedisStackServer:
    return _state["redis"]


def fake_ollama() -> FakeOllama:
    return _state["ollama"]
