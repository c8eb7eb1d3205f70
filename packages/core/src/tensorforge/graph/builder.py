"""The frontends' graph builder: appends typed nodes to a `Graph` and, when every input of a
node is a constant, evaluates it at import with the op's numpy reference instead (so shape
computations such as Shape -> Gather -> Concat -> Reshape become static). A computation folded
once is reused: an unrolled loop that transposes the same weight every step makes one
constant, not one per step."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ir import Graph, Value, freeze
from .registry import get_op


class GraphBuilder:
    """Node construction shared by the frontends. Subclasses name what they make after the
    model node being converted by overriding `_name`."""

    def __init__(self, graph: Graph):
        self.g = graph
        self.fresh: set[int] = set()  # ids of values made since the caller last cleared it
        self._folded: dict[Any, tuple[list[Value], list[Value]]] = {}

    def _name(self, suffix: str) -> str:
        """The name of a value or node made now; `suffix` says what it is."""
        return suffix or "const"

    def constant(self, array: Any, name: str = "", dtype: str | None = None) -> Value:
        v = self.g.add_const(self._name(name or "const"), np.asarray(array, dtype=dtype))
        self.fresh.add(id(v))
        return v

    def emit_multi(self, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
                   ) -> list[Value]:
        """Append `op` (or fold it when every input is a constant); its output values."""
        attrs = dict(attrs or {})
        if inputs and all(v.is_const for v in inputs):
            key = (op, tuple(id(v) for v in inputs), freeze(attrs))
            if key in self._folded:  # the inputs are kept alive with the entry: ids stay valid
                return list(self._folded[key][1])
            d = get_op(op)
            types = d.infer([(v.shape, v.dtype) for v in inputs], attrs)
            res = d.reference([v.const for v in inputs], attrs)
            outs = [self.constant(np.asarray(r).astype(dt).reshape(shape), op)
                    for r, (shape, dt) in zip(res, types)]
            self._folded[key] = (list(inputs), outs)
            return outs
        outs = self.g.add_node(op, inputs, attrs, name=self._name(op))
        self.fresh.update(id(v) for v in outs)
        return outs

    def emit(self, op: str, *inputs: Value, **attrs: Any) -> Value:
        return self.emit_multi(op, list(inputs), attrs)[0]

    # helpers used by many converters -----------------------------------------------------
    def reshape(self, x: Value, shape: tuple[int, ...]) -> Value:
        """`x` reshaped (a reshape of a reshape reads the first one's input)."""
        shape = tuple(int(s) for s in shape)
        if tuple(x.shape) == shape:
            return x
        if x.producer is not None and x.producer.op == "reshape" and not x.is_const:
            return self.reshape(x.producer.inputs[0], shape)
        return self.emit("reshape", x, shape=shape)

    def transpose(self, x: Value, perm: tuple[int, ...]) -> Value:
        """`x` with its axes permuted; a reshape when only axes of size 1 move (the data
        order is the same), nothing when `perm` keeps the order."""
        perm = tuple(int(p) for p in perm)
        if perm == tuple(range(len(perm))):
            return x
        moved = [p for p in perm if x.shape[p] != 1]
        if moved == sorted(moved):
            return self.reshape(x, tuple(x.shape[p] for p in perm))
        return self.emit("transpose", x, perm=perm)

    def cast(self, x: Value, dtype: str) -> Value:
        return x if x.dtype == dtype else self.emit("cast", x, to=dtype)

    def scalar(self, value: float, like: Value) -> Value:
        shape = (1,) if like.shape else ()
        return self.constant(np.full(shape, value, dtype=like.dtype), "scalar")

    def output(self, v: Value, name: str, seen: list[Value]) -> Value:
        """The graph output named `name` for `v`: `v` itself, renamed, when this builder made
        it (and it is no other output yet), else an identity node named `name` (inputs,
        constants, aliases, repeated outputs; named `name_1`... if another value holds
        `name`)."""
        is_input = v.producer is None and not v.is_const
        if (not is_input and not v.is_const and all(v is not s for s in seen)
                and (v.name == name or name not in self.g._names)):
            if v.name != name:
                self.g._names.discard(v.name)
                self.g._names.add(name)
                v.name = name
            seen.append(v)
            return v
        out = self.g.add_node("identity", [v], {}, name=name, out_names=[name])[0]
        seen.append(out)
        return out
