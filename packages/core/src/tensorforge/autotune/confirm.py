"""Confirm each task's best config against the default, side by side, before a model uses it.

The fastest of hundreds of noisy timings is biased low (the winner's curse): a config whose
samples ran in a quiet moment looks faster than it is. On a shared 2-vCPU machine, ResNet-50's
tuning records put its best 1x1 convs at 0.77-0.86x the default's cost; timed again, next to
the default, they were 0.90-1.01x, and in the model 1.00x; a Winograd config recorded at
0.997x ran 1.16x timed again and 1.25x in the model (docs/tuning.md, "Confirmation").

So after the search, each task's best config and the default are timed again in ABBA order
(default, best; best, default: a drift in the machine's speed falls on both), and both records
take the pooled samples as their cost. Where the best no longer wins, the next best is
confirmed the same way, up to ``ROUNDS`` configs a task. Tasks go in order of their weighted
estimated gain, so a deadline cuts the least promising ones.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .database import Database

__all__ = ["ROUNDS", "ConfirmSummary", "confirm_best"]

#: configs confirmed per task at most (each after the previous one lost to the default)
ROUNDS = 3


@dataclass
class ConfirmSummary:
    """What ``confirm_best`` did: tasks whose best was timed again, those where the default
    won after all, and tasks left unconfirmed by the deadline."""

    confirmed: int = 0
    reverted: int = 0
    skipped: int = 0

    def line(self) -> str:
        text = (f"confirmed {self.confirmed} tasks' best configs against the default "
                f"({self.reverted} kept the default)")
        return text + (f"; {self.skipped} unconfirmed (time budget)" if self.skipped else "")


def _gain(task: Any, database: Database) -> float:
    """Weight x (default cost - best cost) from the records; 0 where either is missing."""
    best = database.best(task.key, task.target_str)
    default = database.record(task.key, task.target_str, task.config_space.default_index)
    if best is None or default is None:
        return 0.0
    return task.weight * max(0.0, default.cost - best.cost)


def confirm_best(tasks: Sequence[Any], database: Database, measurer: Any,
                 deadline: float | None = None) -> ConfirmSummary:
    """Time each task's best config again beside the default (see the module docstring) and
    write the pooled samples into both records; ``deadline`` is a ``time.monotonic()``."""
    summary = ConfirmSummary()
    gains = {t.key: _gain(t, database) for t in tasks}
    todo = sorted((t for t in tasks if gains[t.key] > 0), key=lambda t: -gains[t.key])
    for n, task in enumerate(todo):
        if deadline is not None and time.monotonic() >= deadline:
            summary.skipped = len(todo) - n
            break
        default = task.config_space.default_index
        tried: set[int] = set()
        for _ in range(ROUNDS):
            best = database.best(task.key, task.target_str)
            if best is None or best.config_index == default or best.config_index in tried:
                break
            tried.add(best.config_index)
            if not _confirm_pair(task, database, measurer, default, best.config_index):
                break
        summary.confirmed += 1
        final = database.best(task.key, task.target_str)
        summary.reverted += final is not None and final.config_index == default
    return summary


def _confirm_pair(task: Any, database: Database, measurer: Any, default: int,
                  best: int) -> bool:
    """ABBA timings of the default and ``best``; False (records untouched) on any error."""
    first = measurer.measure(task, [default, best], check=False)
    second = measurer.measure(task, [best, default], check=False)
    pooled = {default: first[0].costs + second[1].costs, best: first[1].costs + second[0].costs}
    if not all(r.ok and r.costs and all(map(math.isfinite, r.costs))
               for r in (*first, *second)):
        return False
    for index, costs in pooled.items():
        database.retime(task.key, task.target_str, index, costs)
    return True
