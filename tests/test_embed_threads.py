"""Each kind of process embeds on the threads the settings give it: a web process its questions on
one, a worker's job processes (which share the model the worker loaded once) on EMBED_THREADS.
A real worker (`make run`'s command) with a real job through the queue; a fresh web process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django_tasks import TaskResultStatus

from tests.databases import migrated_sqlite
from tests.test_worker_process import LiveWorkers
from tests.worker_probes import embedding_threads

ROOT = Path(__file__).resolve().parent.parent
# What a web server does before it listens (import the ASGI application), then a search's question.
WEB_PROCESS = """
import json
import currechat.asgi
from rag.providers import get_embedding_model
get_embedding_model("local:all-MiniLM-L6-v2").embed_query("How does a converging lens form an image?")
import torch
print(json.dumps({"threads": torch.get_num_threads()}))
"""


@pytest.fixture
def local_worker(tmp_path):
    workers = LiveWorkers(tmp_path)
    workers.env.update({"EMBEDDING_MODEL": "local:all-MiniLM-L6-v2", "EMBED_THREADS": "3"})
    migrated_sqlite(workers.database, workers.env)
    yield workers
    workers.stop()


def finished(result, workers: LiveWorkers, timeout: float = 300):
    """The task's result once the worker has run it (importing torch takes 20-40 s on a loaded machine)."""
    deadline = time.monotonic() + timeout
    while result.status not in (TaskResultStatus.SUCCESSFUL, TaskResultStatus.FAILED):
        assert workers.processes[0].poll() is None, f"the worker exited:\n{workers.log()}"
        assert time.monotonic() < deadline, f"the job did not run in {timeout:.0f} s:\n{workers.log()}"
        time.sleep(0.2)
        result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL, workers.log()
    return result.return_value


@pytest.mark.slow
def test_a_workers_job_processes_embed_on_the_configured_threads_with_the_model_loaded_once(local_worker):
    local_worker.start()
    # Three threads on this two-core machine: a count neither torch's default nor one would give.
    first = finished(embedding_threads.enqueue(), local_worker)
    assert first == {"threads": 3, "interop_threads": 1, "model_loaded_before": True}
    # The next job's process (a fresh fork) computes the same way, and finds the model loaded too.
    assert finished(embedding_threads.enqueue(), local_worker) == first


@pytest.mark.slow
def test_a_web_process_embeds_each_question_on_one_thread():
    # torch's default here is one thread per core (two): a web process's searches then waited on
    # each other's threads, 174 ms per question on a busy machine instead of 40.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OMP_", "MKL_"))}
    env.update(DJANGO_SETTINGS_MODULE="currechat.settings", EMBEDDING_WARMUP="0")
    done = subprocess.run(
        [sys.executable, "-c", WEB_PROCESS], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == {"threads": 1}
