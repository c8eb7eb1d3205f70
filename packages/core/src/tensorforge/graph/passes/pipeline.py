"""The graph pass pipeline: named passes in order, with switches to print the graph before or
after any pass (`GraphPassContext(print_after={"fold_constants"})`, or the environment
variables `TENSORFORGE_PRINT_GRAPH_AFTER` / `TENSORFORGE_PRINT_GRAPH_BEFORE` = comma list or
"all") and to disable passes (`disabled={...}` or `TENSORFORGE_DISABLE_GRAPH_PASSES`).

`optimize(graph, target, opt_level)` copies the graph, runs the pipeline, and returns the
optimized graph; the compiler then calls `fuse_ops` and `plan_memory`."""

from __future__ import annotations

import contextvars
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from ..ir import Graph
from .fold import fold_batch_norm, fold_constants
from .layout import layout_transform, run_plugin_passes
from .simplify import copy_graph, eliminate_common_subexpr, eliminate_dead_code, infer_types

GraphPass = Callable[[Graph], Graph]


@dataclass
class GraphPassContext:
    print_before: set[str] = field(default_factory=set)
    print_after: set[str] = field(default_factory=set)
    disabled: set[str] = field(default_factory=set)
    stream: TextIO | None = None

    def __enter__(self) -> GraphPassContext:
        self._token = _CTX.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _CTX.reset(self._token)

    @staticmethod
    def current() -> GraphPassContext:
        ctx = _CTX.get()
        if ctx is not None:
            return ctx
        return GraphPassContext(_env_set("TENSORFORGE_PRINT_GRAPH_BEFORE"),
                                _env_set("TENSORFORGE_PRINT_GRAPH_AFTER"),
                                _env_set("TENSORFORGE_DISABLE_GRAPH_PASSES"))


_CTX: contextvars.ContextVar[GraphPassContext | None] = contextvars.ContextVar(
    "tensorforge_graph_pass_context", default=None)


def _env_set(name: str) -> set[str]:
    return {x.strip() for x in os.environ.get(name, "").split(",") if x.strip()}


def _wants(names: set[str], name: str) -> bool:
    return "all" in names or name in names


def run_graph_passes(g: Graph, passes: Iterable[tuple[str, GraphPass]]) -> Graph:
    ctx = GraphPassContext.current()
    out = ctx.stream or sys.stdout
    for name, fn in passes:
        if name in ctx.disabled:
            continue
        if _wants(ctx.print_before, name):
            print(f"# graph before {name}\n{g}\n", file=out)
        g = fn(g)
        if _wants(ctx.print_after, name):
            print(f"# graph after {name}\n{g}\n", file=out)
    return g


def default_graph_passes(target: Any = None, opt_level: int = 3) -> list[tuple[str, GraphPass]]:
    """The pipeline, in order. opt-level 0 only checks types and drops dead nodes."""
    passes: list[tuple[str, GraphPass]] = [("infer_types", infer_types)]
    if opt_level >= 1:
        passes += [
            ("plugin_before_fusion", partial(run_plugin_passes, target=target,
                                             stage="graph.before_fusion")),
            ("fold_batch_norm", fold_batch_norm),
            ("fold_constants", fold_constants),
            ("eliminate_common_subexpr", eliminate_common_subexpr),
        ]
    if opt_level >= 2:
        passes.append(("layout_transform", partial(layout_transform, target=target)))
    if opt_level >= 1:
        passes.append(("fold_constants_after_layout", fold_constants))
    passes += [("eliminate_dead_code", eliminate_dead_code),
               ("infer_types_final", infer_types)]
    return passes


PASS_NAMES = tuple(name for name, _ in default_graph_passes())


def optimize(g: Graph, target: Any = None, opt_level: int = 3) -> Graph:
    """A copy of `g` after the graph pipeline (the input graph is not modified)."""
    return run_graph_passes(copy_graph(g), default_graph_passes(target, opt_level))
