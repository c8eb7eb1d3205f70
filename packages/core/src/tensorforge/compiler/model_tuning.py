"""Tuning a model: plan it, extract one task per distinct tunable fused group, and tune them
under one budget (``autotune.tune_tasks``); what ``tforge tune`` runs.

    tune_model("resnet18.onnx", "llvm -num-threads=1", db="tuning.db", time_budget=600)
    model = tensorforge.compile("resnet18.onnx", "llvm -num-threads=1", tuning_db="tuning.db")

The compiler knows graphs and the search engine (``autotune``) knows tasks: this module is
where the two meet, above both. ``tensorforge.tune_model`` is this module's ``tune_model``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..autotune.database import Database
from ..autotune.measure import Measurer
from ..autotune.scheduler import SchedulerProgress
from ..autotune.tune_tasks import TuneModelResult, check_device, tune_tasks
from ..graph.groups import FusedGroup
from ..plugins import get_registry
from ..target import Target
from ..text import plural
from .compile import plan, workload_key
from .group_tasks import GroupTask, group_task

__all__ = ["extract_tasks", "tasks_of_groups", "tune_model"]


def _strategy(group: FusedGroup, strategies: dict[str, list[Any]]) -> Any:
    found = strategies.get(group.master.op) or [None]
    return found[0]


def tasks_of_groups(groups: Sequence[FusedGroup], target: Any,
                    strategies: dict[str, list[Any]] | None = None) -> list[GroupTask]:
    """One task per distinct tunable workload of ``groups``, weighted by its group count."""
    tgt = Target.coerce(target)
    strategies = get_registry().strategies(tgt) if strategies is None else strategies
    tasks: dict[Any, GroupTask | None] = {}
    for grp in groups:
        key = workload_key(grp)
        if key not in tasks:
            tasks[key] = group_task(grp, _strategy(grp, strategies), tgt, 0.0)
        task = tasks[key]
        if task is not None:
            task.weight += 1.0
    return [t for t in tasks.values() if t is not None]


def extract_tasks(model: Any, target: Any, input_shapes: dict[str, Any] | None = None,
                  opt_level: int = 3) -> list[GroupTask]:
    """The tuning tasks of a model (path, ONNX ModelProto or Graph) on ``target`` (only the
    groups placed on it)."""
    tgt = Target.coerce(target)
    p = plan(model, tgt, input_shapes, opt_level)
    # groups placed on the host (ops the device cannot run) are not the target's to tune
    return tasks_of_groups([g for g in p.groups if p.device_of(g) in ("", tgt.kind.name)], tgt)


def tune_model(model: Any, target: Any, db: str | os.PathLike[str] | Database = "tuning.db",
               n_trials: int | None = None, tuner: str = "xgb",
               time_budget: float | str | None = None, early_stopping: int | None = None,
               executor: str = "local", batch_size: int = 8,
               input_shapes: dict[str, Any] | None = None, progress: str = "auto",
               plot: str | os.PathLike[str] | bool | None = True, seed: int = 0,
               measurer: Measurer | None = None,
               callbacks: Sequence[Callable[[SchedulerProgress], None]] = (),
               log: Callable[[str], None] = print,
               cache_flush: bool = True, confirm: bool = True) -> TuneModelResult:
    """Tune every task of ``model`` on ``target`` into ``db``: ``n_trials`` new trials at
    most (records already in ``db`` are used, not repeated, and reported apart as
    ``earlier``); ``plot`` True writes the curves next to the database
    (``<db>-curves.png``), a path writes them there; ``cache_flush`` False times CPU
    candidates with warm caches, ``confirm`` False skips timing the best configs again
    beside the default (``tune_tasks``)."""
    tgt = Target.coerce(target)
    tgt.kind.load_build()  # a target that cannot compile here: say so before any work
    check_device(tgt)  # nor one whose device is missing: candidates are timed on it
    t0 = time.monotonic()
    database = db if isinstance(db, Database) else Database(db)  # bad paths: refused first
    try:
        tasks = extract_tasks(model, tgt, input_shapes)
        log(f"{plural(len(tasks), 'task')} ({plural(int(sum(t.weight for t in tasks)), 'kernel')}"
            f"), {plural(sum(len(t.config_space) for t in tasks), 'config')} in all, "
            f"extracted in {time.monotonic() - t0:.1f} s; records go to {database.path}")
        return tune_tasks(tasks, tgt, database, n_trials, tuner, time_budget, early_stopping,
                          executor, batch_size, progress, plot, seed, measurer, callbacks, log,
                          cache_flush=cache_flush, confirm=confirm)
    finally:
        if not isinstance(db, Database):
            database.close()
