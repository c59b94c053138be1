"""A web process loads what its first requests need before it serves them (currechat/warmup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# What uvicorn and daphne do before they listen (import the ASGI application), then what the first
# page or chat does first: look at the model servers. Prints the modules that look imported.
FIRST_LOOK = """
import json, sys
import currechat.asgi
from rag.providers import registry
before = set(sys.modules)
registry.available_models()
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_the_first_model_look_of_a_fresh_web_process_imports_no_model_client():
    # Importing the openai and ollama clients holds the interpreter for about a second, and every
    # answer the process streams stands still meanwhile: that belongs to the start, not to a chat.
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "currechat.settings",
        "EMBEDDING_WARMUP": "0",
        # Nothing listens on the discard port: the look is refused at once, and no test's server is asked.
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    result = subprocess.run(
        [sys.executable, "-c", FIRST_LOOK], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    imported_at_first_look = set(json.loads(result.stdout.splitlines()[-1]))
    # The clients themselves; a few of their parts still load at their first request (~50 ms).
    assert not imported_at_first_look & {"openai", "ollama", "httpx", "pydantic"}
