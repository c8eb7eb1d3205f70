"""``tune_task``: the tuning loop of one task, resumable; ``apply_best``: use what it found.

The loop: measure the default config (it is also the reference every candidate's output is
checked against), then ask the tuner for a batch, build and run it, commit each record to the
database as it completes, let the tuner learn, and repeat until ``n_trials`` configs of the
task are in the database (records of earlier runs count: a killed run resumes where it
stopped), the space is exhausted, ``early_stopping`` trials brought no improvement, or
``time_budget`` seconds have passed.
"""

from __future__ import annotations

import os
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .database import Database, Record
from .features import features_of
from .measure import Builder, Measurer, MeasureResult, Runner
from .task import Task
from .tuner import ModelBasedTuner, Tuner, create_tuner

__all__ = ["Progress", "TuneResult", "apply_best", "progress_printer", "transfer_data",
           "tune_task"]


@dataclass
class Progress:
    """What callbacks get after every batch."""

    task: Task
    n_measured: int  # records of the task in the database, this run and earlier ones
    n_trials: int
    best_cost: float
    best_index: int | None
    batch: list[tuple[int, MeasureResult]]
    elapsed: float

    @property
    def best_gflops(self) -> float:
        return self.task.flop / self.best_cost / 1e9 if self.best_cost < float("inf") else 0.0


@dataclass
class TuneResult:
    task: Task
    best: Record | None
    n_measured: int
    n_new: int
    errors: Counter[str] = field(default_factory=Counter)
    stopped: str = "trials"


def progress_printer(every: int = 1) -> Callable[[Progress], None]:
    """A callback printing one line per ``every`` batches."""
    count = [0]

    def cb(p: Progress) -> None:
        count[0] += 1
        if count[0] % every == 0:
            print(f"[{p.task.name}] {p.n_measured}/{p.n_trials} best "
                  f"{p.best_cost * 1e3:.3f} ms ({p.best_gflops:.1f} GFLOP/s) "
                  f"{p.elapsed:.0f} s", flush=True)

    return cb


