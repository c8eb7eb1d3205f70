"""Reshapes out of the way of fusion.

An ONNX MatMul on 3-d data becomes reshape -> dense -> reshape, so the elementwise work after
it (the bias, GELU, the residual add) runs on the 3-d shape, behind a reshape that fusion
cannot cross (the dense kernel takes elementwise epilogues of its own shape only), and every
reshape between kernels is a copy. Two passes fix that:

- `sink_row_reshapes`: an elementwise node whose tensor operands are *row reshapes* of values
  of one shape A (the same last axis; only the leading axes regrouped) runs on shape A, and
  the reshape moves after it: ``f(reshape(x), reshape(y), c)`` -> ``reshape(f(x, y, c))``.
  Constants that broadcast over the last axis only are re-laid for A; another operand that
  already has the output's shape is reshaped to A (a reshape that fusion inlines into its
  reader). Repeated in graph order, whole elementwise chains and diamonds (GELU's
  ``x * (1 + erf(x / sqrt 2)) / 2``) move into the dense kernel's shape.
- `fold_reshapes`: a reshape of a reshape reads the first one's input; a reshape to the
  shape it already has is dropped; an identity (ONNX's last `Identity` to a named output)
  whose input nothing else reads hands its output to that input's producer."""

from __future__ import annotations

import numpy as np

from ..ir import Graph, Node, Value
from ..registry import OpPattern, get_op
from .simplify import eliminate_dead_code, make_node


def _row_reshape(v: Value) -> Value | None:
    """The input of `v`'s producer if it is a reshape that keeps the last axis (a row
    reshape), else None."""
    n = v.producer
    if n is None or n.op != "reshape" or not v.shape:
        return None
    x = n.inputs[0]
    if not x.shape or x.shape[-1] != v.shape[-1] or x.is_const:
        return None
    return x


def _last_axis_const(c: Value, last: int) -> np.ndarray | None:
    """`c`'s array without leading unit axes when it broadcasts over the last axis only."""
    a = c.const
    shape = list(a.shape)
    while shape and shape[0] == 1:
        shape.pop(0)
    if len(shape) > 1 or (shape and shape[0] not in (1, last)):
        return None
    return a.reshape(shape)


def sink_row_reshapes(g: Graph) -> Graph:
    """The first pass (module docstring)."""
    nodes: list[Node] = []
    for n in g.nodes:
        new = _sink(g, n)
        nodes.extend([n] if new is None else new)
    g.nodes = nodes
    return fold_reshapes(g)


def _sink(g: Graph, n: Node) -> list[Node] | None:
    if (len(n.outputs) != 1 or get_op(n.op).pattern > OpPattern.BROADCAST
            or n.op in ("reshape", "identity")):  # an identity is handed over instead
        return None
    out = n.outputs[0]
    if not out.shape:
        return None
    src_shape = None
    for v in n.inputs:
        x = None if v.is_const else _row_reshape(v)
        if x is not None and v.shape == out.shape:
            if src_shape is not None and x.shape != src_shape:
                return None
            src_shape = x.shape
    if src_shape is None or src_shape == out.shape:
        return None
    pre: list[Node] = []
    ins: list[Value] = []
    for v in n.inputs:
        if v.is_const:
            a = _last_axis_const(v, out.shape[-1])
            if a is None:
                return None
            ins.append(v if a.shape == v.shape else g.add_const(f"{v.name}_rows", a))
            continue
        x = _row_reshape(v)
        if x is not None and x.shape == src_shape and v.shape == out.shape:
            ins.append(x)
        elif v.shape == out.shape:  # a same-shape operand: reshaped too (inlined later)
            r = make_node(g, "reshape", [v], {"shape": tuple(src_shape)}, f"{v.name}_rows")
            pre.append(r)
            ins.append(r.outputs[0])
        else:
            return None
    moved = make_node(g, n.op, ins, dict(n.attrs), n.name)
    back = Node("reshape", [moved.outputs[0]], [out], {"shape": tuple(out.shape)},
                g.unique_name(f"{n.name}_reshape", g._node_names))
    out.producer = back
    return [*pre, moved, back]


def fold_reshapes(g: Graph) -> Graph:
    """The second pass (module docstring)."""
    alias: dict[int, Value] = {}
    for n in g.nodes:
        n.inputs = [alias.get(id(v), v) for v in n.inputs]
        if n.op != "reshape":
            continue
        x = n.inputs[0]
        inner = x.producer
        if inner is not None and inner.op == "reshape":
            n.inputs = [inner.inputs[0]]
            x = n.inputs[0]
        if x.shape == n.outputs[0].shape and not x.is_const:
            alias[id(n.outputs[0])] = x  # (a graph output keeps its reshape node)
    _hand_identities_over(g)
    return eliminate_dead_code(g)


def _hand_identities_over(g: Graph) -> None:
    readers: dict[int, int] = {}
    for n in g.nodes:
        for v in n.inputs:
            readers[id(v)] = readers.get(id(v), 0) + 1
    outputs = {id(v) for v in g.outputs}
    keep = []
    for n in g.nodes:
        x = n.inputs[0] if n.op == "identity" else None
        p = x.producer if x is not None else None
        if p is None or readers.get(id(x)) != 1 or id(x) in outputs or x.dtype != \
                n.outputs[0].dtype:
            keep.append(n)
            continue
        out = n.outputs[0]
        p.outputs = [out if o is x else o for o in p.outputs]
        out.producer = p
    g.nodes = keep
