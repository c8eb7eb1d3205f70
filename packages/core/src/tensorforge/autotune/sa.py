"""Parallel simulated annealing over config indices, scored by a cost model.

``n_chains`` chains walk the space together (one batch prediction per step): each proposes a
neighbour (one knob changed), accepted with probability ``exp((new - old) / (T * scale))``
where ``scale`` is the spread of the chains' scores and ``T`` falls linearly from ``t_start``
to 0. The best ``top_k`` configs seen (outside ``exclude``) are returned, with the chains'
final points so the next round can continue from them.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from .space import ConfigSpace

__all__ = ["simulated_annealing"]


def simulated_annealing(space: ConfigSpace, score: Callable[[Sequence[int]], np.ndarray],
                        top_k: int, exclude: Iterable[int] = (), n_chains: int = 32,
                        n_steps: int = 60, t_start: float = 1.0, early_stop: int = 15,
                        init: Sequence[int] = (), rng: random.Random | None = None,
                        ) -> tuple[list[int], list[int]]:
    """Returns (the best ``top_k`` indices, best first; the chains' final points)."""
    rng = rng or random.Random()
    excluded = set(exclude)
    points = list(init)[:n_chains]
    while len(points) < n_chains:
        points.append(space.random_index(rng))
    scores = np.asarray(score(points), dtype=np.float64)
    heap: list[tuple[float, int]] = []  # min-heap of the best (score, index)
    in_heap: set[int] = set()

    def offer(idx: int, sc: float) -> bool:
        if idx in excluded or idx in in_heap or not math.isfinite(sc):
            return False
        if len(heap) < top_k:
            heapq.heappush(heap, (sc, idx))
        elif sc > heap[0][0]:
            _, old = heapq.heapreplace(heap, (sc, idx))
            in_heap.discard(old)
        else:
            return False
        in_heap.add(idx)
        return True

    for p, sc in zip(points, scores):
        offer(p, sc)
    quiet = 0
    for step in range(n_steps):
        temp = t_start * (1.0 - step / n_steps)
        cand = [space.neighbour(p, rng) for p in points]
        new = np.asarray(score(cand), dtype=np.float64)
        finite = scores[np.isfinite(scores)]
        scale = float(finite.std()) if finite.size > 1 else 1.0
        scale = scale if scale > 1e-12 else 1.0
        improved = False
        for i, (c, sc) in enumerate(zip(cand, new)):
            improved |= offer(c, sc)
            if not math.isfinite(sc):
                continue
            delta = (sc - scores[i]) / scale
            if not math.isfinite(scores[i]) or delta >= 0 or (
                    temp > 0 and rng.random() < math.exp(delta / temp)):
                points[i], scores[i] = c, sc
        quiet = 0 if improved else quiet + 1
        if quiet >= early_stop:
            break
    best = [idx for _, idx in sorted(heap, reverse=True)]
    return best, points