def transfer_data(db: Database, target: str, exclude: str,
                  max_records: int = 512) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Features, per-task normalized throughputs and task labels of the records of the other
    tasks of ``target`` in ``db`` (the most recent ``max_records``)."""
    xs, ys, gs = [], [], []
    for g, t in enumerate(db.tasks()):
        if t["key"] == exclude or t["target"] != str(target):
            continue
        try:
            task = Task(t["template"], t["args"], t["target"], module=t["module"])
            recs = db.records(t["key"], t["target"])[-max_records:]
        except Exception:  # noqa: BLE001 - a template that no longer exists: skip its records
            continue
        feats = [(features_of(task, r.config_index), r) for r in recs]
        feats = [(f, r) for f, r in feats if f is not None]
        thr = np.asarray([(task.flop or 1.0) / r.cost if r.ok else 0.0 for _, r in feats])
        if not feats or thr.max() <= 0:
            continue
        xs += [f for f, _ in feats]
        ys += list(thr / thr.max())
        gs += [g] * len(feats)
        if len(xs) >= max_records:
            break
    if not xs:
        return np.zeros((0, 0)), np.zeros(0), np.zeros(0, dtype=np.int64)
    return np.stack(xs), np.asarray(ys), np.asarray(gs, dtype=np.int64)


def _record(task: Task, index: int, r: MeasureResult, tuner: str, run_id: str) -> Record:
    return Record(task.key, task.target_str, index, task.config(index).to_json(), r.costs,
                  r.error_class, r.error_msg, r.all_cost, r.timestamp, tuner, run_id)


def tune_task(task: Task, n_trials: int, tuner: str | Tuner = "xgb",
              db: Database | str | os.PathLike[str] = "tuning.db",
              measurer: Measurer | None = None, batch_size: int = 8,
              early_stopping: int | None = None, time_budget: float | None = None,
              callbacks: Sequence[Callable[[Progress], None]] = (), seed: int | None = None,
              transfer: bool = True, check_correctness: bool = True,
              **tuner_options: Any) -> TuneResult:
    """Tune ``task`` until ``n_trials`` of its configs are in ``db``; returns the best."""
    t0 = time.monotonic()
    own_db = not isinstance(db, Database)
    database = Database(db) if own_db else db
    own_measurer = measurer is None
    if measurer is None:
        measurer = Measurer(Builder(n_parallel=min(batch_size, os.cpu_count() or 1)), Runner())
    tuner_name = tuner if isinstance(tuner, str) else tuner.name
    run_id = uuid.uuid4().hex[:12]
    try:
        database.add_task(task)
        target = task.target_str
        history = database.records(task.key, target)
        tn = create_tuner(tuner, task, seed=seed, **tuner_options) \
            if isinstance(tuner, str) else tuner
        tn.load_history(history)
        if transfer and isinstance(tn, ModelBasedTuner):
            X, y, g = transfer_data(database, target, task.key)
            tn.pretrain(X, y, g)
        measured = {r.config_index for r in history}
        errors: Counter[str] = Counter()
        n_new = 0
        best = database.best(task.key, target)
        best_cost = best.cost if isinstance(best, Record) else float("inf")
        best_index = best.config_index if isinstance(best, Record) else None
        since_best = 0
        stopped = "trials"

        def commit(index: int, r: MeasureResult) -> None:
            nonlocal n_new, best_cost, best_index, since_best
            if database.add(_record(task, index, r, tuner_name, run_id)):
                n_new += 1
            measured.add(index)
            if r.error_class:
                errors[r.error_class] += 1
            cost = sorted(r.costs)[len(r.costs) // 2] if r.ok and r.costs else float("inf")
            if cost < best_cost:
                best_cost, best_index, since_best = cost, index, 0
            else:
                since_best += 1

        default = task.config_space.default_index
        if check_correctness:
            measurer.reference(task)
        if default not in measured and len(measured) < n_trials:
            r = measurer.reference_result(task) if check_correctness else None
            if r is None:
                (r,) = measurer.measure(task, [default], check=False)
            commit(default, r)
            tn.update([default], [r])
        while len(measured) < n_trials:
            if time_budget is not None and time.monotonic() - t0 > time_budget:
                stopped = "time_budget"
                break
            if early_stopping is not None and since_best >= early_stopping:
                stopped = "early_stopping"
                break
            batch = [i for i in tn.next_batch(min(batch_size, n_trials - len(measured)))
                     if i not in measured]
            if not batch:
                stopped = "space_exhausted"
                break
            done: list[tuple[int, MeasureResult]] = []

            def on_result(k: int, r: MeasureResult, batch: list[int] = batch,
                          done: list[tuple[int, MeasureResult]] = done) -> None:
                commit(batch[k], r)
                done.append((batch[k], r))

            results = measurer.measure(task, batch, check=check_correctness,
                                       on_result=on_result)
            tn.update(batch, results)
            prog = Progress(task, len(measured), n_trials, best_cost, best_index, done,
                            time.monotonic() - t0)
            for cb in callbacks:
                cb(prog)
        final = database.best(task.key, target)
        return TuneResult(task, final if isinstance(final, Record) else None, len(measured),
                          n_new, errors, stopped)
    finally:
        if own_measurer:
            measurer.close()
        if own_db:
            database.close()


def apply_best(task: Task, target: Any = None, db: Database | str | None = None,
               ) -> tuple[Any, list]:
    """``(schedule, args)`` of the best recorded config of ``task`` on ``target`` (default:
    the task's), or of the default config when ``db`` has none."""
    if target is not None and str(target) != task.target_str:
        task = Task(task.template_name, task.args, target, task.weight, task.module)
    if db is None:
        return task.instantiate(None)
    database = db if isinstance(db, Database) else Database(db)
    try:
        best = database.best(task.key, task.target_str)
    finally:
        if database is not db:
            database.close()
    if not isinstance(best, Record):
        return task.instantiate(None)
    try:
        cfg = task.config_space.from_json(best.config)
    except (KeyError, IndexError):
        cfg = task.config(best.config_index)
    return task.instantiate(cfg)
