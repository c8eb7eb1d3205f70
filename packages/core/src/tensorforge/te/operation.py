"""The user-facing constructors: placeholder, compute, reduce_axis, reducers, thread_axis."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ..expr import (
    CommReducer,
    PrimExpr,
    Range,
    Reduce,
    SizeVar,
    Var,
    const,
    convert,
)
from ..expr import construct as _c
from .tensor import DATA_PAR, REDUCE, THREAD, ComputeOp, IterVar, PlaceholderOp, Tensor


def _shape(shape: Any) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    return tuple(convert(s) for s in shape)


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor."""
    from ..expr import dtype as dt

    dt.parse(dtype)
    return PlaceholderOp(name, _shape(shape), dtype).output(0)


def var(name: str = "v", dtype: str = "int32") -> Var:
    return Var(name, dtype)


def size_var(name: str = "n", dtype: str = "int32") -> SizeVar:
    return SizeVar(name, dtype)


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """A reduction axis over `dom` = (min, max) or an extent."""
    return IterVar(_range(dom), Var(name), REDUCE)


def thread_axis(dom: Any = None, tag: str = "", name: str = "") -> IterVar:
    """A GPU thread axis ("threadIdx.x", "blockIdx.y", "vthread", ...)."""
    if isinstance(dom, str):
        dom, tag = None, dom
    if not tag:
        raise ValueError("thread_axis needs a tag such as 'threadIdx.x', 'blockIdx.x' or 'vthread'")
    return IterVar(_range(dom) if dom is not None else None, Var(name or tag), THREAD, tag)


def _range(dom: Any) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, (tuple, list)):
        lo, hi = (convert(d) for d in dom)
        return Range(lo, _c.sub(hi, lo))
    return Range(const(0), convert(dom))


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Any:
    """`out[i, j, ...] = fcompute(i, j, ...)`; a tuple result makes a multi-output op."""
    shape = _shape(shape)
    try:
        params = list(inspect.signature(fcompute).parameters)
    except (TypeError, ValueError):
        params = []
    if len(params) != len(shape) or any(
        p.kind == p.VAR_POSITIONAL for p in inspect.signature(fcompute).parameters.values()
    ):
        params = [f"i{k}" for k in range(len(shape))]
    axis = [IterVar(Range(const(0), s), Var(n), DATA_PAR) for n, s in zip(params, shape)]
    body = fcompute(*[iv.var for iv in axis])
    bodies = list(body) if isinstance(body, (tuple, list)) else [body]
    bodies = [convert(b) for b in bodies]
    reduce_ax: tuple[IterVar, ...] = ()
    from ..expr import post_order_collect

    nested = [r for b in bodies for r in post_order_collect(b, lambda x: isinstance(x, Reduce))
              if r is not b]
    if nested or any(isinstance(b, Reduce) for b in bodies):
        if nested or not all(isinstance(b, Reduce) for b in bodies):
            raise ValueError(
                f"compute {name!r}: a reduction must be the whole body of every output"
            )
        reduce_ax = bodies[0].axis
    op = ComputeOp(name, axis, bodies, tag, attrs, reduce_ax)
    outs = [op.output(i) for i in range(op.num_outputs)]
    return outs[0] if len(outs) == 1 else outs


def comm_reducer(
    fcombine: Callable[..., Any], fidentity: Callable[..., Any], name: str = "reduce"
) -> Callable[..., Any]:
    """Make a reducer from a combiner `(lhs, rhs) -> result` and an identity `(dtype) -> value`.
    Tuple combiners (e.g. argmax over (index, value)) reduce several values at once."""

    def reducer(expr: Any, axis: Any, where: Any = None, init: Any = None) -> Any:
        exprs = [convert(e) for e in expr] if isinstance(expr, (tuple, list)) else [convert(expr)]
        axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
        for a in axes:
            if not isinstance(a, IterVar) or a.kind != REDUCE:
                raise TypeError(f"{name}: axis {a!r} is not a reduce_axis")
        dtypes = [e.dtype for e in exprs]
        lhs = tuple(Var(f"x{i}", d) for i, d in enumerate(dtypes))
        rhs = tuple(Var(f"y{i}", d) for i, d in enumerate(dtypes))
        if len(exprs) == 1:
            res = [fcombine(lhs[0], rhs[0])]
            ident = [fidentity(dtypes[0])]
        else:
            res = list(fcombine(lhs, rhs))
            ident = list(fidentity(*dtypes))
        result = tuple(_c.cast(d, convert(r, d)) for r, d in zip(res, dtypes))
        identity = tuple(_c.cast(d, convert(v, d)) for v, d in zip(ident, dtypes))
        comb = CommReducer(lhs, rhs, result, identity, name)
        cond = convert(where) if where is not None else const(True)
        inits: tuple[PrimExpr, ...] = ()
        if init is not None:
            ini = init if isinstance(init, (tuple, list)) else [init]
            inits = tuple(_c.cast(d, convert(v, d)) for v, d in zip(ini, dtypes))
        outs = [Reduce(comb, tuple(exprs), axes, cond, i, inits) for i in range(len(exprs))]
        return outs[0] if len(outs) == 1 else tuple(outs)

    reducer.__name__ = name
    return reducer


def min_value(dtype: str) -> PrimExpr:
    from ..expr import dtype as dt

    d = dt.parse(dtype)
    if d.code == "float":
        return const(float("-inf"), dtype)
    if d.code == "uint":
        return const(0, dtype)
    return const(-(2 ** (d.bits - 1)), dtype)


def max_value(dtype: str) -> PrimExpr:
    from ..expr import dtype as dt

    d = dt.parse(dtype)
    if d.code == "float":
        return const(float("inf"), dtype)
    if d.code == "uint":
        return const(2**d.bits - 1, dtype)
    return const(2 ** (d.bits - 1) - 1, dtype)


sum = comm_reducer(lambda x, y: x + y, lambda t: const(0, t), name="sum")  # noqa: A001
max = comm_reducer(lambda x, y: _c.max_(x, y), min_value, name="max")  # noqa: A001
min = comm_reducer(lambda x, y: _c.min_(x, y), max_value, name="min")  # noqa: A001


def argmax_reducer() -> Callable[..., Any]:
    """A tuple reducer over (index, value) keeping the first index of the maximum."""

    def combine(lhs: Sequence[PrimExpr], rhs: Sequence[PrimExpr]) -> tuple[PrimExpr, PrimExpr]:
        take_rhs = _c.logical_or(
            rhs[1] > lhs[1], _c.logical_and(rhs[1] == lhs[1], rhs[0] < lhs[0])
        )
        return _c.select(take_rhs, rhs[0], lhs[0]), _c.select(take_rhs, rhs[1], lhs[1])

    return comm_reducer(combine, lambda ti, tv: (const(-1, ti), min_value(tv)), name="argmax")


__all__ = [
    "placeholder", "compute", "reduce_axis", "thread_axis", "comm_reducer", "sum", "max", "min",
    "var", "size_var", "argmax_reducer", "min_value", "max_value",
]
