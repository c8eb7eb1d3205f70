"""The automated optimizer: config spaces, tasks, tuners, cost models, measurement, records.

    task = Task("matmul_packed.llvm", (512, 512, 512), "llvm -num-threads=1")
    result = tune_task(task, n_trials=200, tuner="xgb", db="tuning.db")
    s, args = apply_best(task, db="tuning.db")

Submodules: ``space`` (knobs, configs), ``template`` (``@template`` registry),
``templates_cpu`` (tunable CPU templates), ``task``, ``features``, ``cost_model``, ``sa``,
``tuner``, ``measure`` (builder, runner, error classes), ``executor`` (local pool, Ray),
``database`` (SQLite records), ``tune`` (the loop of one task), ``graph_tasks`` (a model's
tasks, records applied by ``compile``), ``scheduler`` (one budget over a model's tasks),
``report`` (progress display, tuning curves), ``tune_model`` (what ``tforge tune`` runs).

    tune_model("resnet18.onnx", "llvm -num-threads=1", db="tuning.db", time_budget="10m")
"""

from .cost_model import CostModel, CostModelUnavailable, RidgeCostModel, create_cost_model
from .database import Database, Record, TuningDatabaseError
from .executor import Executor, LocalExecutor, RayExecutor
from .graph_tasks import GroupTask, extract_tasks
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
from .tune_model import tune_model
from .tuner import GATuner, GridTuner, ModelBasedTuner, RandomTuner, Tuner, create_tuner

__all__ = [
    "COMPILE_ERROR", "RUNTIME_ERROR", "TIMEOUT", "WRONG_RESULT",
    "Builder", "ConfigEntity", "ConfigSpace", "CostModel", "CostModelUnavailable", "Database",
    "Executor",
    "FallbackConfig", "GATuner", "GridTuner", "GroupTask", "LocalExecutor", "MeasureResult",
    "Measurer", "ModelBasedTuner", "Progress", "RandomTuner", "RayExecutor", "Record",
    "RidgeCostModel", "Runner", "Task", "TaskScheduler", "TuneResult", "Tuner",
    "TuningDatabaseError", "TuningSession",
    "apply_best", "create_cost_model", "create_tuner", "extract_tasks", "get_template",
    "list_templates", "progress_printer", "template", "tune_model", "tune_task",
]
