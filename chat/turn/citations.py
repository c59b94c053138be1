"""Citations: the `[n]` markers of an answer, mapped to the passages returned in the same turn."""

from __future__ import annotations

import re
from collections.abc import Mapping

from chat.turn.events import PassageView
from kernel.rendering import CITATION, CODE


def cited_numbers(text: str) -> list[int]:
    """The numbers cited in `text` (outside code), in order of first appearance."""
    seen: list[int] = []
    for match in CITATION.finditer(CODE.sub(" ", text)):
        for n in re.split(r"\s*[,;]\s*", match.group(1)):
            if int(n) not in seen:
                seen.append(int(n))
    return seen


def map_citations(text: str, passages: Mapping[int, PassageView]) -> list[PassageView]:
    """The passages the answer cites. A number that matches no passage of this turn is no citation."""
    return [passages[n] for n in cited_numbers(text) if n in passages]
