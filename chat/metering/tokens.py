"""A text's tokens, estimated from its characters where no model has counted them.

We cannot load every model's tokenizer, so the estimate is set on the generous side (3 characters a
token; English averages about 4) to err towards leaving room: for a turn's context window
(chat/turn/budget.py), its attachments and moderation, and the tutor's protected material.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 3


def estimate_tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1
