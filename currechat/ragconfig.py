"""The library's configuration (`rag.config`), from this project's settings: filled when the apps
start (`currechat.apps`) and again when one of its settings changes (tests change them with the
`settings` fixture, which sends `setting_changed`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

from rag import config

_SERVERS = {
    "OLLAMA_HOST": "ollama_host",
    "OLLAMA_API_KEY": "ollama_api_key",
    "OLLAMA_TIMEOUT": "ollama_timeout",
    "OPENAI_BASE_URL": "openai_base_url",
    "OPENAI_API_KEY": "openai_api_key",
    "OPENAI_TIMEOUT": "openai_timeout",
    "MODEL_SERVER_CA_FILE": "ca_file",
    "MODERATION_MODEL": "moderation_model",
    "MODERATION_BASE_URL": "moderation_base_url",
    "MODERATION_API_KEY": "moderation_api_key",
    "MODERATION_TIMEOUT": "moderation_timeout",
}
_MODELS = {
    "CHAT_MODEL": "chat_model",
    "EMBEDDING_MODEL": "embedding_model",
    "EMBEDDING_TOKEN_LIMITS": "embedding_token_limits",
    "EMBEDDING_TOKEN_LIMIT_DEFAULT": "embedding_token_limit_default",
    "HEALTH_CACHE_SECONDS": "health_cache_seconds",
    "EMBED_THREADS": "embed_threads",
    "EMBED_QUERY_THREADS": "embed_query_threads",
    "INGEST_EMBED_BATCH_CHARS": "embed_batch_chars",
}


_INDEX = {"REDIS_INDEX_PREFIX": "prefix"}
_SEARCH = {
    "SEARCH_RETRIEVER_DEPTH": "retriever_depth",
    "SEARCH_RRF_K": "rrf_k",
    "SEARCH_WEIGHTS": "weights",
    "SEARCH_FOREIGN_VECTOR_WEIGHT": "foreign_vector_weight",
    "SEARCH_MIN_SIMILARITY": "min_similarity",
    "SEARCH_FLOOR_Z": "floor_z",
    "CURATION_MODEL": "curation_model",
    "SEARCH_CURATION_CONCURRENCY": "curation_concurrency",
    "SEARCH_CURATION_TIMEOUT": "curation_timeout",
    "SEARCH_CURATION_MIN_SCORE": "curation_min_score",
    "SEARCH_CURATION_CACHE_SECONDS": "curation_cache_seconds",
    "CHAT_DUPLICATE_SHARE": "duplicate_share",
    "CHAT_NEIGHBOUR_WEIGHT": "neighbour_weight",
}
_INGESTION = {
    "INGEST_CHUNK_SIZE": "chunk_size",
    "INGEST_CHUNK_OVERLAP": "chunk_overlap",
    "INGEST_EMBED_BATCH": "embed_batch",
    "INGEST_EMBED_CACHE_DAYS": "embed_cache_days",
    "VLM_MODEL": "vlm_model",
    "INGEST_VLM_CONCURRENCY": "vlm_concurrency",
    "INGEST_VLM_RETRIES": "vlm_retries",
    "INGEST_VLM_DPI": "vlm_dpi",
    "UPLOAD_MAX_PDF_PAGES": "max_pdf_pages",
    "INGEST_MAX_STREAM_BYTES": "max_stream_bytes",
    "INGEST_MAX_IMAGE_PIXELS": "max_image_pixels",
    "INGEST_MAX_TEXT_CHARS": "max_text_chars",
    "INGEST_STEP_RETRIES": "step_retries",
    "INGEST_RETRY_DELAY": "retry_delay",
    "INGEST_REDIS_OUTAGE_SECONDS": "redis_outage_seconds",
    "LIBREOFFICE_BINARY": "libreoffice_binary",
    "LIBREOFFICE_TIMEOUT": "libreoffice_timeout",
}
# Settings a field is derived from rather than copied.
_DERIVED = {"LANGUAGES", "BASE_DIR", "VAR_DIR", "MEDIA_ROOT"}
_ALL = {*_SERVERS, *_MODELS, *_INDEX, *_SEARCH, *_INGESTION, *_DERIVED}


def _copied(names: dict[str, str]) -> dict[str, Any]:
    """The settings `names` maps, by the field each fills."""
    return {field: getattr(settings, name) for name, field in names.items()}


def configure_rag() -> None:
    config.configure(
        config.ModelServers(**_copied(_SERVERS)),
        config.Models(**_copied(_MODELS)),
        config.Index(**_copied(_INDEX)),
        config.Search(**_copied(_SEARCH)),
        config.Ingestion(
            **_copied(_INGESTION),
            languages=tuple(code for code, _name in settings.LANGUAGES),
            own_folders=tuple(str(p) for p in (settings.BASE_DIR, settings.VAR_DIR, settings.MEDIA_ROOT)),
        ),
    )


def _changed(setting: str, **kwargs) -> None:
    if setting in _ALL:
        configure_rag()


def connect() -> None:
    configure_rag()
    setting_changed.connect(_changed, dispatch_uid="currechat.ragconfig")
