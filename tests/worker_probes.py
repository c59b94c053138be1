"""Tasks that report, from inside a real worker's job process, what that process computes with
(tests/test_embed_threads.py). They run through the same queue and job class as the app's tasks."""

from __future__ import annotations

from django_tasks import task


@task(queue_name="default")
def embedding_threads() -> dict:
    """torch's thread counts in this job process, and whether the embedder's weights were already
    in memory when the job began (loaded by the worker before it forked, not by the job)."""
    from rag.providers import local

    loaded_before = "minilm" in local._models
    import torch

    return {
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "model_loaded_before": loaded_before,
    }


@task(queue_name="default")
def nap(seconds: float) -> int:
    """A job that runs for `seconds` (a file being ingested, as far as the worker can tell); its pid."""
    import os
    import time

    time.sleep(seconds)
    return os.getpid()
