"""Strict helpers that read settings from environment variables.

Each helper raises ``ImproperlyConfigured`` with a sentence naming the variable when a value is
malformed, so a typo in deployment fails at start-up instead of surfacing as odd behaviour later.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, yes/no, on/off (got {raw!r}).")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number (got {raw!r}).") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum} (got {value}).")
    return value


def env_rate(name: str, events: int, seconds: int) -> tuple[int, int]:
    """A rate limit, (events, seconds): `name` is how many events (0: no limit) and `name`_SECONDS
    the sliding window they are counted over."""
    return env_int(name, events, minimum=0), env_int(f"{name}_SECONDS", seconds, minimum=1)


def env_optional_int(name: str, default: int | None = None, *, minimum: int | None = None) -> int | None:
    """A whole number, or None when the variable is empty ("no limit")."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.strip() == "":
        return None
    return env_int(name, 0, minimum=minimum)


def env_float(name: str, default: float, *, minimum: float | None = None) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number (got {raw!r}).") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum} (got {value}).")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int_map(name: str) -> dict[str, int]:
    """`key=number,key2=number` (keys may hold `:` and `/`, as model names do)."""
    raw = os.environ.get(name, "").strip()
    result: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, value = item.rpartition("=")
        if not sep or not key.strip() or not value.strip().isdigit() or int(value) < 1:
            raise ImproperlyConfigured(f"{name} must look like 'model=512,other-model=8192' (got {item!r}).")
        result[key.strip()] = int(value)
    return result


def env_url(name: str, default: str, *, schemes: tuple[str, ...]) -> str:
    value = os.environ.get(name, default).strip()
    scheme = value.split("://", 1)[0] if "://" in value else ""
    if scheme not in schemes:
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(f"{name} must start with {allowed} (got {value!r}).")
    return value


def load_env_file(path) -> None:
    """Read `KEY=VALUE` lines from `path` (written by `make run`) into the environment, so that
    `manage.py` in a plain shell gets the same SECRET_KEY as the running app. Variables already
    set win over the file; a missing file is fine. Lines may be blank, `# comments`, or
    `export KEY=VALUE`; a value may be in single or double quotes."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        line = line.removeprefix("export ").strip()
        name, sep, value = line.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name.isidentifier():
            raise ImproperlyConfigured(f"{path}, line {number}: expected KEY=VALUE (got {raw!r}).")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        os.environ.setdefault(name, value)
