"""Interleaved timing and robust statistics (medians and quartiles, never means or minima).

Every contestant of a benchmark (ours, ONNX Runtime, PyTorch, the FMA-peak kernel) runs once
per round, one after the other, so all of them see the same machine state; ratios are taken
per round and summarized by their median and quartiles. A contestant that is fast is repeated
`number` times inside one sample (calibrated once) so that a sample lasts a few milliseconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping
from typing import Any

Quartiles = tuple[float, float, float]

# (ours, setup, rounds) -> seconds of each round of `ours`; pytest-benchmark's `pedantic`
# fits this shape (see benchmarks/conftest.py), the default is plain perf_counter.
RoundRunner = Callable[[Callable[[], Any], Callable[[], None], int], list[float]]


def quartiles(xs: list[float]) -> Quartiles:
    """(q1, median, q3) of `xs` (inclusive method; one value gives it three times)."""
    if not xs:
        return (float("nan"),) * 3  # type: ignore[return-value]
    if len(xs) < 2:
        return xs[0], xs[0], xs[0]
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def calibrate(fn: Callable[[], Any], min_sample_s: float = 0.005, max_number: int = 1000) -> int:
    """How many calls of `fn` make one sample of at least `min_sample_s` (after a warm-up)."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(max_number, int(min_sample_s / one + 0.999)))


def repeated(fn: Callable[[], Any], number: int) -> Callable[[], None]:
    """`fn` called `number` times (one timed sample)."""
    if number == 1:
        return lambda: (fn(), None)[1]

    def run() -> None:
        for _ in range(number):
            fn()

    return run


def _plain_rounds(ours: Callable[[], Any], setup: Callable[[], None], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        setup()
        t = time.perf_counter()
        ours()
        out.append(time.perf_counter() - t)
    return out


def interleave(ours: Callable[[], Any], others: Mapping[str, Callable[[], Any]], rounds: int,
               min_sample_s: float = 0.005, runner: RoundRunner | None = None
               ) -> dict[str, list[float]]:
    """Seconds per call of `ours` (key "ours") and of each of `others`, by round.

    Each round runs the others (timed here), then ours (timed by `runner`, default
    perf_counter). Each contestant is calibrated (warm-up included) before the first round."""
    numbers = {"ours": calibrate(ours, min_sample_s)}
    numbers.update({k: calibrate(f, min_sample_s) for k, f in others.items()})
    batches = {k: repeated(f, numbers[k]) for k, f in others.items()}
    times: dict[str, list[float]] = {k: [] for k in others}

    def setup() -> None:
        for k, f in batches.items():
            t = time.perf_counter()
            f()
            times[k].append((time.perf_counter() - t) / numbers[k])

    mine = (runner or _plain_rounds)(repeated(ours, numbers["ours"]), setup, rounds)
    n = min([len(mine)] + [len(v) for v in times.values()])
    out = {"ours": [t / numbers["ours"] for t in mine[-n:]] if n else []}
    out.update({k: v[-n:] if n else [] for k, v in times.items()})
    return out


def ratio_quartiles(num: list[float], den: list[float]) -> Quartiles:
    """Quartiles of the per-round ratios num[i] / den[i]."""
    return quartiles([a / b for a, b in zip(num, den) if b > 0])
