"""The best configs are timed again beside the default before a model uses them
(``autotune.confirm``): a lucky first timing does not win."""

from __future__ import annotations

import time

import pytest

from tensorforge.autotune import Database, Record
from tensorforge.autotune.confirm import confirm_best
from tensorforge.autotune.measure import MeasureResult
from tensorforge.autotune.task import Task
from tensorforge.autotune.template import template
from tensorforge.autotune.tune_tasks import CONFIRM_SHARE, confirm_reserve, tune_tasks

TARGET = "llvm -num-threads=1"


@pytest.fixture(autouse=True)
def _llvm(llvm_target):
    """The tasks name an llvm target (nothing is compiled: the measurers are synthetic)."""


@template("test_confirm.space")
def _space(cfg, n):
    """``n`` configs; the default is config 0."""
    cfg.define_knob("i", list(range(n)), default=0)
    cfg.add_flop(1e9)
    return None, []


class LuckyMeasurer:
    """True costs per config; ``lucky`` configs read faster the first time they are timed
    (a quiet moment of the machine), then their true cost."""

    def __init__(self, true: dict[int, float], lucky: dict[int, float] | None = None,
                 fail: set[int] | None = None):
        self.true, self.lucky, self.fail = true, dict(lucky or {}), fail or set()
        self.timed: list[int] = []

    def reference(self, task):
        return []

    def reference_result(self, task):
        return MeasureResult([self.true[0]])

    def measure(self, task, indices, check=True, on_result=None):
        out = []
        for i in indices:
            self.timed.append(i)
            if i in self.fail and len(self.timed) > 1:
                out.append(MeasureResult([], "RUNTIME_ERROR", "crashed"))
                continue
            c = self.lucky.pop(i) if i in self.lucky else self.true[i]
            out.append(MeasureResult([c, c, c]))
        for k, r in enumerate(out):
            if on_result:
                on_result(k, r)
        return out


def _task(n=4, weight=1.0):
    return Task("test_confirm.space", (n,), TARGET, weight=weight)


def _db_with(task, costs):
    db = Database(":memory:")
    db.add_task(task)
    for i, c in costs.items():
        db.add(Record(task.key, task.target_str, i, task.config_space.get(i).to_json(), [c]))
    return db


def _confirm(recorded, true, **kw):
    """A task whose search recorded ``recorded`` costs, confirmed against ``true`` ones."""
    task = _task()
    db = _db_with(task, recorded)
    m = LuckyMeasurer(true, **kw)
    return task, db, m, confirm_best([task], db, m)


def test_a_lucky_best_loses_and_the_next_best_is_confirmed():
    # recorded: config 1 looked best (0.5) but really costs 1.2; config 2 is really 0.9
    task, db, m, s = _confirm({0: 1.0, 1: 0.5, 2: 0.8, 3: 1.5}, {0: 1.0, 1: 1.2, 2: 0.9, 3: 1.5})
    assert db.best(task.key, task.target_str).config_index == 2
    assert db.best(task.key, task.target_str).cost == 0.9
    assert m.timed == [0, 1, 1, 0, 0, 2, 2, 0]  # ABBA pairs: drift falls on both
    assert (s.confirmed, s.reverted, s.skipped) == (1, 0, 0)


def test_the_default_is_kept_when_no_config_beats_it_again():
    task, db, _, s = _confirm({0: 1.0, 1: 0.5, 2: 0.8, 3: 0.9},
                              {0: 1.0, 1: 1.2, 2: 1.1, 3: 1.05})
    # three rounds at most: configs 1, 2 and 3 each lost to the default
    assert db.best(task.key, task.target_str).config_index == 0
    assert (s.confirmed, s.reverted) == (1, 1)


def test_a_failed_retiming_leaves_the_records():
    task, db, _, s = _confirm({0: 1.0, 1: 0.5}, {0: 1.0, 1: 1.2}, fail={1})
    best = db.best(task.key, task.target_str)
    assert (best.config_index, best.cost) == (1, 0.5) and s.confirmed == 1


def test_tasks_go_by_weighted_gain_and_a_deadline_leaves_the_rest():
    small, big = _task(4, weight=1.0), _task(5, weight=10.0)
    db = _db_with(small, {0: 1.0, 1: 0.9})
    db.add_task(big)
    for i, c in {0: 1.0, 1: 0.5}.items():
        db.add(Record(big.key, big.target_str, i, big.config_space.get(i).to_json(), [c]))
    m = LuckyMeasurer({0: 1.0, 1: 0.95, 2: 1.0, 3: 1.0, 4: 1.0})
    s = confirm_best([small, big], db, m, deadline=time.monotonic() - 1)
    assert (s.confirmed, s.skipped) == (0, 2) and m.timed == []
    confirm_best([small, big], db, m)
    assert db.best(small.key, small.target_str).cost == 0.95  # both confirmed, big first


def test_tune_tasks_confirms_unless_told_not_to():
    for confirm, want in ((False, 3), (True, 2)):
        task = _task()
        db = Database(":memory:")
        # config 3 reads 0.3 the one time the search times it; really 1.3
        m = LuckyMeasurer({0: 1.0, 1: 1.1, 2: 0.8, 3: 1.3}, lucky={3: 0.3})
        res = tune_tasks([task], TARGET, db, n_trials=4, tuner="grid", measurer=m,
                         progress="none", plot=False, log=lambda line: None, confirm=confirm)
        assert db.best(task.key, task.target_str).config_index == want
        assert (res.confirmed is not None) == confirm
        if confirm:
            assert res.states[0].best_cost == 0.8 and res.latency_tuned == 0.8


def test_confirm_reserve_grows_with_the_task_count_up_to_half() -> None:
    assert confirm_reserve(600, 10) == 600 * CONFIRM_SHARE  # few tasks: the floor
    few, many = confirm_reserve(180, 26), confirm_reserve(180, 71)
    assert few == 180 * CONFIRM_SHARE < many <= 90
    assert confirm_reserve(60, 500) == 30  # never more than half the budget
