"""Questions grouped by meaning: average-linkage agglomerative clustering on cosine similarity,
numpy only.

Every question starts as its own group; the two groups whose questions are most alike on
average merge, again and again, until no two groups are at least `threshold` alike. Average
linkage (not single) keeps a chain of near neighbours from joining two topics; the threshold is
a cosine between unit vectors of the embedder (MiniLM: paraphrases of one question sit at
0.6-0.9, different questions about one handbook at 0.1-0.5).

The similarity matrix is n x n, so at most `max_items` questions are clustered at once (the
first ones given: the caller passes the most recent first); the rest join the group whose
centroid is closest when it is alike enough, and what is left is clustered in a round of its own.
"""

from __future__ import annotations

import numpy as np

THRESHOLD = 0.5
MAX_ITEMS = 2000


def group(vectors: np.ndarray, threshold: float = THRESHOLD, max_items: int = MAX_ITEMS) -> list[list[int]]:
    """Indices of `vectors` (unit rows) in groups: each group's indices ascending, groups in
    the order of their first index."""
    vectors = np.asarray(vectors, dtype=np.float32)
    todo = np.arange(len(vectors))
    groups: list[list[int]] = []
    while len(todo):
        head, rest = todo[:max_items], todo[max_items:]
        found = [[int(head[i]) for i in g] for g in _agglomerate(vectors[head], threshold)]
        groups += found
        todo = _join_nearest(vectors, rest, found, threshold)
    return sorted((sorted(g) for g in groups), key=lambda g: g[0])


def central(vectors: np.ndarray, members: list[int]) -> int:
    """The member most alike, on average, to the others of its group (the medoid)."""
    if len(members) <= 2:
        return members[0]
    block = np.asarray(vectors[members], dtype=np.float32)
    return members[int(np.argmax((block @ block.T).sum(axis=1)))]


def _agglomerate(vectors: np.ndarray, threshold: float) -> list[list[int]]:
    n = len(vectors)
    if n <= 1:
        return [[i] for i in range(n)]
    sim = vectors @ vectors.T
    np.fill_diagonal(sim, -np.inf)
    size = np.ones(n)
    members: list[list[int]] = [[i] for i in range(n)]
    nearest = np.argmax(sim, axis=1)
    best = sim[np.arange(n), nearest]
    while True:
        i = int(np.argmax(best))
        if best[i] < threshold:
            break
        j = int(nearest[i])
        # Lance-Williams for average linkage: the merged group's mean similarity to every other
        row = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        row[i] = row[j] = -np.inf
        sim[i], sim[:, i] = row, row
        sim[j], sim[:, j] = -np.inf, -np.inf
        size[i] += size[j]
        members[i] += members[j]
        members[j] = []
        best[j] = -np.inf
        # rows whose nearest group was i or j look again; the others only compare with the new i
        stale = np.flatnonzero((nearest == i) | (nearest == j))
        stale = stale[best[stale] > -np.inf]
        closer = np.flatnonzero(row > best)
        nearest[closer], best[closer] = i, row[closer]
        if len(stale):
            nearest[stale] = np.argmax(sim[stale], axis=1)
            best[stale] = sim[stale, nearest[stale]]
        nearest[i] = int(np.argmax(sim[i]))
        best[i] = sim[i, nearest[i]]
    return [m for m in members if m]


def _join_nearest(vectors: np.ndarray, rest: np.ndarray, groups: list[list[int]], threshold: float) -> np.ndarray:
    """Put each of `rest` into the group whose centroid is closest, when at least `threshold`
    alike; the indices that joined none."""
    if not len(rest) or not groups:
        return rest
    centroids = np.stack([vectors[g].mean(axis=0) for g in groups])
    centroids /= np.maximum(np.linalg.norm(centroids, axis=1, keepdims=True), 1e-12)
    left = []
    for start in range(0, len(rest), 4096):
        part = rest[start:start + 4096]
        sim = vectors[part] @ centroids.T
        nearest = np.argmax(sim, axis=1)
        for index, g, s in zip(part, nearest, sim[np.arange(len(part)), nearest], strict=True):
            if s >= threshold:
                groups[g].append(int(index))
            else:
                left.append(int(index))
    return np.asarray(left, dtype=np.int64)
