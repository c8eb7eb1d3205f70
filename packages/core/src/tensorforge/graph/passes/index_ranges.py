"""`annotate_index_ranges`: the values integer tensors can take, so index checks the data
cannot fail are not generated.

A forward interval analysis over the graph: a constant's range is its min and max, a graph
input's its dtype's; each op with a rule in `RANGE_RULES` maps its inputs' ranges to its
outputs' (data movement keeps the range, min/max/clip/relu narrow it, a cast keeps it when it
fits, add/sub/mul combine intervals and fall back to the dtype's range when they could wrap).
An op without a rule gives its output dtype's range. Every node with index inputs
(`OpDef.index_inputs`: take, gather_elements, gather_nd, scatters) gets the attribute
`index_range` = (lo, hi) of its indices when that is narrower than their dtype's; the
compute then drops the check when [lo, hi] lies inside the indexed axis' [-n, n - 1] and the
wrap of negative indices when lo >= 0. `RANGE_RULES` is open: an op that bounds its integer
output (ArgMax, TopK's indices) adds a rule."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..ir import Graph, Node, Value
from ..registry import get_op

Range = tuple[int, int]
RangeRule = Callable[[Node, list[Range | None]], list[Range | None]]


def dtype_range(dtype: str) -> Range | None:
    """The values an integer or bool dtype holds; None for floats."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return 0, 1
    if d.kind in "iu":
        info = np.iinfo(d)
        return int(info.min), int(info.max)
    return None


def _fit(r: Range | None, dtype: str) -> Range | None:
    """`r` if every value of it is representable in `dtype`, else the dtype's range."""
    full = dtype_range(dtype)
    if r is None or full is None:
        return full
    return r if full[0] <= r[0] and r[1] <= full[1] else full


def _union(rs: list[Range | None]) -> Range | None:
    if any(r is None for r in rs) or not rs:
        return None
    return min(r[0] for r in rs), max(r[1] for r in rs)  # type: ignore[index]


def _same(n: Node, rs: list[Range | None]) -> list[Range | None]:
    return [rs[0]] * len(n.outputs)


def _data(n: Node, rs: list[Range | None]) -> list[Range | None]:
    return [rs[0]]


def _concat(n: Node, rs: list[Range | None]) -> list[Range | None]:
    return [_union(rs)]


def _where(n: Node, rs: list[Range | None]) -> list[Range | None]:
    return [_union(rs[1:])]


def _pad(n: Node, rs: list[Range | None]) -> list[Range | None]:
    if n.attrs.get("mode", "constant") != "constant" or rs[0] is None:
        return [rs[0]]
    v = n.attrs.get("value", 0)
    return [_union([rs[0], (int(v), int(v))])] if float(v).is_integer() else [None]


def _cast(n: Node, rs: list[Range | None]) -> list[Range | None]:
    src = n.inputs[0].dtype
    return [_fit(rs[0], n.attrs["to"]) if dtype_range(src) is not None else None]


def _minmax(pick: Callable[..., int]) -> RangeRule:
    def rule(n: Node, rs: list[Range | None]) -> list[Range | None]:
        a, b = rs
        if a is None or b is None:
            return [None]
        return [(pick(a[0], b[0]), pick(a[1], b[1]))]

    return rule


def _clip(n: Node, rs: list[Range | None]) -> list[Range | None]:
    r = rs[0]
    lo, hi = n.attrs.get("min"), n.attrs.get("max")
    if r is None or lo is None or hi is None or not all(
            float(x).is_integer() for x in (lo, hi)):
        return [None]
    lo, hi = int(lo), int(hi)
    return [(min(max(r[0], lo), hi), min(max(r[1], lo), hi))]


def _relu(n: Node, rs: list[Range | None]) -> list[Range | None]:
    r = rs[0]
    return [None if r is None else (max(r[0], 0), max(r[1], 0))]


def _arith(f: Callable[[Range, Range], Range]) -> RangeRule:
    def rule(n: Node, rs: list[Range | None]) -> list[Range | None]:
        a, b = rs
        if a is None or b is None:
            return [None]
        return [_fit(f(a, b), n.outputs[0].dtype)]  # may wrap: then the dtype's range

    return rule


def _mul(a: Range, b: Range) -> Range:
    ps = [x * y for x in a for y in b]
    return min(ps), max(ps)


def _abs(n: Node, rs: list[Range | None]) -> list[Range | None]:
    r = rs[0]
    if r is None:
        return [None]
    lo = 0 if r[0] <= 0 <= r[1] else min(abs(r[0]), abs(r[1]))
    return [_fit((lo, max(abs(r[0]), abs(r[1]))), n.outputs[0].dtype)]


def _neg(n: Node, rs: list[Range | None]) -> list[Range | None]:
    r = rs[0]
    return [None if r is None else _fit((-r[1], -r[0]), n.outputs[0].dtype)]


RANGE_RULES: dict[str, RangeRule] = {
    **{op: _same for op in ("identity", "reshape", "transpose", "broadcast_to",
                            "strided_slice", "split", "reduce_max", "reduce_min")},
    **{op: _data for op in ("take", "gather_elements", "gather_nd")},
    "concat": _concat, "where": _where, "pad": _pad, "cast": _cast, "clip": _clip,
    "relu": _relu, "maximum": _minmax(max), "minimum": _minmax(min), "abs": _abs,
    "neg": _neg,
    "add": _arith(lambda a, b: (a[0] + b[0], a[1] + b[1])),
    "sub": _arith(lambda a, b: (a[0] - b[1], a[1] - b[0])),
    "mul": _arith(_mul),
}


def value_ranges(g: Graph) -> dict[int, Range | None]:
    """id(value) -> the proven (lo, hi) of an integer value (None: unknown or not integer)."""
    out: dict[int, Range | None] = {}

    def of(v: Value) -> Range | None:
        if id(v) not in out:
            if v.is_const and dtype_range(v.dtype) is not None and v.const.size:
                out[id(v)] = int(v.const.min()), int(v.const.max())
            else:
                out[id(v)] = dtype_range(v.dtype)
        return out[id(v)]

    for n in g.nodes:
        rs = [of(v) for v in n.inputs]
        rule = RANGE_RULES.get(n.op)
        res = rule(n, rs) if rule is not None else [None] * len(n.outputs)
        for o, r in zip(n.outputs, res):
            out[id(o)] = _fit(r, o.dtype) if r is not None else dtype_range(o.dtype)
    return out


def annotate_index_ranges(g: Graph) -> Graph:
    """Set `index_range` on every node with index inputs whose indices' range is narrower
    than their dtype's (see the module docstring)."""
    ranges = value_ranges(g)
    for n in g.nodes:
        for pos in get_op(n.op).index_inputs:
            v = n.inputs[pos]
            r = ranges.get(id(v))
            if r is not None and r != dtype_range(v.dtype):
                n.attrs["index_range"] = (int(r[0]), int(r[1]))
            else:
                n.attrs.pop("index_range", None)
    return g


__all__ = ["RANGE_RULES", "annotate_index_ranges", "value_ranges"]
