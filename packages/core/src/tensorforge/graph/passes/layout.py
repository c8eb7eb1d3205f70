"""The data-layout stage: a hook a target drives through `register_passes(..., "graph.layout")`.

Core converts nothing yet (issue 5 converts conv chains to NCHW[x]c on SIMD CPUs); this pass
runs the target's registered `graph.layout` passes, highest priority first."""

from __future__ import annotations

import inspect
from typing import Any

from ..ir import Graph


def run_plugin_passes(g: Graph, target: Any, stage: str) -> Graph:
    """Run the passes plugins registered for `target` at `stage` (`func(g)` or
    `func(g, target)`), in priority order."""
    if target is None:
        return g
    from ...plugins import get_registry

    for p in get_registry().passes(target, stage):
        fn = p.load_func()
        try:
            nparams = len(inspect.signature(fn).parameters)
        except (TypeError, ValueError):
            nparams = 1
        out = fn(g, target) if nparams >= 2 else fn(g)
        g = g if out is None else out
    return g


def layout_transform(g: Graph, target: Any = None) -> Graph:
    """Convert data layouts for `target` (the `graph.layout` stage)."""
    return run_plugin_passes(g, target, "graph.layout")
