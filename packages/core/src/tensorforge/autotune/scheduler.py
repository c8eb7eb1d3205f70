"""The task scheduler: one tuning budget spread over the tasks of a model, where the
end-to-end latency gains most (after Ansor's gradient scheduler, Zheng et al., OSDI 2020).

The objective is the estimated latency ``f = sum_i w_i * c_i`` (``w_i`` the task's weight: how
many kernels of the model run it, ``c_i`` its best measured cost). Work comes in rounds of
``batch_size`` trials of one task. A warm-up gives every task one round, in order (the first
measures the default config, the reference for correctness). After that each round goes to
the task with the largest expected gain per round::

    gain_i = w_i * (alpha * backward_i + (1 - alpha) * forward_i)
    backward_i = (c_i[r - window] - c_i[r]) / window      how fast it improved lately
    forward_i  = max(c_i / r, c_i - beta * flop_i / best similar GFLOP/s)

(``r`` the task's rounds; "similar" tasks share the strategy, e.g. all direct NCHWc convs:
a task far below what its siblings reach is worth more trials), with an ``eps_greedy`` share
of random picks. Tasks whose space is exhausted, or that found nothing better in
``early_stopping`` trials, drop out. The run stops after ``n_trials`` new trials (records
of earlier runs are kept, used and reported apart, so a killed run resumes without repeating
a measurement), at ``time_budget`` seconds (less the ``reserve`` kept for what follows the
search), or when no task is left. Every record is committed to the database as it
completes; runs sharing a database claim configs before measuring them (see ``tune.py``).
"""

from __future__ import annotations

import math
import random
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .database import Database
from .measure import Measurer, MeasureResult
from .task import Task
from .tune import TuningSession
from .tuner import ModelBasedTuner, Tuner

__all__ = ["SchedulerProgress", "TaskScheduler", "TaskState"]


@dataclass
class TaskState:
    """What the scheduler knows of one task."""

    task: Task
    n_measured: int = 0
    rounds: int = 0
    best_cost: float = math.inf
    default_cost: float = math.inf
    history: list[float] = field(default_factory=list)  # best cost after each round
    done: str = ""  # why the task left: "exhausted", "early_stopping", "failed"
    error: str = ""
    session: TuningSession | None = None

    @property
    def space(self) -> int:
        return len(self.task.config_space)

    @property
    def best_gflops(self) -> float | None:
        """GFLOP/s of the best record; None while the task has no successful measurement."""
        return self.task.flop / self.best_cost / 1e9 if self.best_cost < math.inf else None


@dataclass
class SchedulerProgress:
    """What callbacks get after every round."""

    states: list[TaskState]
    current: int  # the task of this round
    batch: list[tuple[int, MeasureResult]]
    n_measured: int  # records of all tasks: this run's, earlier runs' and concurrent runs'
    n_trials: int | None  # new trials this run makes at most
    elapsed: float
    time_budget: float | None
    finished: bool = False
    new_trials: int = 0  # records added by this run
    earlier: int = 0  # records of the tasks in the database when this run started

    @property
    def latency(self) -> float | None:
        """Estimated latency of the tuned kernels, sum of weight x best cost (seconds); None
        until every task (but those whose default config fails) has a measurement, so the
        figure starts from measured values and only falls."""
        live = [s for s in self.states if s.done != "failed"]
        if not live or any(not math.isfinite(s.best_cost) for s in live):
            return None
        return sum(s.task.weight * s.best_cost for s in live)

    @property
    def measured_tasks(self) -> int:
        return _measured(self.states)

    @property
    def eta(self) -> float | None:
        """Seconds left by the time budget or the trial rate, whichever ends first."""
        left = []
        if self.time_budget is not None:
            left.append(max(0.0, self.time_budget - self.elapsed))
        if self.n_trials is not None and self.new_trials and self.elapsed > 0:
            rate = self.elapsed / self.new_trials
            left.append(max(0, self.n_trials - self.new_trials) * rate)
        return min(left) if left else None


