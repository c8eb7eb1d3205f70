"""Tuners on a toy cost over the matmul template's space (synthetic measurements)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

import tensorforge
from tensorforge.autotune import (
    Database,
    GATuner,
    GridTuner,
    RidgeCostModel,
    Task,
    apply_best,
    create_tuner,
    tune_task,
)
from tensorforge.autotune.sa import simulated_annealing
from tensorforge.autotune.space import ConfigSpace
from tensorforge.autotune.tune import transfer_data
from tensorforge.testing.autotune_templates import SyntheticMeasurer

BEST = {"tile_m": 4, "tile_n": 64, "tile_k": 8}


def toy_cost(cfg) -> float:
    """Smooth in log2 of the tiles; optimum at BEST, row_outer, [none, unroll]."""
    c = 1.0
    for name, w in (("tile_m", 1.0), ("tile_n", 0.7), ("tile_k", 0.5)):
        c += w * abs(math.log2(cfg[name].size[1]) - math.log2(BEST[name]))
    c += 0.0 if cfg["order"].val == "row_outer" else 0.5
    c += 0.0 if cfg["unroll_mk"].anns == ("none", "unroll") else 0.3
    return c * 1e-3


@pytest.fixture
def task(llvm_target) -> Task:
    return Task("matmul_packed.llvm", (64, 64, 64), "llvm -num-threads=1")


@pytest.mark.parametrize("tuner", ["random", "ga", "ridge"])
def test_tuners_beat_the_default(task: Task, tuner: str) -> None:
    default_cost = toy_cost(task.config(task.config_space.default_index))
    db = Database(":memory:")
    opts = {"sa_chains": 8, "sa_steps": 20} if tuner == "ridge" else {}
    res = tune_task(task, 48, tuner=tuner, db=db, measurer=SyntheticMeasurer(toy_cost),
                    batch_size=8, seed=1, **opts)
    assert res.n_measured == 48 == db.count(task.key)
    assert res.best.cost < default_cost
    indices = [r.config_index for r in db.records(task.key)]
    assert len(set(indices)) == len(indices)
    if tuner == "ridge":  # the model-based search homes in on the optimum
        assert res.best.cost <= 2.0e-3


def test_grid_tuner_walks_the_index_order(task: Task) -> None:
    g = GridTuner(task)
    g.visited.add(1)
    assert g.next_batch(3) == [0, 2, 3] and g.next_batch(2) == [4, 5]


def test_ga_tuner_proposes_unvisited(task: Task) -> None:
    ga = GATuner(task, seed=0, pop_size=8)
    m = SyntheticMeasurer(toy_cost)
    for _ in range(5):
        batch = ga.next_batch(8)
        assert len(set(batch)) == 8 and not set(batch) & ga.visited
        ga.update(batch, m.measure(task, batch))


def test_early_stopping_and_resume_counts(task: Task) -> None:
    db = Database(":memory:")
    res = tune_task(task, 200, tuner="random", db=db, measurer=SyntheticMeasurer(lambda c: 1e-3),
                    early_stopping=10, batch_size=4, seed=0)
    assert res.stopped == "early_stopping" and res.n_measured < 20
    m = SyntheticMeasurer(toy_cost)
    res2 = tune_task(task, res.n_measured + 8, tuner="random", db=db, measurer=m, seed=0)
    assert res2.n_measured == res.n_measured + 8 and len(m.measured) == 8


def test_simulated_annealing_finds_the_top(task: Task) -> None:
    space = task.config_space
    target = np.asarray([-toy_cost(space.get(i)) for i in range(len(space))])
    best, chains = simulated_annealing(space, lambda idx: target[list(idx)], top_k=8,
                                       n_chains=16, n_steps=80, rng=random.Random(0))
    assert len(best) == 8 and len(chains) == 16
    assert target[best[0]] >= np.sort(target)[-3]  # among the 3 best of 1440


def test_sa_respects_exclude() -> None:
    sp = ConfigSpace()
    sp.define_knob("a", list(range(10)))
    best, _ = simulated_annealing(sp, lambda idx: np.asarray(idx, float), top_k=3,
                                  exclude={9}, n_chains=4, n_steps=30, rng=random.Random(0))
    assert best == [8, 7, 6]


def test_transfer_learning_pretrains(task: Task, llvm_target) -> None:
    db = Database(":memory:")
    other = Task("matmul_packed.llvm", (32, 64, 32), "llvm -num-threads=1")
    tune_task(other, 24, tuner="random", db=db, measurer=SyntheticMeasurer(toy_cost), seed=0)
    X, y, g = transfer_data(db, task.target_str, task.key)
    assert X.shape[0] == 24 and y.max() == 1.0 and set(g) == {0}
    tn = create_tuner("ridge", task, seed=0, sa_chains=8, sa_steps=20)
    assert not tn.model.fitted
    tn.pretrain(X, y, g)
    assert tn.model.fitted
    batch = tn.next_batch(8)  # proposed by the transferred model, not at random
    costs = [toy_cost(task.config(i)) for i in batch]
    default = toy_cost(task.config(task.config_space.default_index))
    assert min(costs) < default


def test_ridge_save_load(tmp_path) -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 6))
    y = X[:, 0] - 2 * X[:, 1]
    m = RidgeCostModel(alpha=0.1)
    m.fit(X, y)
    m.save(str(tmp_path / "m.json"))
    m2 = RidgeCostModel()
    m2.load(str(tmp_path / "m.json"))
    np.testing.assert_allclose(m.predict(X), m2.predict(X))
    assert np.corrcoef(m.predict(X), y)[0, 1] > 0.95


def test_apply_best(task: Task) -> None:
    db = Database(":memory:")
    s, args = apply_best(task, db=db)  # nothing recorded: the default config
    default = task.instantiate(None)
    assert str(tensorforge.lower(s, args)) == str(tensorforge.lower(*default))
    res = tune_task(task, 16, tuner="random", db=db, measurer=SyntheticMeasurer(toy_cost),
                    seed=3)
    s, args = apply_best(task, task.target_str, db)
    want = task.instantiate(res.best.config_index)
    assert str(tensorforge.lower(s, args)) == str(tensorforge.lower(*want))
