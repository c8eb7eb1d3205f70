"""``tune_tasks``: tune weighted tasks under one budget with the task scheduler, show
progress, plot the tuning curves; the search half of ``tforge tune``.

A model's tasks come from the compiler (``tensorforge.compiler.model_tuning``: it plans the
model and calls ``tune_tasks``); this module knows tasks, not graphs.

    tune_tasks(tasks, "llvm -num-threads=1", db="tuning.db", time_budget=600)
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ..errors import TensorforgeError
from .confirm import ConfirmSummary, confirm_best
from .database import Database
from .executor import Executor, LocalExecutor
from .measure import Builder, Measurer, Runner
from .scheduler import SchedulerProgress, TaskScheduler, TaskState
from .task import Task

__all__ = ["TuneModelResult", "check_device", "make_measurer", "parse_duration",
           "tune_tasks"]

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | float | None) -> float | None:
    """Seconds from ``"90"``, ``"20s"``, ``"10m"``, ``"1h30m"`` or a number (None passes)."""
    if text is None or isinstance(text, (int, float)):
        return None if text is None else float(text)
    t = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", t)
    if not parts or "".join(a + u for a, u in parts) != t:
        raise ValueError(f"duration {text!r}: write e.g. 90, 20s, 10m or 1h30m")
    return sum(float(a) * _UNITS[u] for a, u in parts)


def make_executor(spec: str = "local", n_workers: int | None = None) -> Executor:
    """``local`` (a process pool), ``ray`` (a local Ray) or ``ray://ADDRESS`` (``ray.init``
    of that address; ``ray://auto`` joins the cluster this machine belongs to)."""
    if spec == "local":
        return LocalExecutor(n_workers)
    if spec == "ray" or spec.startswith("ray://"):
        from .executor import RayExecutor

        address = spec[len("ray://"):] if spec.startswith("ray://") else None
        return RayExecutor(address="auto" if address == "auto" else
                           (spec if address else None))
    raise ValueError(f"executor {spec!r}: use local, ray or ray://ADDRESS")


def make_measurer(executor: str = "local", n_parallel: int | None = None, repeat: int = 5,
                  min_repeat_ms: float = 40.0, timeout: float = 10.0,
                  cache_flush: bool = True) -> Measurer:
    """Builds in parallel and timed runs one at a time (each the median of ``repeat``
    measurements of at least ``min_repeat_ms``). ``cache_flush`` (CPU code timed by wall
    clock; device timers ignore it): each timed call starts with the caches swept, as inside
    a model, and the cost is the median of up to ``10 * repeat`` single calls
    (``measure._flush_cache``); False times back-to-back calls with warm caches."""
    runner = {"repeat": repeat, "min_repeat_ms": min_repeat_ms, "timeout": timeout,
              "flush_cache": cache_flush}
    if executor == "local":
        builder = Builder(n_parallel=n_parallel or os.cpu_count() or 1)
        return Measurer(builder, Runner(**runner))
    ex = make_executor(executor)
    m = Measurer(Builder(executor=ex), Runner(executor=ex, **runner))
    m.close = ex.close  # type: ignore[method-assign]  # one executor for both
    return m


@dataclass
class TuneModelResult:
    """What ``tune_tasks`` (and ``tune_model``) did: per-task states, why it stopped,
    trials, the plot's path, error counts."""

    tasks: list[Task]
    states: list[TaskState]
    stopped: str
    elapsed: float
    new_trials: int
    plot: str | None = None
    errors: dict[str, int] = field(default_factory=dict)
    earlier: int = 0  # records of the tasks in the database before this run
    duplicates: int = 0  # measurements another run had recorded first (claims prevent them)
    confirmed: ConfirmSummary | None = None  # the best configs timed again (confirm.py)

    @property
    def latency_default(self) -> float:
        """Sum of weight x default config cost over the tasks (seconds)."""
        return sum(s.task.weight * s.default_cost for s in self.states
                   if math.isfinite(s.default_cost))

    @property
    def latency_tuned(self) -> float:
        return sum(s.task.weight * min(s.best_cost, s.default_cost) for s in self.states
                   if math.isfinite(s.default_cost))


#: the share of a time budget kept for confirming the best configs (``confirm.confirm_best``)
CONFIRM_SHARE = 0.25
#: seconds of confirmation a measured task needs: 1.0-1.5 s each on a 2-vCPU Zen 4 (two
#: builds, four timed runs of up to 50 cache-swept calls, sometimes a second pair; the ten
#: torchvision families at 1 and 2 threads); a search that reaches many tasks keeps more than
#: ``CONFIRM_SHARE`` of its budget for them, up to half
CONFIRM_TASK_S = 1.5


def confirm_reserve(budget: float, n_tasks: int) -> float:
    """Seconds of a ``budget`` kept for confirming the best configs of ``n_tasks`` measured
    tasks: ``CONFIRM_SHARE`` of it, more for many (``CONFIRM_TASK_S`` each), at most half."""
    return budget * min(0.5, max(CONFIRM_SHARE, n_tasks * CONFIRM_TASK_S / max(budget, 1e-9)))


def _states_from_records(states: list[Any], database: Database) -> None:
    """After the confirmation, each task's best and default cost as the records now say."""
    for st in states:
        best = database.best(st.task.key, st.task.target_str)
        if best is not None:
            st.best_cost = best.cost
        default = database.record(st.task.key, st.task.target_str,
                                  st.task.config_space.default_index)
        if default is not None:
            st.default_cost = default.cost


