"""Structural passes: copy, type re-check, common-subexpression and dead-code elimination,
plus the small rewriting helpers the other passes share."""

from __future__ import annotations

from typing import Any

from ...errors import TensorforgeError
from ..ir import Graph, Node, Value, freeze
from ..registry import get_op


def copy_graph(g: Graph) -> Graph:
    """A copy with fresh Values and Nodes (constant arrays are shared, never mutated)."""
    new = Graph(g.name)
    new._names = set(g._names)
    new._node_names = set(g._node_names)
    vmap: dict[Value, Value] = {}

    def get(v: Value) -> Value:
        if v not in vmap:
            vmap[v] = Value(v.name, v.shape, v.dtype, v.const, origin=v.origin)
        return vmap[v]

    new.inputs = [get(v) for v in g.inputs]
    for n in g.nodes:
        node = Node(n.op, [get(v) for v in n.inputs], [get(v) for v in n.outputs],
                    dict(n.attrs), n.name)
        for o in node.outputs:
            o.producer = node
        new.nodes.append(node)
    new.outputs = [get(v) for v in g.outputs]
    new.sized_outputs = dict(g.sized_outputs)
    return new


def replace_uses(g: Graph, old: Value, new: Value) -> None:
    """Every read of `old` (node inputs, graph outputs) reads `new` instead."""
    for n in g.nodes:
        if any(v is old for v in n.inputs):
            n.inputs = [new if v is old else v for v in n.inputs]
    g.outputs = [new if v is old else v for v in g.outputs]


def make_node(g: Graph, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
              name: str = "") -> Node:
    """A typed node that is not yet placed in `g.nodes` (the caller puts it in order)."""
    g.add_node(op, inputs, attrs, name)
    return g.nodes.pop()


def infer_types(g: Graph) -> Graph:
    """Re-run every op's type inference and check it against the recorded output types, and
    that every value is defined before it is read."""
    defined = {id(v) for v in g.inputs}
    for n in g.nodes:
        for v in n.inputs:
            if not v.is_const and id(v) not in defined:
                raise TensorforgeError(
                    f"graph {g.name!r}: node {n.name} ({n.op}) reads %{v.name} before it is "
                    "defined (nodes must be in topological order)")
        try:
            types = get_op(n.op).infer([(v.shape, v.dtype) for v in n.inputs], n.attrs)
        except TensorforgeError:
            raise
        except Exception as exc:
            raise TensorforgeError(
                f"graph {g.name!r}: type inference of node {n.name} ({n.op}) failed: "
                f"{type(exc).__name__}: {exc}") from exc
        if len(types) != len(n.outputs):
            raise TensorforgeError(
                f"graph {g.name!r}: node {n.name} ({n.op}) has {len(n.outputs)} outputs but "
                f"its op infers {len(types)}")
        for o, (shape, dtype) in zip(n.outputs, types):
            if tuple(int(d) for d in shape) != tuple(o.shape) or dtype != o.dtype:
                raise TensorforgeError(
                    f"graph {g.name!r}: node {n.name} ({n.op}) output %{o.name} is recorded as "
                    f"{o.dtype}{list(o.shape)} but its op infers {dtype}{list(shape)}")
            defined.add(id(o))
    for v in g.outputs:
        if not v.is_const and id(v) not in defined:
            raise TensorforgeError(f"graph {g.name!r}: output %{v.name} is never computed")
    return g


def eliminate_dead_code(g: Graph) -> Graph:
    """Drop nodes none of whose outputs reaches a graph output."""
    live = {id(v) for v in g.outputs}
    keep: list[Node] = []
    for n in reversed(g.nodes):
        if any(id(o) in live for o in n.outputs):
            keep.append(n)
            live.update(id(v) for v in n.inputs)
    g.nodes = keep[::-1]
    return g


_SMALL_CONST = 64  # constants up to this many elements are merged by value


def eliminate_common_subexpr(g: Graph) -> Graph:
    """Merge nodes with the same op, attributes and inputs (and equal small constants)."""
    const_key: dict[Any, Value] = {}
    canon: dict[int, Value] = {}

    def key_of(v: Value) -> Any:
        v = canon.get(id(v), v)
        if v.is_const and v.size <= _SMALL_CONST:
            k = ("const", v.dtype, v.shape, v.const.tobytes())
            first = const_key.setdefault(k, v)
            canon[id(v)] = first
            return id(first)
        return id(v)

    seen: dict[Any, Node] = {}
    keep: list[Node] = []
    for n in g.nodes:
        n.inputs = [canon.get(id(v), v) for v in n.inputs]
        try:
            key = (n.op, tuple(key_of(v) for v in n.inputs), freeze(n.attrs))
            hash(key)
        except TypeError:
            keep.append(n)
            continue
        n.inputs = [canon.get(id(v), v) for v in n.inputs]
        prev = seen.get(key)
        if prev is None:
            seen[key] = n
            keep.append(n)
            continue
        for old, new in zip(n.outputs, prev.outputs):
            canon[id(old)] = new
    g.nodes = keep
    for n in g.nodes:
        n.inputs = [canon.get(id(v), v) for v in n.inputs]
    g.outputs = [canon.get(id(v), v) for v in g.outputs]
    return g


def sink_reshape_past_bias(g: Graph) -> Graph:
    """`add(reshape(x), c)` -> `reshape(add(x, c))` when `c` is a constant over the last axis
    (or a scalar) that the reshape keeps and the reshape has no other reader: the bias then
    joins the producer of `x` as its epilogue (an ONNX MatMul on 3-d data becomes reshape,
    dense, reshape; its bias add would otherwise be a kernel of its own)."""
    readers: dict[int, int] = {}
    for n in g.nodes:
        for v in n.inputs:
            readers[id(v)] = readers.get(id(v), 0) + 1
    for v in g.outputs:
        readers[id(v)] = readers.get(id(v), 0) + 1
    nodes: list[Node] = []
    for n in g.nodes:
        r = n.inputs[0].producer if n.op == "add" and len(n.inputs) == 2 else None
        c = n.inputs[1] if r is not None else None
        if (r is None or r.op != "reshape" or not c.is_const or readers.get(id(r.outputs[0])) != 1
                or r not in nodes):
            nodes.append(n)
            continue
        x, out = r.inputs[0], n.outputs[0]
        cshape = tuple(d for d in c.shape)
        while cshape and cshape[0] == 1:
            cshape = cshape[1:]
        if (not x.shape or x.shape[-1] != out.shape[-1] or len(cshape) > 1
                or (cshape and cshape[0] not in (1, x.shape[-1]))
                or len(c.shape) > len(x.shape) or c.dtype != x.dtype):
            nodes.append(n)
            continue
        add = make_node(g, "add", [x, c], dict(n.attrs), n.name)
        reshape = Node("reshape", [add.outputs[0]], [out], dict(r.attrs), r.name)
        out.producer = reshape
        nodes.remove(r)
        nodes += [add, reshape]
    g.nodes = nodes
    return g
