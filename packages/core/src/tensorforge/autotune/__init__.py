"""The automated optimizer: config spaces, tasks, tuners, cost models, measurement, records.

    task = Task("matmul_packed.llvm", (512, 512, 512), "llvm -num-threads=1")
    result = tune_task(task, n_trials=200, tuner="xgb", db="tuning.db")
    s, args = apply_best(task, db="tuning.db")

Submodules: ``space`` (knobs, configs), ``template`` (``@template`` registry),
``templates_cpu`` (tunable CPU templates), ``task``, ``features``, ``cost_model``, ``sa``,
``tuner``, ``measure`` (builder, runner, error classes), ``executor`` (local pool, Ray),
``database`` (SQLite records), ``tune`` (the loop).
"""

from .cost_model import CostModel, RidgeCostModel, create_cost_model
from .database import Database, Record
from .executor import Executor, LocalExecutor, RayExecutor
from .measure import (
    COMPILE_ERROR,
    RUNTIME_ERROR,
    TIMEOUT,
    WRONG_RESULT,
    Builder,
    Measurer,
    MeasureResult,
    Runner,
)
from .space import ConfigEntity, ConfigSpace, FallbackConfig
from .task import Task
from .template import get_template, list_templates, template
from .tune import Progress, TuneResult, apply_best, progress_printer, tune_task
from .tuner import GATuner, GridTuner, ModelBasedTuner, RandomTuner, Tuner, create_tuner

__all__ = [
    "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_RESULT",
    "Builder", "ConfigEntity", "ConfigSpace", "CostModel", "Database", "Executor",
    "FallbackConfig", "GATuner", "GridTuner", "LocalExecutor", "MeasureResult", "Measurer",
    "ModelBasedTuner", "Progress", "RandomTuner", "RayExecutor", "Record", "RidgeCostModel",
    "Runner", "Task", "TuneResult", "Tuner", "apply_best", "create_cost_model",
    "create_tuner", "get_template", "list_templates", "progress_printer", "template",
    "tune_task",
]
