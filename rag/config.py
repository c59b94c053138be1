"""What the library needs to know of its deployment, handed in by the apps (issue 45 item 6: `rag/`
reads no Django settings, so it stays a library that a script or another app could configure).

The project shell fills it from its settings when the apps start, and again whenever a setting it
holds changes (a test's `settings` fixture): `currechat/ragconfig.py`. One frozen value per concern;
`tests/test_structure.py` fails if a module of `rag/` reads `django.conf.settings` again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class ModelServers:
    """Where the model servers are and how long to wait for them."""

    ollama_host: str  # the Ollama-protocol server's address
    ollama_api_key: str  # sent as a bearer token; "" for none
    ollama_timeout: float  # seconds, the longest silence of an answer
    openai_base_url: str  # the OpenAI-protocol server's /v1 address; "" when there is none
    openai_api_key: str
    openai_timeout: float
    ca_file: str  # the university's own CA certificates (PEM), beside certifi's; "" for none
    moderation_model: str  # the safety check's name ("" for none)
    moderation_base_url: str  # a moderation endpoint's server (the OpenAI server by default)
    moderation_api_key: str
    moderation_timeout: float


@dataclass(frozen=True)
class Models:
    """Which models serve when none is named, and how the embedders run."""

    chat_model: str  # provider:name, e.g. "qwen3:8b" or "openai:Qwen/Qwen3-8B"
    embedding_model: str
    embedding_token_limits: Mapping[str, int]  # an operator's token limits by model name
    embedding_token_limit_default: int  # for a model neither they nor the built-in table know
    health_cache_seconds: float  # how long a listing of the servers' models is trusted
    embed_threads: int  # a job process's compute threads; 0: one per core
    embed_query_threads: int  # a web process's, per query embedding
    embed_batch_chars: int  # the most characters the local embedder encodes at once


@dataclass(frozen=True)
class Index:
    """Where the library's data lives in Redis."""

    prefix: str  # every key and index name starts with it (a deployment's, or a test worker's, own)


@dataclass(frozen=True)
class Search:
    """How a search ranks, curates and assembles passages."""

    retriever_depth: int  # hits each retriever returns before fusion
    rrf_k: float  # reciprocal rank fusion's k
    weights: Mapping[str, float]  # each retriever's weight in the fusion, by name
    foreign_vector_weight: float  # the vector retriever's weight for a query in another language
    min_similarity: float  # the lowest cosine similarity a vector hit may have
    floor_z: float  # the similarity floor, in standard deviations above the best hits' mean
    curation_model: str  # the model that scores hits for a curated search
    curation_concurrency: int
    curation_timeout: float  # seconds for one scoring answer
    curation_min_score: float  # a curated hit's lowest score (0-10)
    curation_cache_seconds: int  # how long a scoring is kept
    duplicate_share: float  # the share of a passage that, found again, makes it a duplicate
    neighbour_weight: float  # how much a passage's neighbours count when the context is assembled


@dataclass(frozen=True)
class Ingestion:
    """How uploaded files become passages, and the limits that keep a file from exhausting a worker."""

    chunk_size: int  # characters per passage
    chunk_overlap: int  # characters a passage shares with the one before
    embed_batch: int  # the most texts embedded at once
    embed_cache_days: int  # how long a passage's embedding is kept for the next run
    vlm_model: str  # the vision model that reads page images
    vlm_concurrency: int  # pages read at once
    vlm_retries: int
    vlm_dpi: int  # resolution pages are rendered at for the vision model
    max_pdf_pages: int  # the most pages (or slides) a document may have
    max_stream_bytes: int  # the most bytes a compressed stream or archive may inflate to
    max_image_pixels: int
    max_text_chars: int  # the most characters a file's text may have
    step_retries: int  # how often a failed step is tried again
    retry_delay: float  # seconds before the first retry, growing with each
    redis_outage_seconds: float  # how long a step waits for Redis to come back
    libreoffice_binary: str  # the command that renders presentations
    libreoffice_timeout: float
    languages: tuple[str, ...]  # the site's language codes (a note is recognised in each)
    own_folders: tuple[str, ...]  # the app's folders, hidden from LibreOffice's sandbox


_parts: dict[type, object] = {}


def configure(*parts: ModelServers | Models | Index | Search | Ingestion) -> None:
    """Hand the library its configuration, whole or one concern at a time."""
    for part in parts:
        _parts[type(part)] = part


def _part(kind: type[T]) -> T:
    part = _parts.get(kind)
    if part is None:
        raise RuntimeError(
            f"rag.config.configure was not given {kind.__name__}: the apps hand the library its configuration at start."
        )
    assert isinstance(part, kind)  # stored under its own type by configure
    return part


def model_servers() -> ModelServers:
    return _part(ModelServers)


def models() -> Models:
    return _part(Models)


def index() -> Index:
    return _part(Index)


def search() -> Search:
    return _part(Search)


def ingestion() -> Ingestion:
    return _part(Ingestion)
