"""The dataflow graph IR: values with static shape and dtype, nodes, constants.

A `Graph` keeps its nodes in topological order. Constants (parameters) are `Value`s that carry
a numpy array; graph passes fold them, the executor binds them to kernel arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(eq=False)
class Value:
    """An edge of the graph: a tensor of static `shape` and `dtype`."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    const: np.ndarray | None = None
    producer: Node | None = field(default=None, repr=False)
    #: for a constant computed at compile time from a smaller one by a numpy transform of
    #: `runtime.transforms` (a packed or Winograd weight): (transform, attrs, source Value).
    #: Export stores the source and the recipe, `load` redoes it (smaller packages).
    origin: tuple[str, dict[str, Any], Value] | None = field(default=None, repr=False)

    @property
    def is_const(self) -> bool:
        return self.const is not None

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(_np_dtype(self.dtype)).itemsize

    def __repr__(self) -> str:
        c = " const" if self.is_const else ""
        return f"%{self.name}: {self.dtype}{list(self.shape)}{c}"


@dataclass(eq=False)
class Node:
    """One operator application: `op` names an entry of the op registry."""

    op: str
    inputs: list[Value]
    outputs: list[Value]
    attrs: dict[str, Any]
    name: str

    def __repr__(self) -> str:
        return f"Node({self.name}: {self.op})"


def freeze(x: Any) -> Any:
    """A hashable, comparable form of attribute values (dicts, lists, arrays, numpy scalars),
    so nodes and groups can be keyed by their attributes (CSE, kernel sharing)."""
    if isinstance(x, dict):
        return tuple(sorted((k, freeze(v)) for k, v in x.items()))
    if isinstance(x, (list, tuple)):
        return tuple(freeze(v) for v in x)
    if isinstance(x, np.ndarray):
        return (x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and x != x:
        return "nan"  # NaN != NaN would make equal attributes differ
    return x


def _np_dtype(dtype: str) -> str:
    from .narrow_types import storage_dtype  # narrow types (bfloat16 ...): their stored bits

    return "bool" if dtype == "bool" else storage_dtype(dtype)


class Graph:
    """Inputs, outputs and nodes in topological order."""

    def __init__(self, name: str = "main"):
        self.name = name
        self.inputs: list[Value] = []
        self.outputs: list[Value] = []
        self.nodes: list[Node] = []
        # outputs whose size depends on data (NonZero, NonMaxSuppression ...): output
        # position -> (position of the int64 count output, axis). The output holds the
        # bound; the executor returns the first `count` entries along `axis`.
        self.sized_outputs: dict[int, tuple[int, int]] = {}
        self._names: set[str] = set()  # value names
        self._node_names: set[str] = set()

    # construction -----------------------------------------------------------------------
    def unique_name(self, base: str, _space: set[str] | None = None) -> str:
        """A value name (or, with `_space`, a name in another namespace) not yet taken."""
        from ..naming import unique_name

        return unique_name(base, self._names if _space is None else _space)

    def add_input(self, name: str, shape: tuple[int, ...], dtype: str) -> Value:
        v = Value(self.unique_name(name), tuple(int(d) for d in shape), dtype)
        self.inputs.append(v)
        return v

    def add_const(self, name: str, array: Any, dtype: str | None = None) -> Value:
        arr = np.array(array, dtype=dtype, order="C")  # (ascontiguousarray makes 0-d 1-d)
        return Value(self.unique_name(name), tuple(arr.shape), str(arr.dtype), const=arr)

    def add_node(self, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
                 name: str = "", out_names: list[str] | None = None) -> list[Value]:
        """Append a node; its output types come from the op's type inference."""
        from .registry import get_op

        opdef = get_op(op)
        attrs = dict(attrs or {})
        node_name = self.unique_name(name or op, self._node_names)
        types = opdef.infer([(v.shape, v.dtype) for v in inputs], attrs)
        outs = []
        for i, (shape, dtype) in enumerate(types):
            base = out_names[i] if out_names and i < len(out_names) and out_names[i] else (
                node_name if len(types) == 1 else f"{node_name}.{i}")
            outs.append(Value(self.unique_name(base), tuple(int(d) for d in shape), dtype))
        node = Node(op, list(inputs), outs, attrs, node_name)
        for o in outs:
            o.producer = node
        self.nodes.append(node)
        return outs

    def add(self, op: str, *inputs: Value, name: str = "", **attrs: Any) -> Value:
        """Single-output convenience: `g.add("relu", x)`."""
        return self.add_node(op, list(inputs), attrs, name)[0]

    # queries ----------------------------------------------------------------------------
    def consumers(self) -> dict[Value, list[Node]]:
        out: dict[Value, list[Node]] = {}
        for n in self.nodes:
            for v in n.inputs:
                out.setdefault(v, []).append(n)
        return out

    def constants(self) -> list[Value]:
        seen: dict[int, Value] = {}
        for n in self.nodes:
            for v in n.inputs:
                if v.is_const:
                    seen.setdefault(id(v), v)
        for v in self.outputs:
            if v.is_const:
                seen.setdefault(id(v), v)
        return list(seen.values())

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    def __str__(self) -> str:
        from .printer import graph_str

        return graph_str(self)

    __repr__ = __str__
