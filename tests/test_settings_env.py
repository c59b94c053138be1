"""Settings come from environment variables through strict helpers that reject bad values."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from kernel.env import env_bool, env_int, env_list, env_url


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


# The test session sets these for itself (tests/services.py); each case here says its own.
_UNSET = ("DEBUG", "SECRET_KEY", "DATABASE_URL", "SECURE_COOKIES", "ALLOW_PLAIN_HTTP", "TRUST_X_FORWARDED_PROTO")


def _check(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in _UNSET}
    return subprocess.run(
        [sys.executable, "manage.py", "check"], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    # No SECRET_KEY anywhere: not in the environment, and no .env (`make run` writes one into the
    # checkout, and the settings would read it).
    result = _check(
        {"DEBUG": "0", "CURRECHAT_ENV_FILE": str(tmp_path / "absent.env"), "CURRECHAT_VAR_DIR": str(tmp_path / "var")}
    )
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


@pytest.mark.parametrize(
    ("name", "value", "sentence"),
    [
        ("CHAT_MAX_SEARCHES", "0", "CHAT_MAX_SEARCHES must be at least 1 (got 0)."),
        ("UPLOAD_MAX_BYTES", "50MB", "UPLOAD_MAX_BYTES must be a whole number (got '50MB')."),
        ("DEBUG", "maybe", "DEBUG must be one of 1/0, true/false, yes/no, on/off (got 'maybe')."),
        (
            "REDIS_URL",
            "localhost:6379",
            "REDIS_URL must start with redis://, rediss://, unix:// (got 'localhost:6379').",
        ),
        ("SEARCH_WEIGHT_EXACT", "-1", "SEARCH_WEIGHT_EXACT must be at least 0 (got -1.0)."),
        ("EMAIL_PORT", "smtp", "EMAIL_PORT must be a whole number (got 'smtp')."),
        ("EMAIL_USE_TLS", "maybe", "EMAIL_USE_TLS must be one of 1/0, true/false, yes/no, on/off (got 'maybe')."),
        (
            "MODEL_SERVER_CA_FILE",
            "/etc/no-such-ca.pem",
            "MODEL_SERVER_CA_FILE must be a readable PEM file of CA certificates ('/etc/no-such-ca.pem'",
        ),
    ],
)
def test_a_bad_setting_stops_start_up_with_a_sentence_naming_it(name, value, sentence):
    result = _check({"DEBUG": "1", name: value})
    assert result.returncode != 0
    assert sentence in result.stderr


def _settings(env: dict, expression: str) -> str:
    """Evaluate `expression` in a fresh interpreter that loaded currechat.settings from `env`."""
    code = f"import currechat.settings as s; print({expression})"
    clean = {k: v for k, v in os.environ.items() if k not in _UNSET}
    result = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_blank_numbers_fall_back_to_defaults_and_lists_drop_empty_items(monkeypatch):
    monkeypatch.setenv("X_INT", " ")
    assert env_int("X_INT", 7, minimum=1) == 7
    monkeypatch.setenv("X_BOOL", " Yes ")
    assert env_bool("X_BOOL", False) is True
    monkeypatch.setenv("X_LIST", " a.example, ,b.example ,")
    assert env_list("X_LIST", []) == ["a.example", "b.example"]
    monkeypatch.delenv("X_URL", raising=False)
    assert env_url("X_URL", "redis://127.0.0.1:6379/0", schemes=("redis",)) == "redis://127.0.0.1:6379/0"


def test_database_url_selects_postgres_without_sqlites_lock_settings():
    postgres = "postgres://u:p@db:5432/currechat"
    engine, options = _settings(
        {"DEBUG": "1", "DATABASE_URL": postgres},
        "s.DATABASES['default']['ENGINE'], s.DATABASES['default'].get('OPTIONS', {})",
    ).split(" ", 1)
    assert engine == "django.db.backends.postgresql"
    assert "journal_mode" not in options  # SQLite's WAL pragmas must never reach PostgreSQL


def test_without_database_url_sqlite_under_the_var_dir_waits_for_locks(tmp_path):
    out = _settings(
        {"DEBUG": "1", "CURRECHAT_VAR_DIR": str(tmp_path)},
        "s.DATABASES['default']['NAME'], s.DATABASES['default']['OPTIONS']['transaction_mode']",
    )
    assert out == f"{tmp_path / 'currechat.sqlite3'} IMMEDIATE"


def test_debug_off_makes_cookies_secure_unless_told_otherwise():
    behind_proxy = {"SECRET_KEY": "k", "DEBUG": "0", "TRUST_X_FORWARDED_PROTO": "1"}
    assert _settings(behind_proxy, "s.SESSION_COOKIE_SECURE") == "True"
    assert _settings({**behind_proxy, "SECURE_COOKIES": "0"}, "s.SESSION_COOKIE_SECURE") == "False"
    # Plain http on a closed network: a Secure cookie would never come back, so nobody could sign in.
    plain = {"SECRET_KEY": "k", "DEBUG": "0", "ALLOW_PLAIN_HTTP": "1"}
    assert _settings(plain, "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE") == "False False"


def test_production_refuses_to_start_without_saying_how_https_reaches_it():
    result = _check({"DEBUG": "0", "SECRET_KEY": "k"})
    assert result.returncode != 0
    assert "With DEBUG off, say how CurreChat is reached over https: set TRUST_X_FORWARDED_PROTO=1" in result.stderr
    assert "SECURE_SSL_REDIRECT=1" in result.stderr and "ALLOW_PLAIN_HTTP=1" in result.stderr
    for choice in ("TRUST_X_FORWARDED_PROTO", "SECURE_SSL_REDIRECT", "ALLOW_PLAIN_HTTP"):
        assert _check({"DEBUG": "0", "SECRET_KEY": "k", choice: "1"}).returncode == 0, choice
    assert _check({"DEBUG": "1"}).returncode == 0, "development needs no choice"
    both = _check({"DEBUG": "0", "SECRET_KEY": "k", "ALLOW_PLAIN_HTTP": "1", "SECURE_SSL_REDIRECT": "1"})
    assert both.returncode != 0 and "contradict each other" in both.stderr


def test_mail_over_starttls_and_tls_at_once_is_refused():
    result = _check({"DEBUG": "1", "EMAIL_HOST": "smtp.example.org", "EMAIL_USE_TLS": "1", "EMAIL_USE_SSL": "1"})
    assert result.returncode != 0
    assert "EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on" in result.stderr
