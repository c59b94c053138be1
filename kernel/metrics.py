"""The figures the apps count for operators (chat turns, tokens, searches, budget refusals), in
prometheus_client's default registry; currechat/metrics.py serves them at `/metrics` with the HTTP
and queue figures. Labels stay low-cardinality: models are the few configured names, never users.
"""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import Counter, Histogram

TURNS = Counter("currechat_chat_turns", "Chat turns by how they ended.", ["status", "mode"])
TOKENS = Counter("currechat_model_tokens", "Tokens model servers reported, by model.", ["model", "kind"])
SEARCHES = Counter("currechat_searches", "Searches by outcome.", ["status"])
SEARCH_STAGE = Histogram(
    "currechat_search_stage_seconds",
    "Time per search stage (embed, retrieve, fuse, fetch, curate, total).",
    ["stage"],
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
MODEL_ERRORS = Counter("currechat_model_errors", "Model server failures that ended a chat turn.", ["retryable"])
BUDGET_REFUSALS = Counter("currechat_budget_refusals", "Turns refused because a weekly token budget was used up.")


def count_tokens(model: str, prompt_tokens: int, completion_tokens: int) -> None:
    TOKENS.labels(model=model or "unknown", kind="prompt").inc(max(0, prompt_tokens))
    TOKENS.labels(model=model or "unknown", kind="completion").inc(max(0, completion_tokens))


def observe_search(status: str, timings_ms: Mapping[str, float]) -> None:
    SEARCHES.labels(status=status).inc()
    for stage, ms in timings_ms.items():
        SEARCH_STAGE.labels(stage=stage).observe(ms / 1000)
