"""The cost-model interface the model-based tuner trains and queries, and a simple core model.

A cost model maps feature vectors (``features.py``) to scores, higher meaning faster. It is
trained on ``(features, throughput)`` pairs where throughput is normalized per task (the best
config of a task is 1), so only the order within a task matters; ``groups`` says which rows
belong to which task for models that rank (xgboost's ``rank:pairwise``).

Models come from plugins (``register_cost_models``: ``CostModel("xgboost", "module:Class")``)
or from core (``"ridge"``); :func:`create_cost_model` finds either by name.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any

import numpy as np

from ..errors import PluginError, TensorforgeError

__all__ = ["BUILTIN_COST_MODELS", "CostModel", "CostModelUnavailable", "RidgeCostModel",
           "create_cost_model"]


class CostModel(ABC):
    """Predicts how fast candidates are from their feature vectors."""

    fitted: bool = False

    @abstractmethod
    def fit(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> None:
        """Train on features ``X`` (n x d) and throughputs ``y`` (n,), higher is better;
        ``groups`` (n,) labels the task of each row."""

    @abstractmethod
    def predict(self, X: np.ndarray) -> np.ndarray:
        """Scores (n,), higher is better; only their order is meaningful."""

    @abstractmethod
    def save(self, path: str) -> None: ...

    @abstractmethod
    def load(self, path: str) -> None: ...


class RidgeCostModel(CostModel):
    """Ridge regression on standardized features and their squares (numpy only).

    A small, dependency-free model: good enough to rank tile sizes on simple spaces, and the
    fallback when the xgboost plugin is not installed.
    """

    def __init__(self, alpha: float = 1.0):
        self.alpha = alpha
        self.mean: np.ndarray | None = None
        self.std: np.ndarray | None = None
        self.w: np.ndarray | None = None

    def _design(self, X: np.ndarray) -> np.ndarray:
        assert self.mean is not None and self.std is not None
        Z = (np.asarray(X, dtype=np.float64) - self.mean) / self.std
        return np.hstack([Z, Z * Z, np.ones((len(Z), 1))])

    def fit(self, X: np.ndarray, y: np.ndarray, groups: np.ndarray | None = None) -> None:
        X = np.asarray(X, dtype=np.float64)
        self.mean = X.mean(axis=0)
        self.std = X.std(axis=0) + 1e-6
        D = self._design(X)
        reg = self.alpha * np.eye(D.shape[1])
        reg[-1, -1] = 0.0
        self.w = np.linalg.solve(D.T @ D + reg, D.T @ np.asarray(y, dtype=np.float64))
        self.fitted = True

    def predict(self, X: np.ndarray) -> np.ndarray:
        if self.w is None:
            return np.zeros(len(X))
        return self._design(X) @ self.w

    def save(self, path: str) -> None:
        data = {"alpha": self.alpha, "mean": _list(self.mean), "std": _list(self.std),
                "w": _list(self.w)}
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f)

    def load(self, path: str) -> None:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        self.alpha = data["alpha"]
        self.mean, self.std, self.w = (None if data[k] is None else np.asarray(data[k])
                                       for k in ("mean", "std", "w"))
        self.fitted = self.w is not None


def _list(a: np.ndarray | None) -> list[float] | None:
    return None if a is None else a.tolist()


BUILTIN_COST_MODELS: dict[str, type[CostModel]] = {"ridge": RidgeCostModel}


class LookupByNameError(TensorforgeError, KeyError):
    """Nothing usable under that name (a ``KeyError`` too, for older callers)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class CostModelUnavailable(LookupByNameError):
    """A cost model is not registered (its plugin missing or disabled) or cannot be created
    (its library is not installed)."""


def create_cost_model(name: str = "xgboost", **options: Any) -> CostModel:
    """A new model by name: a core one (``"ridge"``) or one a plugin registered."""
    if name in BUILTIN_COST_MODELS:
        return BUILTIN_COST_MODELS[name](**options)
    from ..plugins import get_registry
    from ..plugins.known import COST_MODEL_DISTRIBUTIONS
    from ..plugins.status import missing_plugin_hint

    reg = get_registry().cost_models
    if name not in reg:
        known = ", ".join(sorted({*BUILTIN_COST_MODELS, *reg}))
        hint = (f" ({missing_plugin_hint(*COST_MODEL_DISTRIBUTIONS[name])})"
                if name in COST_MODEL_DISTRIBUTIONS else "")
        raise CostModelUnavailable(f"no cost model {name!r}{hint}; available: {known}")
    try:
        return reg[name].load_factory()(**options)
    except (ImportError, PluginError) as exc:
        raise CostModelUnavailable(f"cost model {name!r} from {reg[name].distribution} cannot be "
                                   f"created: {exc}") from exc