def _measured(states: Sequence[TaskState]) -> int:
    """Tasks with at least one measurement."""
    return sum(math.isfinite(s.best_cost) for s in states)


class TaskScheduler:
    """Tune ``tasks`` (with weights) in rounds chosen by expected latency gain."""

    def __init__(self, tasks: Sequence[Task], db: Database, measurer: Measurer,
                 tuner: str | Callable[[Task], Tuner] = "xgb", n_trials: int | None = None,
                 time_budget: float | None = None, batch_size: int = 8,
                 early_stopping: int | None = None, alpha: float = 0.2, beta: float = 2.0,
                 backward_window: int = 3, eps_greedy: float = 0.05, seed: int = 0,
                 callbacks: Sequence[Callable[[SchedulerProgress], None]] = (),
                 check_correctness: bool = True, transfer: bool = True,
                 reserve: Callable[[int], float] | None = None, **tuner_options: Any):
        self.db, self.measurer, self.tuner = db, measurer, tuner
        self.n_trials, self.time_budget, self.reserve = n_trials, time_budget, reserve
        self.batch_size, self.early_stopping = max(1, batch_size), early_stopping
        self.alpha, self.beta, self.window = alpha, beta, max(1, backward_window)
        self.eps, self.rng = eps_greedy, random.Random(seed)
        self.seed, self.callbacks = seed, list(callbacks)
        self.check, self.transfer, self.tuner_options = check_correctness, transfer, tuner_options
        self.run_id = uuid.uuid4().hex[:12]  # one claim owner and run id for all its tasks
        self.states = [self._resume(t) for t in tasks]
        self.earlier = sum(st.n_measured for st in self.states)
        self.elapsed = 0.0
        self.new_trials = 0
        self.duplicates = 0
        self.stopped = ""

    # state ---------------------------------------------------------------------------------
    def _resume(self, task: Task) -> TaskState:
        """A task's state from its records (a resumed run goes on where the last stopped)."""
        self.db.add_task(task)
        st = TaskState(task)
        recs = self.db.records(task.key, task.target_str)
        st.n_measured = len(recs)
        best = math.inf
        default = task.config_space.default_index
        for k, r in enumerate(recs):
            best = min(best, r.cost)
            if r.config_index == default:
                st.default_cost = r.cost
            if (k + 1) % self.batch_size == 0 or k + 1 == len(recs):
                st.history.append(best)
        st.rounds, st.best_cost = len(st.history), best
        if st.n_measured >= st.space:
            st.done = "exhausted"
        return st

    def _session(self, st: TaskState) -> TuningSession:
        if st.session is None:
            tuner = self.tuner if isinstance(self.tuner, str) else self.tuner(st.task)
            st.session = TuningSession(st.task, self.db, self.measurer, tuner,
                                       seed=self.seed, transfer=False,
                                       check_correctness=self.check, run_id=self.run_id,
                                       **self.tuner_options)
        return st.session

    def _share(self, st: TaskState, max_rows: int = 512) -> None:
        """Give a model-based tuner the other tasks' measurements (already featurized)."""
        tn = st.session.tuner if st.session else None
        if not self.transfer or not isinstance(tn, ModelBasedTuner):
            return
        xs, ys, gs = [], [], []
        for g, other in enumerate(self.states):
            o = other.session.tuner if other.session else None
            if other is st or not isinstance(o, ModelBasedTuner) or not o.ys:
                continue
            y = np.asarray(o.ys[-max_rows:])
            if y.max() <= 0:
                continue
            xs += o.xs[-max_rows:]
            ys += list(y / y.max())
            gs += [g] * len(y)
        if xs:
            tn.set_transfer(np.stack(xs[-max_rows:]), np.asarray(ys[-max_rows:]),
                            np.asarray(gs[-max_rows:], dtype=np.int64))

    # choosing ------------------------------------------------------------------------------
    def gradient(self, i: int) -> float:
        """Expected latency reduction per round of task ``i`` (weighted; larger is better)."""
        st = self.states[i]
        c = st.best_cost
        if not math.isfinite(c):
            return math.inf  # never measured successfully: it must be tried
        backward = 0.0
        if len(st.history) > self.window:
            backward = (st.history[-1 - self.window] - st.history[-1]) / self.window
            backward = backward if math.isfinite(backward) else 0.0
        forward = c / max(1, st.rounds)
        similar = [s.task.flop / s.best_cost for s in self.states
                   if s.task.template_name == st.task.template_name and s.best_cost < math.inf
                   and s.task.args[:1] == st.task.args[:1] and s.task.flop > 0]
        if similar and st.task.flop > 0:
            forward = max(forward, c - self.beta * st.task.flop / max(similar))
        return st.task.weight * (self.alpha * backward + (1 - self.alpha) * forward)

    def pick(self) -> int | None:
        """The next task: warm-up in order, then the largest gradient (eps-greedy)."""
        live = [i for i, s in enumerate(self.states) if not s.done]
        if not live:
            return None
        for i in live:
            if self.states[i].rounds == 0:
                return i
        if self.rng.random() < self.eps:
            return self.rng.choice(live)
        grads = [self.gradient(i) for i in live]
        if max(grads) == min(grads):
            return self.rng.choice(live)
        return live[int(np.argmax(grads))]

    # running -------------------------------------------------------------------------------
    def _round(self, i: int) -> list[tuple[int, MeasureResult]]:
        st = self.states[i]
        ses = self._session(st)
        new_before, dup_before = ses.n_new, ses.duplicates
        n = self.batch_size
        if self.n_trials is not None:
            n = min(n, self.n_trials - self.new_trials)
        done = ses.measure_default() if n > 0 else []
        if n - len(done) > 0 and not ses.exhausted:
            self._share(st)
            done += ses.step(n - len(done))
        st.n_measured = len(ses.measured)
        st.rounds += 1
        st.best_cost = ses.best_cost
        st.history.append(ses.best_cost)
        default = st.task.config_space.default_index
        for idx, r in done:
            if idx == default and r.ok and r.costs:
                st.default_cost = sorted(r.costs)[len(r.costs) // 2]
        self.new_trials += ses.n_new - new_before  # what this run added, not what it tried
        self.duplicates += ses.duplicates - dup_before
        if ses.exhausted or not done:
            st.done = "exhausted"
        elif self.early_stopping is not None and ses.since_best >= self.early_stopping:
            st.done = "early_stopping"
        return done

    def total(self) -> int:
        return sum(s.n_measured for s in self.states)

    def tune(self) -> list[TaskState]:
        """Run rounds until a limit is reached; returns the task states."""
        t0 = time.monotonic()
        self.stopped = "tasks_done"
        while True:
            self.elapsed = time.monotonic() - t0
            budget = self.search_budget()
            if budget is not None and self.elapsed >= budget:
                self.stopped = "time_budget"
                break
            if self.n_trials is not None and self.new_trials >= self.n_trials:
                self.stopped = "trials"
                break
            i = self.pick()
            if i is None:
                break
            try:
                batch = self._round(i)
            except RuntimeError as exc:  # the default config does not run: skip the task
                self.states[i].done, self.states[i].error = "failed", str(exc)
                batch = []
            self.elapsed = time.monotonic() - t0
            self._notify(i, batch)
        self._notify(-1, [], finished=True)
        return self.states

    def search_budget(self) -> float | None:
        """Seconds the search may take: the time budget less ``reserve(n)`` (the time kept
        for what follows the search, e.g. confirming the best configs of the ``n`` tasks
        measured so far, which grows as the search reaches more tasks)."""
        if self.time_budget is None or self.reserve is None:
            return self.time_budget
        return self.time_budget - self.reserve(_measured(self.states))

    def _notify(self, i: int, batch: list[tuple[int, MeasureResult]],
                finished: bool = False) -> None:
        prog = SchedulerProgress(self.states, i, batch, self.total(), self.n_trials,
                                 self.elapsed, self.search_budget(), finished,
                                 self.new_trials, self.earlier)
        for cb in self.callbacks:
            cb(prog)
