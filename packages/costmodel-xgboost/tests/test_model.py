"""The XGBoost cost model: ranking quality, save/load, lazy import, the xgb tuner."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

from tensorforge.autotune import Database, Task, create_cost_model, tune_task
from tensorforge.testing.autotune_templates import SyntheticMeasurer

pytest.importorskip("xgboost", reason="xgboost-cpu is not installed")


@pytest.fixture
def xgb_plugin(plugins):
    plugins.register("tensorforge_xgboost.plugin", "xgboost",
                     distribution="tensorforge-costmodel-xgboost")


def _ranking_data(seed: int, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 5, (n, 8)).astype(np.float32)
    y = np.exp(-((X[:, 0] - 2) ** 2) - 0.5 * (X[:, 1] - 3) ** 2) + 0.1 * X[:, 2]
    return X, y / y.max()


def test_ranks_and_round_trips(xgb_plugin, tmp_path) -> None:
    model = create_cost_model("xgboost")
    X, y = _ranking_data(0)
    model.fit(X, y, np.zeros(len(y), dtype=int))
    Xt, yt = _ranking_data(1)
    pred = model.predict(Xt)
    top = np.argsort(-pred)[:10]
    assert yt[top].mean() > np.quantile(yt, 0.8)  # its top-10 are among the fastest
    model.save(str(tmp_path / "m.json"))
    again = create_cost_model("xgboost")
    again.load(str(tmp_path / "m.json"))
    np.testing.assert_allclose(again.predict(Xt), pred, rtol=1e-6)


def test_plugin_import_does_not_load_xgboost() -> None:
    code = ("import sys, tensorforge_xgboost.plugin, tensorforge_xgboost.model; "
            "assert 'xgboost' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_xgb_tuner_beats_the_default(xgb_plugin, llvm_target) -> None:
    def cost(cfg) -> float:
        c = 1.0 + abs(math.log2(cfg["tile_m"].size[1]) - 2)
        c += 0.7 * abs(math.log2(cfg["tile_n"].size[1]) - 6)
        return c * 1e-3

    task = Task("matmul_packed.llvm", (64, 64, 64), "llvm -num-threads=1")
    res = tune_task(task, 40, tuner="xgb", db=Database(":memory:"),
                    measurer=SyntheticMeasurer(cost), batch_size=8, seed=0,
                    sa_chains=8, sa_steps=20)
    assert res.best.cost <= 1.0e-3 + 1e-12  # found the optimum of the tiles
    assert res.best.cost < cost(task.config(task.config_space.default_index))


def test_xgb_tuner_falls_back_to_ridge_once_without_xgboost(xgb_plugin, llvm_target,
                                                           monkeypatch) -> None:
    """The plugin is registered but the xgboost library is missing: the default tuner
    still tunes, on core's ridge model, and says so once."""
    import importlib.util

    import tensorforge.autotune.tuner as tuner_mod
    from tensorforge.autotune import CostModelUnavailable, RidgeCostModel, create_tuner
    from tensorforge.autotune.tuner import CostModelFallbackWarning

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "xgboost" else real(name, *a))
    monkeypatch.setattr(tuner_mod, "_fallbacks_said", set())
    with pytest.raises(CostModelUnavailable, match="pip install xgboost"):
        create_cost_model("xgboost")  # asked for by name: an error, not a fallback
    task = Task("matmul_packed.llvm", (16, 32, 16), "llvm -num-threads=1")
    with pytest.warns(CostModelFallbackWarning, match="built-in ridge") as said:
        tuners = [create_tuner("xgb", task, seed=s) for s in range(3)]
    assert len(said) == 1
    assert all(isinstance(t.model, RidgeCostModel) for t in tuners)
    res = tune_task(task, 12, tuner="xgb", db=Database(":memory:"), batch_size=4,
                    measurer=SyntheticMeasurer(lambda cfg: 1e-3))
    assert res.n_measured == 12
