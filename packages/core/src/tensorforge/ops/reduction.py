"""Reductions over any set of axes (sum, max, min, mean)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import te
from ..expr import IntImm, const
from ..expr import dtype as dt
from ..te import Tensor
from .arith import saturate_high

_prod = te.comm_reducer(lambda x, y: x * y, lambda t: const(1, t), name="prod")


def reduce(
    a: Tensor, axes: Sequence[int] | None, kind: str = "sum", keepdims: bool = False,
    name: str = "reduce",
) -> Tensor:
    n = len(a.shape)
    axes = sorted({(x + n) % n for x in (axes if axes is not None else range(n))})
    raxes = [te.reduce_axis((0, a.shape[d]), name=f"r{d}") for d in axes]
    out_shape = []
    for d in range(n):
        if d in axes:
            if keepdims:
                out_shape.append(const(1))
        else:
            out_shape.append(a.shape[d])
    reducer = {"sum": te.sum, "mean": te.sum, "max": te.max, "min": te.min,
               "prod": _prod}[kind]
    int_mean = kind == "mean" and not dt.is_float(a.dtype)

    def f(*i):  # type: ignore[no-untyped-def]
        src = []
        it = iter(i)
        rit = iter(raxes)
        for d in range(n):
            if d in axes:
                if keepdims:
                    next(it)
                src.append(next(rit))
            else:
                src.append(next(it))
        v = a[tuple(src)]
        return reducer(v.astype("float64") if int_mean else v, axis=raxes)

    out = te.compute(out_shape, f, name=name, tag="reduce")
    if kind == "mean":
        count = 1
        for d in axes:
            s = a.shape[d]
            count *= s.value if isinstance(s, IntImm) else 1
        acc = out

        def mean(*i: Any) -> Any:
            m = acc[i] / const(float(count), acc.dtype)
            # integers: the mean in double, truncated and saturated, as ONNX Runtime
            return saturate_high(m, m.astype(a.dtype), a.dtype) if int_mean else m

        out = te.compute(out.shape, mean, name=f"{name}_mean", tag="elemwise")
    return out
