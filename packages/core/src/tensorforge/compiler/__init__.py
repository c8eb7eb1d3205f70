"""The compile pipeline: model -> graph passes -> fused groups -> one kernel per group (TE
compute + strategy or generic schedule, lowered and built in one module) -> CompiledModel."""

from .compile import compile, load_graph, plan
from .kernels import build_group_te, schedule_group

__all__ = ["build_group_te", "compile", "load_graph", "plan", "schedule_group"]
