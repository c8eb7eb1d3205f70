"""Registers the XGBoost cost model. ``xgboost`` is imported only when the model is created."""

from __future__ import annotations

from tensorforge.plugins import CostModel, hookimpl


@hookimpl
def register_cost_models(register):
    register(CostModel("xgboost", "tensorforge_xgboost.model:XGBoostCostModel",
                       "gradient-boosted trees over loop-program features"))
