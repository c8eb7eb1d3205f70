"""Graph passes, each a named function `Graph -> Graph` run in a visible pipeline
(`pipeline.py`), then `fuse_ops` (graph -> fused groups) and `plan_memory` (groups -> plan)."""

from .fold import fold_batch_norm, fold_constants
from .fuse import fuse_ops
from .layout import layout_transform
from .memory import plan_memory
from .pipeline import GraphPassContext, default_graph_passes, optimize, run_graph_passes
from .simplify import copy_graph, eliminate_common_subexpr, eliminate_dead_code, infer_types

__all__ = [
    "GraphPassContext", "copy_graph", "default_graph_passes", "eliminate_common_subexpr",
    "eliminate_dead_code", "fold_batch_norm", "fold_constants", "fuse_ops", "infer_types",
    "layout_transform", "optimize", "plan_memory", "run_graph_passes",
]