def _defaults_from_records(states: list[Any], database: Database) -> None:
    """A default config another run measured first (runs sharing a database claim configs)
    has its cost in the database, not in this run's results: read it, so the before/after
    estimate covers every task whose default anyone measured."""
    for st in states:
        if math.isfinite(st.default_cost):
            continue
        default = database.record(st.task.key, st.task.target_str,
                                  st.task.config_space.default_index)
        if default is not None:
            st.default_cost = default.cost


def check_device(tgt: Any) -> None:
    """Raise a clear TensorforgeError when `tgt` runs on a device kind this machine lacks
    (tuning times every candidate on the device, e.g. by CUDA events)."""
    from ..runtime.device import DEVICE_RUNTIMES, DeviceUnavailable, get_device

    runtime = DEVICE_RUNTIMES.get(tgt.kind.device_type)
    if runtime is None:
        return
    options = {k: tgt.options[k] for k in ("platform", "device") if k in tgt.options}
    try:
        get_device(runtime, options)
    except DeviceUnavailable as e:
        raise TensorforgeError(
            f"cannot tune for {tgt.kind.name} here: {e}. Tuning times each candidate on the "
            f"device; run `tforge tune --target {tgt.kind.name}` on a machine with one (the "
            "records then apply anywhere with `tforge compile --tuning-db`)") from None


def tune_tasks(tasks: Sequence[Task], target: Any,
               db: str | os.PathLike[str] | Database = "tuning.db", n_trials: int | None = None,
               tuner: str = "xgb", time_budget: float | str | None = None,
               early_stopping: int | None = None, executor: str = "local",
               batch_size: int = 8, progress: str = "auto",
               plot: str | os.PathLike[str] | bool | None = True, seed: int = 0,
               measurer: Measurer | None = None,
               callbacks: Sequence[Callable[[SchedulerProgress], None]] = (),
               log: Callable[[str], None] = print,
               cache_flush: bool = True, confirm: bool = True) -> TuneModelResult:
    """Tune ``tasks`` (of ``target``, weighted by how often each runs) into ``db`` under one
    budget: ``n_trials`` new trials at most (records already in ``db`` are used, not
    repeated, and reported apart as ``earlier``); ``plot`` True writes the curves next to the
    database (``<db>-curves.png``), a path writes them there; ``log`` takes the notes;
    ``cache_flush``: of the default measurer (``make_measurer``; a given one keeps its own);
    ``confirm``: time each task's best config again beside the default before it counts
    (``confirm.confirm_best``; ``confirm_reserve`` says how much of a time budget is kept)."""
    from ..target import Target

    tgt = Target.coerce(target)
    database = db if isinstance(db, Database) else Database(db)
    try:
        return _tune(list(tasks), tgt, database, n_trials, tuner, time_budget, early_stopping,
                     executor, batch_size, progress, plot, seed, measurer, callbacks, log,
                     cache_flush, confirm)
    finally:
        if not isinstance(db, Database):
            database.close()


def _tune(tasks: list[Task], tgt: Any, database: Database, n_trials: int | None, tuner: str,
          time_budget: float | str | None, early_stopping: int | None, executor: str,
          batch_size: int, progress: str, plot: str | os.PathLike[str] | bool | None,
          seed: int, measurer: Measurer | None,
          callbacks: Sequence[Callable[[SchedulerProgress], None]],
          log: Callable[[str], None], cache_flush: bool, confirm: bool) -> TuneModelResult:
    from ..tir.transform.pipeline import is_gpu
    from .report import make_display, plot_curves

    own = measurer is None
    # a device compiles each kernel at its first launch (pocl: seconds for a big one)
    measurer = measurer or make_measurer(executor, timeout=60.0 if is_gpu(tgt) else 10.0,
                                         cache_flush=cache_flush)
    display = make_display(progress) if progress != "none" else None
    path = None
    budget = parse_duration(time_budget)
    start = time.monotonic()
    summary = None
    try:
        # the search stops early enough to confirm the tasks it has measured by then
        reserve = partial(confirm_reserve, budget) if budget is not None and confirm \
            else None
        sched = TaskScheduler(tasks, database, measurer, tuner, n_trials, budget,
                              batch_size, early_stopping, seed=seed, reserve=reserve,
                              callbacks=[*([display] if display else []), *callbacks])
        states = sched.tune()
        if confirm and sched.new_trials:
            summary = confirm_best(tasks, database, measurer,
                                   None if budget is None else start + budget)
            _states_from_records(states, database)
        _defaults_from_records(states, database)
    finally:
        if display is not None:
            display.close()
        if own:
            measurer.close()
        # no path ("" is a temporary database): no default place for the plot
        if plot and database.path not in ("", ":memory:") and database.count():
            path = (os.fspath(plot) if not isinstance(plot, bool)
                    else os.path.splitext(database.path)[0] + "-curves.png")
            try:
                plot_curves(database, tasks, path)
            except ImportError:
                log("no tuning-curve plot: matplotlib is not installed (pip install matplotlib;"
                    " --no-plot skips the plot)")
                path = None
    errors: dict[str, int] = {}
    for st in states:
        for k, n in (st.session.errors if st.session else {}).items():
            errors[k] = errors.get(k, 0) + n
    return TuneModelResult(tasks, states, sched.stopped, sched.elapsed, sched.new_trials, path,
                           errors, sched.earlier, sched.duplicates, summary)
