"""Weighted reciprocal rank fusion, and splitting a result budget between collections.

RRF (Cormack et al., 2009) adds `weight / (k + rank)` over the lists a chunk appears in. It needs
no score calibration, which matters here: BM25 scores of different queries and indexes, and
cosine similarities, live on unrelated scales.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass
class Fused:
    key: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)  # retriever -> 1-based rank


def weighted_rrf(lists: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: float) -> list[Fused]:
    """Fuse ranked key lists; ties keep the order of first appearance (stable, deterministic)."""
    fused: dict[str, Fused] = {}
    for retriever, keys in lists.items():
        weight = weights.get(retriever, 0.0)
        for rank, key in enumerate(keys, start=1):
            entry = fused.setdefault(key, Fused(key, 0.0))
            if retriever in entry.ranks:  # a list with duplicates counts each key once
                continue
            entry.ranks[retriever] = rank
            entry.score += weight / (k + rank)
    return sorted((f for f in fused.values() if f.score > 0), key=lambda f: -f.score)


def hamilton(shares: Mapping[int, float], seats: int) -> dict[int, int]:
    """Largest-remainder (Hamilton) apportionment of `seats` in proportion to `shares`.

    Ties on the remainder go to the larger share, then the smaller id, so results are stable.
    """
    total = sum(s for s in shares.values() if s > 0)
    if seats <= 0 or total <= 0:
        return {key: 0 for key in shares}
    quotas = {key: seats * max(share, 0.0) / total for key, share in shares.items()}
    result = {key: int(q) for key, q in quotas.items()}
    left = seats - sum(result.values())
    order = sorted(quotas, key=lambda key: (-(quotas[key] - result[key]), -shares[key], key))
    for key in order[:left]:
        result[key] += 1
    return result


def budgets(shares: Mapping[int, float], available: Mapping[int, int], seats: int) -> dict[int, int]:
    """Hamilton apportionment capped by what each collection has; spare seats are re-apportioned
    among the collections that still have candidates, until all seats are used or none are left."""
    granted = {key: 0 for key in shares}
    remaining = seats
    open_keys = {key for key in shares if available.get(key, 0) > 0 and shares[key] > 0}
    while remaining > 0 and open_keys:
        split = hamilton({key: shares[key] for key in open_keys}, remaining)
        for key, n in split.items():
            take = min(n, available[key] - granted[key])
            granted[key] += take
            remaining -= take
        open_keys = {key for key in open_keys if granted[key] < available[key]}
    return granted
