"""Settings come from environment variables through strict helpers that reject bad values."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from currechat.env import env_bool, env_int, env_url
from rag.languages import LANGUAGES, stopwords


def test_bool_int_and_url_helpers_reject_bad_values(monkeypatch):
    monkeypatch.setenv("X_BOOL", "maybe")
    with pytest.raises(ImproperlyConfigured, match="X_BOOL"):
        env_bool("X_BOOL", False)
    monkeypatch.setenv("X_INT", "ten")
    with pytest.raises(ImproperlyConfigured, match="whole number"):
        env_int("X_INT", 1)
    monkeypatch.setenv("X_INT", "0")
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env_int("X_INT", 1, minimum=1)
    monkeypatch.setenv("X_URL", "localhost:6379")
    with pytest.raises(ImproperlyConfigured, match="redis://"):
        env_url("X_URL", "", schemes=("redis",))


def _check(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("DEBUG", "SECRET_KEY")}
    return subprocess.run(
        [sys.executable, "manage.py", "check"], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def test_production_refuses_to_start_without_a_secret_key():
    result = _check({"DEBUG": "0"})
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_postgres_is_chosen_through_database_url():
    from dj_database_url import parse

    assert parse("postgres://u:p@db:5432/currechat")["ENGINE"] == "django.db.backends.postgresql"


def test_offered_languages_are_supported_by_both_stemmer_and_stop_words():
    assert {"english", "finnish", "german", "swedish"} <= set(LANGUAGES)
    assert "chinese" not in LANGUAGES  # RediSearch does not stem it
    for language in LANGUAGES:
        assert stopwords(language), language
