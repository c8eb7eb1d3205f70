"""Tuning a model: tasks from a compiled graph, records applied by compile, the task
scheduler's allocation (on synthetic tasks with a synthetic measurer: deterministic)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import tensorforge
from tensorforge.autotune import Database, Record, tune_task
from tensorforge.autotune.measure import MeasureResult
from tensorforge.autotune.scheduler import TaskScheduler
from tensorforge.autotune.task import Task
from tensorforge.autotune.template import template
from tensorforge.compiler import plan
from tensorforge.compiler.compile import workload_key
from tensorforge.compiler.group_tasks import GroupTask, group_workload, rebuild_group
from tensorforge.compiler.model_tuning import extract_tasks
from tensorforge.graph import Graph, run_reference

TARGET = "llvm -num-threads=1"


def branchy_cnn() -> Graph:
    """Two equal 1x1 conv-relu branches (one task, weight 2), a strided 3x3 conv, a dense."""
    rng = np.random.default_rng(0)
    g = Graph("branchy")
    x = g.add_input("x", (1, 8, 16, 16), "float32")

    def rand(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.3).astype("float32")

    def conv(h, cin, cout, k, s):
        y = g.add("conv2d", h, g.add_const("w", rand(cout, cin, k, k)),
                  g.add_const("b", rand(cout)), strides=(s, s), pads=(k // 2,) * 4)
        return g.add("relu", y)

    y1, y2 = conv(x, 8, 16, 1, 1), conv(x, 8, 16, 1, 1)
    y3 = conv(y1, 16, 32, 3, 2)
    y4 = g.add("reshape", g.add("global_avg_pool2d", y3), shape=(1, 32))
    g.outputs = [y2, g.add("dense", y4, g.add_const("fw", rand(16, 32)),
                           g.add_const("fb", rand(16)))]
    return g


def test_tasks_are_distinct_workloads_weighted_by_count(llvm_target):
    tasks = extract_tasks(branchy_cnn(), TARGET)
    assert [t.weight for t in tasks] == [2.0, 1.0, 1.0]
    assert [t.name.split()[0] for t in tasks] == ["conv2d_nchwc+relu", "conv2d_nchwc+relu",
                                                 "dense_packed"]
    assert len({t.key for t in tasks}) == 3
    assert [t.key for t in extract_tasks(branchy_cnn(), TARGET)] == [t.key for t in tasks]
    assert all(isinstance(t, GroupTask) and len(t.config_space) > 1 and t.flop > 0
               for t in tasks)
    other = extract_tasks(branchy_cnn(), TARGET + " -opt-level=2")
    assert not {t.key for t in other} & {t.key for t in tasks}  # the target is in the key


def test_group_workload_round_trips(llvm_target):
    p = plan(branchy_cnn(), tensorforge.Target.parse(TARGET))
    for grp in p.groups:
        assert workload_key(rebuild_group(group_workload(grp))) == workload_key(grp)


def _records_for(tasks, db, skip=()):
    """Record a non-default config of each task (fake costs: no measuring)."""
    chosen = {}
    for t in tasks:
        if t.key in skip:
            continue
        idx = next(i for i in range(len(t.config_space)) if i != t.config_space.default_index)
        db.add_task(t)
        db.add(Record(t.key, t.target_str, idx, t.config(idx).to_json(), [1e-3]))
        db.add(Record(t.key, t.target_str, t.config_space.default_index,
                      t.config(t.config_space.default_index).to_json(), [2e-3]))
        chosen[t.key] = idx
    return chosen


def test_compile_applies_the_best_records(llvm_target, tmp_path):
    g = branchy_cnn()
    tasks = extract_tasks(g, TARGET)
    with Database(tmp_path / "t.db") as db:
        chosen = _records_for(tasks, db)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no task is missing: no warning
        model = tensorforge.compile(g, TARGET, tuning_db=tmp_path / "t.db")
    tuned = [k["schedule"] for k in model.desc["kernels"] if "tuned" in k["schedule"]]
    assert len(tuned) == 4  # the two equal branches share one tuned kernel
    assert {f"tuned config {i} (" for i in chosen.values()} == {
        s[s.index("tuned config"):s.index("(") + 1] for s in tuned}
    assert model.desc["tuning"]["missing"] == [] and len(model.desc["tuning"]["applied"]) == 3
    x = np.random.default_rng(1).standard_normal((1, 8, 16, 16)).astype("float32")
    for got, want in zip(model.run({"x": x}), run_reference(g, {"x": x})):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_compile_reports_tasks_without_records(llvm_target, tmp_path):
    g = branchy_cnn()
    tasks = extract_tasks(g, TARGET)
    with Database(tmp_path / "t.db") as db:
        _records_for(tasks, db, skip={tasks[2].key})
    with pytest.warns(UserWarning, match="1 of 3 tunable kernels has no record") as rec:
        model = tensorforge.compile(g, TARGET, tuning_db=str(tmp_path / "t.db"))
    assert tasks[2].name in str(rec[0].message)
    assert "tuned for" not in str(rec[0].message)  # the records are for this target
    assert model.desc["tuning"]["missing"] == [tasks[2].name]
    with pytest.raises(tensorforge.TensorforgeError, match="does not exist"):
        tensorforge.compile(g, TARGET, tuning_db=tmp_path / "nope.db")


def test_records_tuned_for_another_target_name_both(llvm_target, tmp_path):
    g = branchy_cnn()
    with Database(tmp_path / "t.db") as db:
        _records_for(extract_tasks(g, TARGET), db)
    other = "llvm -num-threads=2"
    with pytest.warns(UserWarning) as rec:
        model = tensorforge.compile(g, other, tuning_db=tmp_path / "t.db")
    msg = str(rec[0].message)
    assert "3 of 3 tunable kernels have no record" in msg
    assert f"for target {other!r}" in msg and f"records tuned for {TARGET!r}" in msg
    assert f"compile with --target {TARGET!r}" in msg
    assert model.desc["tuning"]["tuned_for_other_targets"] == [TARGET]


def test_records_whose_knobs_no_longer_fit_are_not_applied(llvm_target, tmp_path):
    """A record from before a template gained or lost a knob names a config by values the
    space no longer has: applying its config index would pick some other config."""
    g = branchy_cnn()
    tasks = extract_tasks(g, TARGET)
    with Database(tmp_path / "t.db") as db:
        for t in tasks:
            idx = next(i for i in range(len(t.config_space)) if i != t.config_space.default_index)
            knobs = dict(t.config(idx).to_json()["knobs"], knob_of_an_older_schedule=3)
            db.add_task(t)
            db.add(Record(t.key, t.target_str, idx, {"knobs": knobs}, [1e-3]))
    with pytest.warns(UserWarning) as rec:
        model = tensorforge.compile(g, TARGET, tuning_db=tmp_path / "t.db")
    msg = str(rec[0].message)
    assert "3 of 3 tunable kernels have no record" in msg
    assert "records name knobs the schedule no longer has" in msg and "tune them again" in msg
    assert len(model.desc["tuning"]["stale"]) == 3 and not model.desc["tuning"]["applied"]
    space = tasks[0].config_space
    assert space.from_record({}, 1).index == 1  # a record without knobs: by its index
    assert space.from_record({}, len(space)) is None
    good = space.get(1).to_json()
    assert space.from_record(good, 0).index == 1  # by its knobs, whatever its index says


def test_a_group_task_is_measured_in_a_worker(llvm_target, tmp_path):
    """The template rebuilds the group from its JSON workload in a fresh worker process."""
    task = extract_tasks(branchy_cnn(), TARGET)[2]  # the dense: a small space, fast builds
    res = tune_task(task, 3, tuner="random", db=tmp_path / "t.db", seed=0, batch_size=2)
    assert res.n_measured == 3 and not res.errors and res.best is not None


# ---- the scheduler, on synthetic tasks ------------------------------------------------------
@template("test_synthetic.sched")
def _synthetic(cfg, n, base, slope):
    """A space of ``n`` configs; config i costs ``base * (1 + slope * (n - 1 - i))``."""
    cfg.define_knob("i", list(range(n)), default=0)
    cfg.add_flop(1e9 * base)
    return None, []


def _cost(task: Task, index: int) -> float:
    n, base, slope = task.args
    return base * (1 + slope * (n - 1 - index))


class FakeMeasurer:
    """Costs from ``_cost``; records which task each batch measured."""

    def __init__(self):
        self.calls: list[tuple[str, int]] = []

    def reference(self, task):
        return []

    def reference_result(self, task):
        return MeasureResult([_cost(task, task.config_space.default_index)])

    def measure(self, task, indices, check=True, on_result=None):
        self.calls.append((task.key, len(indices)))
        out = [MeasureResult([_cost(task, i)]) for i in indices]
        for k, r in enumerate(out):
            if on_result:
                on_result(k, r)
        return out


def _tasks(*specs):
    return [Task("test_synthetic.sched", (n, base, slope), TARGET, weight=w)
            for n, base, slope, w in specs]


def _sched(tasks, db=None, **kw):
    kw.setdefault("tuner", "grid")  # grid: cost falls with every round, deterministically
    return TaskScheduler(tasks, db or Database(":memory:"), FakeMeasurer(), batch_size=4,
                         eps_greedy=0.0, **kw)


def test_scheduler_warms_up_round_robin_then_follows_the_gain(llvm_target):
    # a heavy task that keeps improving, two light ones with flat spaces
    tasks = _tasks((64, 1e-3, 0.5, 10), (64, 1e-4, 0.0, 1), (64, 1e-4, 0.0, 1))
    s = _sched(tasks, n_trials=80)
    s.tune()
    order = [k for k, _ in s.measurer.calls]
    assert order[:3] == [t.key for t in tasks]  # warm-up: one round each, in order
    rounds = [st.rounds for st in s.states]
    assert rounds[0] >= 15 and rounds[1] + rounds[2] <= 5, rounds
    assert s.stopped == "trials" and s.new_trials == 80
    assert s.states[0].best_cost < s.states[0].default_cost


def test_scheduler_similar_tasks_pull_the_laggard(llvm_target):
    # task 1 reaches a quarter of its sibling's FLOP/s: worth more than its 1/rounds share
    tasks = _tasks((64, 1e-3, 0.0, 1), (64, 4e-3, 0.0, 1))  # flop 1e6 and 4e6
    s = _sched(tasks)
    s.states[0].best_cost, s.states[0].rounds = 1e-3, 4  # 1 GFLOP/s
    s.states[1].best_cost, s.states[1].rounds = 16e-3, 4  # 0.25 GFLOP/s
    # (1 - alpha) * max(c / rounds, c - beta * flop / best similar FLOP/s)
    assert s.gradient(1) == pytest.approx(0.8 * (16e-3 - 2 * 4e6 / 1e9))
    assert s.gradient(0) == pytest.approx(0.8 * 1e-3 / 4)
    s.states[1].history = [40e-3, 30e-3, 20e-3, 16e-3]  # improving lately: the backward term
    assert s.gradient(1) == pytest.approx(0.2 * (40e-3 - 16e-3) / 3 + 0.8 * 8e-3)
    assert math.isinf(_sched(_tasks((4, 1e-3, 0.0, 1))).gradient(0))  # never measured


def test_scheduler_drops_exhausted_and_stalled_tasks(llvm_target):
    tasks = _tasks((6, 1e-3, 0.5, 1), (64, 1e-3, 0.0, 1))
    s = _sched(tasks, early_stopping=8)
    s.tune()
    assert s.states[0].done == "exhausted" and s.states[0].n_measured == 6
    assert s.states[1].done == "early_stopping"  # flat: nothing better after 8 trials
    assert s.stopped == "tasks_done"


def test_scheduler_time_budget_and_resume(llvm_target, tmp_path):
    tasks = _tasks((64, 1e-3, 0.5, 2), (64, 1e-3, 0.2, 1))
    assert _sched(tasks, time_budget=0.0).tune()[0].n_measured == 0
    with Database(tmp_path / "s.db") as db:
        first = _sched(tasks, db, n_trials=20)
        first.tune()
        assert first.total() == 20
        # n_trials counts new trials; the first run's records are used and reported apart
        again = _sched(tasks, db, n_trials=16)
        assert [st.n_measured for st in again.states] == [st.n_measured for st in first.states]
        assert again.earlier == 20
        assert all(st.rounds > 0 for st in again.states)  # no second warm-up
        again.tune()
        assert again.total() == 36 and again.new_trials == 16 and again.stopped == "trials"
        assert len(db.records()) == 36


def test_tune_tasks_runs_any_weighted_tasks(llvm_target, tmp_path):
    """``autotune.tune_tasks``: the search half of ``tune_model``, on tasks that come from no
    graph; the database given by path is opened and closed by it, the notes go to ``log``."""
    from tensorforge.autotune import tune_tasks

    tasks = _tasks((64, 1e-3, 0.5, 2), (64, 1e-3, 0.2, 1))
    notes: list[str] = []
    res = tune_tasks(tasks, TARGET, tmp_path / "t.db", n_trials=16, tuner="grid", batch_size=4,
                     progress="none", plot=True, measurer=FakeMeasurer(), log=notes.append)
    assert res.new_trials == 16 and res.stopped == "trials" and res.tasks == tasks
    assert 0 < res.latency_tuned < res.latency_default
    with Database(tmp_path / "t.db") as db:
        assert len(db.records()) == 16
    # the plot, or the note that says why there is none
    assert (res.plot is not None and (tmp_path / "t-curves.png").exists()) or \
        any("matplotlib" in n for n in notes)


def test_scheduler_keeps_a_reserve_that_grows_with_the_tasks_measured(llvm_target):
    """``reserve(n)`` (the confirmation's time, ``confirm_reserve``) shortens the search as
    it reaches more tasks: here nothing is kept until two tasks are measured, then all."""
    tasks = _tasks((64, 1e-3, 0.5, 1), (64, 1e-3, 0.5, 1), (64, 1e-3, 0.5, 1))
    s = _sched(tasks, time_budget=1e6, reserve=lambda n: 1e6 if n >= 2 else 0.0)
    assert s.search_budget() == 1e6
    s.tune()
    assert s.stopped == "time_budget" and [st.rounds for st in s.states] == [1, 1, 0]
    assert s.search_budget() == 0.0
