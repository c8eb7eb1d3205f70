"""The automated optimizer: config spaces, tasks, tuners, cost models, measurement, records.

    task = Task("matmul_packed.llvm", (512, 512, 512), "llvm -num-threads=1")
    result = tune_task(task, n_trials=200, tuner="xgb", db="tuning.db")
    s, args = apply_best(task, db="tuning.db")

Submodules: ``space`` (knobs, configs), ``template`` (``@template`` registry), ``task``,
``features``, ``cost_model``, ``sa``, ``tuner``, ``measure`` (builder, runner, error classes),
``executor`` (local pool, Ray), ``database`` (SQLite records), ``tune`` (the loop of one
task), ``scheduler`` (one budget over many tasks), ``report`` (progress display, tuning
curves), ``tune_tasks`` (scheduler, measurer, display and plot: the search half of
``tforge tune``).

The search engine sits below the operators and the compiler and imports neither: the tunable
templates live beside the operators they schedule (``tensorforge.ops.templates_cpu``,
``templates_gpu``), a model's tasks and ``tune_model`` in the compiler
(``tensorforge.compiler.group_tasks``, ``model_tuning``).

    tune_model("resnet18.onnx", "llvm -num-threads=1", db="tuning.db", time_budget="10m")

``tune_model`` is ``tensorforge.tune_model``: this package hands the name over to the package
root on first use (the documented ``from tensorforge.autotune import tune_model`` works).
"""

from typing import Any

from .cost_model import CostModel, CostModelUnavailable, RidgeCostModel, create_cost_model
from .database import Database, Record, TuningDatabaseError
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
from .scheduler import TaskScheduler
from .space import ConfigEntity, ConfigSpace, FallbackConfig
from .task import Task
from .template import get_template, list_templates, template
from .tune import Progress, TuneResult, TuningSession, apply_best, progress_printer, tune_task
from .tune_tasks import TuneModelResult, tune_tasks
from .tuner import GATuner, GridTuner, ModelBasedTuner, RandomTuner, Tuner, create_tuner

__all__ = [
    "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_RESULT",
    "Builder", "ConfigEntity", "ConfigSpace", "CostModel", "CostModelUnavailable", "Database",
    "Executor",
    "FallbackConfig", "GATuner", "GridTuner", "LocalExecutor", "MeasureResult",
    "Measurer", "ModelBasedTuner", "Progress", "RandomTuner", "RayExecutor", "Record",
    "RidgeCostModel", "Runner", "Task", "TaskScheduler", "TuneModelResult", "TuneResult",
    "Tuner", "TuningDatabaseError", "TuningSession",
    "apply_best", "create_cost_model", "create_tuner", "get_template",
    "list_templates", "progress_printer", "template", "tune_model", "tune_task", "tune_tasks",
]

#: names this package exported before they moved above it: where they live now
MOVED = {"extract_tasks": "tensorforge.compiler.model_tuning",
         "GroupTask": "tensorforge.compiler.group_tasks"}


def __getattr__(name: str) -> Any:
    if name == "tune_model":  # it plans a model: the compiler's, reached through the root
        import tensorforge

        return tensorforge.tune_model
    if name in MOVED:  # an ImportError: ``from tensorforge.autotune import ...`` shows it
        raise ImportError(f"tensorforge.autotune.{name} moved to {MOVED[name]} (the search "
                             f"engine does not know graphs): from {MOVED[name]} import {name}")
    raise AttributeError(f"module 'tensorforge.autotune' has no attribute {name!r}")
