"""The replay machinery (``autotune.replay``) on a synthetic table: no building, no timing."""

from __future__ import annotations

import random

import numpy as np
import pytest

from tensorforge.autotune import RandomTuner, Task
from tensorforge.autotune.features import FEATURE_LENGTH
from tensorforge.autotune.replay import (
    Table,
    TableMeasurer,
    replay,
    summarize,
    transfer_from,
    trials_to,
)

TASK = Task("matmul_packed.llvm", (16, 16, 16), "llvm")  # 1000 configs


@pytest.fixture(autouse=True)
def _llvm(llvm_target) -> None:  # noqa: ANN001 - the llvm plugin (the template's target)
    TASK._space = None


def _table(sample: int | None = 300, seed: int = 0, peak: tuple[int, ...] = (3, 4, 2)) -> Table:
    """GFLOP/s a smooth function of the knob positions (best at ``peak``), a few failures;
    features are the knob positions (padded), so nothing is lowered."""
    space = TASK.config_space
    idx = list(range(len(space)))
    if sample is not None:
        idx = sorted(random.Random(seed).sample(idx, sample))
    gflops, feats = {}, {}
    for i in idx:
        p = space.positions(i)
        g = 100.0 - sum((a - b) ** 2 for a, b in zip(p, peak)) * 4.0 - 3.0 * p[3] - 2.0 * p[4]
        gflops[i] = 0.0 if i % 97 == 5 else max(1.0, g)
    for i in range(len(space)):
        f = np.zeros(FEATURE_LENGTH, dtype=np.float32)
        f[:len(space.dims)] = space.positions(i)
        feats[i] = f
    t = Table(TASK, gflops)
    t.features.update(feats)
    return t


def test_table_measurer_and_helpers() -> None:
    t = _table()
    i = next(k for k, g in t.gflops.items() if g > 0)
    m = TableMeasurer(t)
    (r,) = m.measure(TASK, [i])
    assert r.ok and TASK.flop / r.costs[0] / 1e9 == pytest.approx(t.gflops[i])
    bad = next(k for k in range(len(TASK.config_space)) if k not in t.gflops)
    assert not m.measure(TASK, [bad])[0].ok
    assert TASK.config_space.default_index not in t.searched
    assert t.best == max(t.gflops[k] for k in t.searched)
    assert trials_to([1.0, 2.0, 3.0], 2.0) == 2 and trials_to([1.0], 2.0) == float("inf")
    assert summarize([1, 2, 3, 4, 5]) == (3.0, 2.0, 4.0)


def test_replay_searches_only_the_table_and_not_the_default() -> None:
    t = _table()
    proposed: list[int] = []

    class Spy(RandomTuner):
        def next_batch(self, n: int) -> list[int]:
            out = super().next_batch(n)
            proposed.extend(out)
            return out

    curve = replay(t, Spy, seed=1)
    assert len(curve) == len(t.searched) == len(set(proposed))
    assert set(proposed) == set(t.searched)
    assert all(a <= b for a, b in zip(curve, curve[1:])) and curve[-1] == t.best
    short = replay(t, "random", seed=1, stop_at=0.95)
    assert short[-1] >= 0.95 * t.best  # stops at the end of the batch that reached it
    assert len(short) - 8 < trials_to(short, 0.95 * t.best) <= len(short)
    assert replay(t, "random", seed=1, stop_at=0.95) == short  # seeded: reproducible


def test_model_based_replay_beats_random_on_a_smooth_table() -> None:
    t = _table(sample=None)

    def median_trials(tuner: str, **kw: object) -> float:
        return float(np.median([trials_to(replay(t, tuner, seed=s, stop_at=0.99, **kw),
                                          0.99 * t.best) for s in range(5)]))

    rnd = median_trials("random")
    ridge = median_trials("ridge")
    assert ridge < rnd
    other = _table(sample=200, seed=3, peak=(3, 4, 1))
    X, y, g = transfer_from([other], max_records=100)
    assert X.shape == (100, FEATURE_LENGTH) and y.max() == 1.0 and set(g) == {0}
    assert median_trials("ridge", transfer=(X, y, g)) <= rnd
