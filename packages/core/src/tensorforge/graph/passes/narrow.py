"""`legalize_narrow_types`: narrow dtypes (bfloat16, float8, float4, int4 ...; see
`graph/ops/narrow.py`) are stored narrow and computed in float32 (int32 for the integer
formats).

- `cast` from or to a narrow type becomes `narrow_decode` / `narrow_encode` (with the cast's
  saturate and round_mode) and plain casts;
- ops that only move data (reshape, transpose, slices, concat, gather ...) keep their narrow
  operands: their kernels move the stored bits;
- every other op reads decoded copies of its narrow inputs and its narrow outputs are encoded
  back, so kernels never compute on a type the CPU lacks.

It runs first in the pipeline (every opt level): code generation needs it."""

from __future__ import annotations

from typing import Any

from ..ir import Graph, Node, Value
from ..narrow_types import FORMATS, compute_dtype, is_narrow
from .simplify import make_node

#: ops whose kernels only move elements: narrow operands are moved as stored bits
MOVES_DATA = frozenset({"reshape", "transpose", "identity", "concat", "split", "strided_slice",
                        "take", "broadcast_to", "where", "layout_transform", "tile",
                        "reverse", "space_to_depth", "depth_to_space"})


def _moves_data(n: Node) -> bool:
    if n.op == "pad":
        return n.attrs.get("mode", "constant") != "constant" or not n.attrs.get("value", 0)
    return n.op in MOVES_DATA


def legalize_narrow_types(g: Graph) -> Graph:
    if not any(is_narrow(v.dtype) for n in g.nodes for v in (*n.inputs, *n.outputs)):
        return g
    nodes: list[Node] = []

    def add(op: str, inputs: list[Value], attrs: dict[str, Any]) -> Value:
        node = make_node(g, op, inputs, attrs, name=op)
        nodes.append(node)
        return node.outputs[0]

    def wide(v: Value) -> Value:
        return add("narrow_decode", [v], {"fmt": v.dtype}) if is_narrow(v.dtype) else v

    def retarget(new: Value, old: Value) -> None:
        """Make `new` (the last added node's output) stand for `old`."""
        node = nodes[-1]
        new.name, new.producer = old.name, node
        node.outputs = [new if o is new else o for o in node.outputs]
        old.producer = None
        _swap(old, new)

    replaced: dict[int, Value] = {}

    def _swap(old: Value, new: Value) -> None:
        replaced[id(old)] = new

    for n in g.nodes:
        n.inputs = [replaced.get(id(v), v) for v in n.inputs]
        narrow_in = [is_narrow(v.dtype) for v in n.inputs]
        narrow_out = [is_narrow(o.dtype) for o in n.outputs]
        if not any(narrow_in) and not any(narrow_out) or _moves_data(n):
            nodes.append(n)
            continue
        if n.op == "cast":
            src, out = n.inputs[0], n.outputs[0]
            x = wide(src)
            if is_narrow(out.dtype):
                x = x if x.dtype == compute_dtype(out.dtype) else add(
                    "cast", [x], {"to": compute_dtype(out.dtype)})
                y = add("narrow_encode", [x], {
                    "fmt": out.dtype, "saturate": bool(n.attrs.get("saturate", True)),
                    "round_mode": n.attrs.get("round_mode", "nearest")})
            else:
                y = add("cast", [x], {"to": out.dtype})
            retarget(y, out)
            continue
        ins = [wide(v) for v in n.inputs]
        attrs = dict(n.attrs)
        node = make_node(g, n.op, ins, attrs, name=n.name)
        nodes.append(node)
        for old, new in zip(n.outputs, node.outputs):
            if is_narrow(old.dtype):
                enc = add("narrow_encode", [new], {"fmt": old.dtype})
                retarget(enc, old)
            else:
                new.name = old.name
                _swap(old, new)
    g.nodes = nodes
    g.outputs = [replaced.get(id(v), v) for v in g.outputs]
    return g


__all__ = ["FORMATS", "MOVES_DATA", "legalize_narrow_types"]
