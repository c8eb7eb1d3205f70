"""The graph pass pipeline: named passes in order, with switches to print the graph before or
after any pass (`GraphPassContext(print_after={"fold_constants"})`, or the environment
variables `TENSORFORGE_PRINT_GRAPH_AFTER` / `TENSORFORGE_PRINT_GRAPH_BEFORE` = comma list or
"all") and to disable passes (`disabled={...}` or `TENSORFORGE_DISABLE_GRAPH_PASSES`).

`optimize(graph, target, opt_level)` copies the graph, runs the pipeline, and returns the
optimized graph; the compiler then calls `fuse_ops` and `plan_memory`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TextIO

from ...pass_infra import PassSwitches, run_named_passes
from ..ir import Graph
from .activations import combine_swish, expand_small_powers
from .attention import fuse_attention
from .fold import fold_batch_norm, fold_constants
from .fuse_merge import split_shared_reshapes
from .index_ranges import annotate_index_ranges
from .layout import layout_transform, run_plugin_passes
from .narrow import legalize_narrow_types
from .placement import place
from .qdq import fold_constant_dequantize, fuse_qdq_conv, fuse_qdq_max_pool
from .reshapes import sink_row_reshapes
from .simplify import (
    copy_graph,
    eliminate_common_subexpr,
    eliminate_dead_code,
    infer_types,
    sink_reshape_past_bias,
    split_wide_nodes,
)

GraphPass = Callable[[Graph], Graph]


class GraphPassContext(PassSwitches):
    """Print or disable graph passes by name while the context is active."""

    ENV = ("TENSORFORGE_PRINT_GRAPH_BEFORE", "TENSORFORGE_PRINT_GRAPH_AFTER",
           "TENSORFORGE_DISABLE_GRAPH_PASSES")
    LABEL = "graph"

    def __init__(self, print_before: Iterable[str] = (), print_after: Iterable[str] = (),
                 disabled: Iterable[str] = (), stream: TextIO | None = None):
        super().__init__(print_before, print_after, disabled, stream)


def run_graph_passes(g: Graph, passes: Iterable[tuple[str, GraphPass]]) -> Graph:
    return run_named_passes(g, passes, GraphPassContext.current())


def default_graph_passes(target: Any = None, opt_level: int = 3, host: Any = None
                         ) -> list[tuple[str, GraphPass]]:
    """The pipeline, in order. opt-level 0 only checks types, decodes narrow types and drops
    dead nodes (and, for a device target, places them). `host` runs what a device target
    cannot."""
    passes: list[tuple[str, GraphPass]] = [("infer_types", infer_types),
                                           ("legalize_narrow_types", legalize_narrow_types)]
    if opt_level >= 1:
        passes += [
            # before constant folding, which would turn dequantized weights into floats
            ("fuse_qdq_conv", fuse_qdq_conv),
            ("fuse_qdq_max_pool", fuse_qdq_max_pool),
            ("fold_constant_dequantize", fold_constant_dequantize),
            ("plugin_before_fusion", partial(run_plugin_passes, target=target,
                                             stage="graph.before_fusion")),
            ("fold_batch_norm", fold_batch_norm),
            ("fold_constants", fold_constants),
            ("combine_swish", combine_swish),
            ("expand_small_powers", expand_small_powers),
            ("eliminate_common_subexpr", eliminate_common_subexpr),
            ("sink_reshape_past_bias", sink_reshape_past_bias),
            ("fuse_attention", fuse_attention),
            ("sink_row_reshapes", sink_row_reshapes),
        ]
    if opt_level >= 2:
        passes.append(("layout_transform", partial(layout_transform, target=target,
                                                   host=host)))
    elif target is not None and target.kind.device_type != "cpu":
        passes.append(("place", partial(place, target=target, host=host)))
    if opt_level >= 1:
        # one packing of a weight used by many nodes (an unrolled LSTM's recurrent matrix:
        # one layout_transform per step until merged, 35 packed copies that evict each other)
        passes += [("eliminate_common_subexpr_after_layout", eliminate_common_subexpr),
                   ("fold_constants_after_layout", fold_constants)]
    if opt_level >= 1:
        passes.append(("split_shared_reshapes", split_shared_reshapes))
    passes += [("eliminate_dead_code", eliminate_dead_code),
               ("split_wide_nodes", split_wide_nodes),
               ("annotate_index_ranges", annotate_index_ranges),
               ("infer_types_final", infer_types)]
    return passes


PASS_NAMES = tuple(name for name, _ in default_graph_passes())
GraphPassContext.NAMES = PASS_NAMES


def optimize(g: Graph, target: Any = None, opt_level: int = 3, host: Any = None) -> Graph:
    """A copy of `g` after the graph pipeline (the input graph is not modified)."""
    return run_graph_passes(copy_graph(g), default_graph_passes(target, opt_level, host))
