"""The data-layout stage: a hook a target drives through `register_passes(..., "graph.layout")`.

This pass runs the target's registered `graph.layout` passes, highest priority first (the llvm
plugin converts conv chains to NCHW[x]c); for a device target it also places the nodes and
runs the host's layout passes on the host's nodes."""

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


def layout_transform(g: Graph, target: Any = None, host: Any = None) -> Graph:
    """Convert data layouts for `target` (the `graph.layout` stage). For a device target with
    a `host`: the target's passes (which may claim nodes), then placement of the rest, then
    the host's passes on the host's nodes (see `placement.py`)."""
    g = run_plugin_passes(g, target, "graph.layout")
    if target is None or target.kind.device_type == "cpu":
        return g
    from .placement import mark_new, place

    g = place(g, target, host)
    if host is None:
        return g
    return mark_new(run_plugin_passes(g, host, "graph.layout"), host)
