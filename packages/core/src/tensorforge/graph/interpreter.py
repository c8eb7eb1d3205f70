"""A numpy interpreter of the graph over the ops' reference implementations.

It is the oracle for tests and the engine of constant folding, never the inference engine:
compiled models run generated kernels only."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..errors import DataCheckError
from ..runtime.checks import node_label
from .ir import Graph, Value
from .registry import get_op


def run_reference(g: Graph, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    env = evaluate(g, inputs)
    return [v.const if v.is_const else env[v] for v in g.outputs]


def evaluate(g: Graph, inputs: Mapping[str, np.ndarray]) -> dict[Value, np.ndarray]:
    """Every value the graph computes (inputs included), by Value: what `tforge run --verify`
    compares each compiled kernel's outputs with."""
    env: dict[Value, np.ndarray] = {}
    for v in g.inputs:
        env[v] = np.asarray(inputs[v.name])
    for n in g.nodes:
        args = [v.const if v.is_const else env[v] for v in n.inputs]
        try:
            outs = get_op(n.op).reference(args, n.attrs)
        except DataCheckError as e:  # name the node, as compiled kernels do
            op, _, what = str(e).partition(": ")
            raise DataCheckError(f"{op} node {node_label(n.name)!r}: {what}") from None
        for v, a in zip(n.outputs, outs):
            env[v] = np.asarray(a).astype(v.dtype, copy=False).reshape(v.shape)
    return env
