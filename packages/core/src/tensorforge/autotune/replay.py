"""Replaying tuners against a measured table: search efficiency without the machine's noise.

A :class:`Table` holds one measurement per config of a task (GFLOP/s, 0 for a config that
failed), for the whole space or a sample of it. :func:`replay` runs a tuner through its own
code paths (``create_tuner``, ``next_batch``, ``update``, ``pretrain`` for transfer), in
batches, as ``TuningSession`` does; only the measurement is a look-up in the table
(:class:`TableMeasurer`). Configs outside the table (a sampled space) and the default config
are marked visited before the search starts, so no tuner proposes them and every tuner
searches the same set. :func:`trials_to` reads off how many trials a search needed to reach a
share of the table's best; :func:`summarize` gives median and quartiles over seeds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .measure import COMPILE_ERROR, MeasureResult
from .task import Task
from .tuner import ModelBasedTuner, Tuner, create_tuner

__all__ = ["Table", "TableMeasurer", "replay", "summarize", "transfer_from", "trials_to"]


@dataclass
class Table:
    """Measured throughput of configs of ``task``: ``gflops[index]`` (0: the config failed).
    ``exclude_default``: the default config is not part of the searched set."""

    task: Task
    gflops: dict[int, float]
    exclude_default: bool = True
    features: dict[int, np.ndarray | None] = field(default_factory=dict)  # shared cache

    @property
    def searched(self) -> list[int]:
        d = self.task.config_space.default_index
        return sorted(i for i in self.gflops if not (self.exclude_default and i == d))

    @property
    def best(self) -> float:
        return max(self.gflops[i] for i in self.searched)

    @classmethod
    def from_json(cls, data: dict[str, Any], exclude_default: bool = True) -> Table:
        """From ``{"task": Task.to_json(), "gflops": {index: GFLOP/s}}``."""
        return cls(Task.from_json(data["task"]),
                   {int(k): float(v) for k, v in data["gflops"].items()}, exclude_default)


class TableMeasurer:
    """Stands in for a ``Measurer``: each config's cost is the table's (``COMPILE_ERROR`` for a
    config that failed or is not in the table)."""

    def __init__(self, table: Table):
        self.table = table

    def result(self, index: int) -> MeasureResult:
        g = self.table.gflops.get(index, 0.0)
        if g <= 0:
            return MeasureResult([], COMPILE_ERROR, "failed or not in the table")
        return MeasureResult([self.table.task.flop / (g * 1e9)])

    def reference(self, task: Task) -> list[np.ndarray]:
        return []

    def reference_result(self, task: Task) -> MeasureResult | None:
        return None

    def measure(self, task: Task, indices: Sequence[int], check: bool = True,
                on_result: Callable[[int, MeasureResult], None] | None = None,
                ) -> list[MeasureResult]:
        out = [self.result(i) for i in indices]
        if on_result is not None:
            for k, r in enumerate(out):
                on_result(k, r)
        return out

    def close(self) -> None:
        pass


def _features(table: Table, index: int) -> np.ndarray | None:
    if index not in table.features:
        from .features import features_of

        table.features[index] = features_of(table.task, index)
    return table.features[index]


def transfer_from(tables: Sequence[Table], max_records: int = 512, seed: int = 0,
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pretraining data from other tasks' tables, as ``tune.transfer_data`` gives from a
    database: features, throughput normalized per task (its best is 1), task labels; at most
    ``max_records`` rows, an equal random share of each table."""
    rng = np.random.default_rng(seed)
    xs, ys, gs = [], [], []
    per = max(1, max_records // max(1, len(tables)))
    for g, t in enumerate(tables):
        idx = list(t.gflops)
        pick = rng.choice(len(idx), size=min(per, len(idx)), replace=False)
        best = max(t.gflops.values())
        for k in pick:
            f = _features(t, idx[k])
            if f is not None and best > 0:
                xs.append(f)
                ys.append(t.gflops[idx[k]] / best)
                gs.append(g)
    if not xs:
        return np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.stack(xs), np.asarray(ys), np.asarray(gs, dtype=np.int64)


def replay(table: Table, tuner: str | Callable[..., Tuner], seed: int,
           n_trials: int | None = None, batch_size: int = 8, stop_at: float | None = None,
           transfer: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
           **tuner_options: Any) -> list[float]:
    """The best GFLOP/s after each trial of one search over ``table`` (the default config
    neither given nor counted). Stops after ``n_trials`` (default: the whole searched set),
    or once the best reaches ``stop_at`` x the table's best."""
    task = table.task
    tn = (create_tuner(tuner, task, seed=seed, **tuner_options) if isinstance(tuner, str)
          else tuner(task, seed=seed, **tuner_options))
    searched = set(table.searched)
    tn.visited.update(i for i in range(len(task.config_space)) if i not in searched)
    if isinstance(tn, ModelBasedTuner):
        tn.features = lambda i: _features(table, i)  # type: ignore[method-assign]
        if transfer is not None:
            tn.pretrain(*transfer)
    meas = TableMeasurer(table)
    n_trials = len(searched) if n_trials is None else min(n_trials, len(searched))
    goal = None if stop_at is None else stop_at * table.best
    curve: list[float] = []
    best = 0.0
    measured: set[int] = set()
    while len(curve) < n_trials and tn.has_next():
        batch = [i for i in tn.next_batch(min(batch_size, n_trials - len(curve)))
                 if i not in measured]
        if not batch:
            break
        results = meas.measure(task, batch)
        for i, r in zip(batch, results):
            measured.add(i)
            best = max(best, table.gflops.get(i, 0.0) if r.ok else 0.0)
            curve.append(best)
        tn.update(batch, results)
        if goal is not None and best >= goal:
            break
    return curve


def trials_to(curve: Sequence[float], goal: float) -> float:
    """Trials until the curve reaches ``goal`` (inf if it never does)."""
    return next((k + 1 for k, g in enumerate(curve) if g >= goal), float("inf"))


def summarize(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, 25th, 75th percentile)."""
    a = np.asarray(values, dtype=np.float64)
    q = np.percentile(a, [50, 25, 75]) if a.size else [np.nan] * 3
    return float(q[0]), float(q[1]), float(q[2])
