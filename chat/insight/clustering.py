"""Grouping questions by meaning, and naming a group by its characteristic words: numpy only,
no model call per question (chat/insight/topics.py runs them on a week's questions).

`cluster` is average-linkage agglomerative clustering on cosine similarity, stopped at a
threshold: two groups join while the mean similarity between their questions is at least
`threshold`, so the number of topics follows the week rather than a k chosen beforehand. It keeps
the similarity matrix (n² float32: 16 MB for 2,000 questions) and each row's best partner, so a
merge costs O(n) plus the rows whose best partner it was.

`characteristic_words` is class-based TF-IDF (c-TF-IDF, as BERTopic names topics): a word ranks
high in a group when it is frequent there and rare in the other groups.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np


def cluster(vectors: Sequence[Sequence[float]], threshold: float) -> list[list[int]]:
    """Groups of indices into `vectors`, largest first (ties: by first index)."""
    n = len(vectors)
    if n == 0:
        return []
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
    sim = matrix @ matrix.T
    np.fill_diagonal(sim, -np.inf)
    sizes = np.ones(n, dtype=np.float32)
    alive = np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    best = sim.argmax(axis=1)
    best_sim = sim[np.arange(n), best]
    while n > 1:
        i = int(best_sim.argmax())
        if best_sim[i] < threshold:
            break
        j = int(best[i])
        _merge(sim, sizes, i, j)
        members[i].extend(members[j])
        members[j] = []
        alive[j] = False
        best_sim[j] = -np.inf
        # Rows whose best partner was i or j look again; every other row may only gain i.
        stale = np.flatnonzero(alive & ((best == i) | (best == j)))
        for row in (*stale.tolist(), i):
            best[row] = int(sim[row].argmax())
            best_sim[row] = sim[row, best[row]]
        gained = alive & (sim[:, i] > best_sim)
        best[gained] = i
        best_sim[gained] = sim[gained, i]
    groups = [sorted(m) for m in members if m]
    groups.sort(key=lambda g: (-len(g), g[0]))
    return groups


def _merge(sim: np.ndarray, sizes: np.ndarray, i: int, j: int) -> None:
    """Group j joins group i: i's similarity to every group becomes the size-weighted mean."""
    total = sizes[i] + sizes[j]
    row = (sim[i] * sizes[i] + sim[j] * sizes[j]) / total
    sim[i, :] = row
    sim[:, i] = row
    sim[i, i] = -np.inf
    sim[j, :] = -np.inf
    sim[:, j] = -np.inf
    sizes[i] = total


def central(vectors: Sequence[Sequence[float]], group: Sequence[int], how_many: int) -> list[int]:
    """The members of `group` nearest its centre, nearest first: its most typical questions."""
    matrix = np.asarray([vectors[i] for i in group], dtype=np.float32)
    matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-9)
    centre = matrix.mean(axis=0)
    order = np.argsort(-(matrix @ centre), kind="stable")
    return [group[k] for k in order[:how_many]]


def characteristic_words(
    groups: Sequence[Sequence[str]],
    words_of: Callable[[str], list[tuple[str, str]]],
    how_many: int = 3,
) -> list[list[str]]:
    """For each group of texts, its `how_many` most characteristic words (c-TF-IDF). `words_of`
    gives a text's content words as (key, shown form) pairs — the key a stem, so "plant" and
    "plants" count as one word, shown in its most frequent form."""
    counts: list[Counter[str]] = []
    shown: dict[str, Counter[str]] = {}
    for texts in groups:
        counter: Counter[str] = Counter()
        for text in texts:
            for key, form in words_of(text):
                counter[key] += 1
                shown.setdefault(key, Counter())[form] += 1
        counts.append(counter)
    overall: Counter[str] = Counter()
    for counter in counts:
        overall.update(counter)
    average = sum(overall.values()) / max(1, len(groups))
    names = []
    for counter in counts:
        size = sum(counter.values()) or 1
        scored = sorted(
            counter, key=lambda k: (-(counter[k] / size) * math.log(1 + average / overall[k]), -counter[k], k)
        )
        names.append([shown[k].most_common(1)[0][0] for k in scored[:how_many]])
    return names
