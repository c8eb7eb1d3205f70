"""``XGBoostCostModel``: gradient-boosted trees ranking candidates (``rank:pairwise``).

``xgboost`` is imported when a model is first fitted, predicted or loaded, never at plugin
discovery. Rows are grouped by task (the ``groups`` argument) so pairs are only formed
within a task: throughputs of different operators are not comparable.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from tensorforge.autotune.cost_model import CostModel

__all__ = ["XGBoostCostModel"]


class XGBoostCostModel(CostModel):
    """Pairwise-ranking boosted trees over loop-program features."""

    def __init__(self, num_boost_round: int = 60, objective: str = "rank:pairwise",
                 **params: Any):
        if importlib.util.find_spec("xgboost") is None:  # fail here, not at the first fit
            raise ImportError("the xgboost library is not installed: pip install xgboost-cpu "
                              "(or xgboost)")
        self.num_boost_round = num_boost_round
        self.params = {"max_depth": 6, "eta": 0.3, "gamma": 1e-4, "min_child_weight": 1,
                       "subsample": 1.0, "lambda": 1.0, "alpha": 0.0, "nthread": 1,
                       "objective": objective, "verbosity": 0, **params}
        self.booster: Any = None

    @staticmethod
    def _xgb() -> Any:
        import xgboost

        return xgboost

    def fit(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> None:
        xgb = self._xgb()
        X = np.asarray(X, dtype=np.float32)
        y = np.asarray(y, dtype=np.float32)
        if groups is None:
            groups = np.zeros(len(y), dtype=np.int64)
        order = np.argsort(groups, kind="stable")  # ranking wants each group contiguous
        X, y, groups = X[order], y[order], np.asarray(groups)[order]
        dtrain = xgb.DMatrix(X, label=y)
        if self.params["objective"].startswith("rank:"):
            _, sizes = np.unique(groups, return_counts=True)
            dtrain.set_group(sizes.tolist())
        self.booster = xgb.train(self.params, dtrain, self.num_boost_round)
        self.fitted = True

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.booster is None:
            return np.zeros(len(X))
        xgb = self._xgb()
        return self.booster.predict(xgb.DMatrix(np.asarray(X, dtype=np.float32)))

    def save(self, path: str) -> None:
        if self.booster is None:
            raise ValueError("the model is not fitted")
        self.booster.save_model(path)

    def load(self, path: str) -> None:
        xgb = self._xgb()
        self.booster = xgb.Booster({"nthread": self.params["nthread"]})
        self.booster.load_model(path)
        self.fitted = True
