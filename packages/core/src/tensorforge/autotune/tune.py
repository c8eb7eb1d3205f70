"""``tune_task``: the tuning loop of one task, resumable; ``apply_best``: use what it found.

The loop: measure the default config (it is also the reference every candidate's output is
checked against), then ask the tuner for a batch, build and run it, commit each record to the
database as it completes, let the tuner learn, and repeat until ``n_trials`` configs of the
task are in the database (records of earlier runs count: a killed run resumes where it
stopped), the space is exhausted, ``early_stopping`` trials brought no improvement, or
``time_budget`` seconds have passed.

Several tuners may share one database: before measuring a batch a session takes in the
records others committed since (its tuner learns from them) and claims the configs it will
measure (``Database.claim``); configs another live run has claimed are left to it. So no two
runs measure the same config, and each run's ``n_new`` is what it measured.
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

from .database import ClaimOwner, Database, Record
from .features import features_of
from .measure import Builder, Measurer, MeasureResult, Runner
from .task import Task
from .tuner import ModelBasedTuner, Tuner, create_tuner

__all__ = ["Progress", "TuneResult", "TuningSession", "apply_best", "progress_printer",
           "transfer_data", "tune_task"]


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
    def best_gflops(self) -> float | None:
        """None while the task has no successful measurement."""
        return self.task.flop / self.best_cost / 1e9 if self.best_cost < float("inf") else None


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
            g = p.best_gflops
            best = f"{p.best_cost * 1e3:.3f} ms ({g:.1f} GFLOP/s)" if g is not None else "-"
            print(f"[{p.task.name}] {p.n_measured}/{p.n_trials} best {best} "
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


class TuningSession:
    """The tuning state of one task over a database: a tuner fed the task's earlier records,
    the configs measured, the best so far. ``measure_default`` records the default config
    (the reference of every candidate); ``step(n)`` measures up to ``n`` new configs and
    commits each record as it completes. ``tune_task`` and the task scheduler drive it."""

    def __init__(self, task: Task, database: Database, measurer: Measurer,
                 tuner: str | Tuner = "xgb", seed: int | None = None, transfer: bool = True,
                 check_correctness: bool = True, run_id: str | None = None,
                 **tuner_options: Any):
        self.task, self.database, self.measurer = task, database, measurer
        self.check = check_correctness
        self.tuner_name = tuner if isinstance(tuner, str) else tuner.name
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.owner = ClaimOwner(self.run_id)
        database.add_task(task)
        history = database.records(task.key, task.target_str)
        self.tuner = create_tuner(tuner, task, seed=seed, **tuner_options) \
            if isinstance(tuner, str) else tuner
        self.tuner.load_history(history)
        if transfer and isinstance(self.tuner, ModelBasedTuner):
            X, y, g = transfer_data(database, task.target_str, task.key)
            self.tuner.pretrain(X, y, g)
        self.measured = {r.config_index for r in history}
        self.errors: Counter[str] = Counter()
        self.n_new = 0
        self.duplicates = 0  # measured but already recorded by another run (claims prevent it)
        self.left_to_others: set[int] = set()  # configs another live run had claimed
        best = database.best(task.key, task.target_str)
        self.best_cost = best.cost if isinstance(best, Record) else float("inf")
        self.best_index = best.config_index if isinstance(best, Record) else None
        self.since_best = 0
        self.exhausted = len(self.measured) >= len(task.config_space)

    def commit(self, index: int, r: MeasureResult) -> None:
        """Record one result (committed to the database at once, releasing its claim) and
        track the best."""
        if self.database.add(_record(self.task, index, r, self.tuner_name, self.run_id),
                             owner=self.owner):
            self.n_new += 1
        else:
            self.duplicates += 1
        self.measured.add(index)
        if r.error_class:
            self.errors[r.error_class] += 1
        cost = sorted(r.costs)[len(r.costs) // 2] if r.ok and r.costs else float("inf")
        if cost < self.best_cost:
            self.best_cost, self.best_index, self.since_best = cost, index, 0
        else:
            self.since_best += 1

    def sync(self) -> int:
        """Take in the records other runs committed to the task since; returns how many."""
        recs = [r for r in self.database.records(self.task.key, self.task.target_str)
                if r.config_index not in self.measured]
        if not recs:
            return 0
        self.tuner.update([r.config_index for r in recs], recs)
        for r in recs:
            self.measured.add(r.config_index)
            self.left_to_others.discard(r.config_index)
            if r.cost < self.best_cost:
                self.best_cost, self.best_index = r.cost, r.config_index
        self.exhausted = len(self.measured) >= len(self.task.config_space)
        return len(recs)

    def _claim(self, indices: list[int]) -> list[int]:
        """The configs of ``indices`` this run may measure; the ones another live run
        claimed are left to it (the tuner will not propose them again)."""
        got = self.database.claim(self.task.key, self.task.target_str, indices, self.owner)
        taken = set(indices) - set(got)
        if taken:
            self.left_to_others |= taken
            self.tuner.visited |= taken
        return got

    def measure_default(self) -> list[tuple[int, MeasureResult]]:
        """Measure and record the default config unless it is recorded (or being measured by
        another run) already."""
        if self.check:
            self.measurer.reference(self.task)
        default = self.task.config_space.default_index
        self.sync()
        if default in self.measured or not self._claim([default]):
            return []
        try:
            r = self.measurer.reference_result(self.task) if self.check else None
            if r is None:
                (r,) = self.measurer.measure(self.task, [default], check=False)
            self.commit(default, r)
        finally:
            self.database.release(self.owner, self.task.key)
        self.tuner.update([default], [r])
        return [(default, r)]

    def step(self, n: int) -> list[tuple[int, MeasureResult]]:
        """Measure up to ``n`` configs the tuner proposes; [] (and ``exhausted``) when it has
        none left that no other run is measuring."""
        self.sync()
        batch: list[int] = []
        for _ in range(4):  # proposals another run claimed meanwhile: ask again
            proposed = [i for i in self.tuner.next_batch(n) if i not in self.measured]
            if not proposed:
                break
            batch = self._claim(proposed)
            if batch:
                break
        if not batch:
            self.exhausted = True
            return []
        done: list[tuple[int, MeasureResult]] = []

        def on_result(k: int, r: MeasureResult) -> None:
            self.commit(batch[k], r)
            done.append((batch[k], r))

        try:
            results = self.measurer.measure(self.task, batch, check=self.check,
                                            on_result=on_result)
        finally:  # claims of configs not recorded (an error, Ctrl-C) go back at once
            self.database.release(self.owner, self.task.key)
        self.tuner.update(batch, results)
        self.exhausted = len(self.measured) >= len(self.task.config_space)
        return done


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
    try:
        ses = TuningSession(task, database, measurer, tuner, seed, transfer, check_correctness,
                            **tuner_options)
        stopped = "trials"
        if len(ses.measured) < n_trials:
            ses.measure_default()
        while len(ses.measured) < n_trials:
            if time_budget is not None and time.monotonic() - t0 > time_budget:
                stopped = "time_budget"
                break
            if early_stopping is not None and ses.since_best >= early_stopping:
                stopped = "early_stopping"
                break
            done = ses.step(min(batch_size, n_trials - len(ses.measured)))
            if not done:
                stopped = "space_exhausted"
                break
            prog = Progress(task, len(ses.measured), n_trials, ses.best_cost, ses.best_index,
                            done, time.monotonic() - t0)
            for cb in callbacks:
                cb(prog)
        final = database.best(task.key, task.target_str)
        return TuneResult(task, final if isinstance(final, Record) else None,
                          len(ses.measured), ses.n_new, ses.errors, stopped)
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
    return task.instantiate(task.config_space.from_record(best.config, best.config_index))
