"""Elementwise and numpy-style broadcasting computes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import te
from ..expr import IntImm, PrimExpr, const
from ..te import Tensor


def broadcast_shape(a: tuple[PrimExpr, ...], b: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
    """numpy broadcasting of two static shapes."""
    n = max(len(a), len(b))
    a = (const(1),) * (n - len(a)) + tuple(a)
    b = (const(1),) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        xv = x.value if isinstance(x, IntImm) else None
        yv = y.value if isinstance(y, IntImm) else None
        if xv == 1:
            out.append(y)
        elif yv == 1 or xv == yv:
            out.append(x)
        else:
            raise ValueError(f"shapes {a} and {b} do not broadcast")
    return tuple(out)


def _bcast_index(t: Tensor, out_idx: tuple[Any, ...]) -> tuple[Any, ...]:
    off = len(out_idx) - len(t.shape)
    return tuple(
        const(0) if isinstance(s, IntImm) and s.value == 1 else out_idx[off + d]
        for d, s in enumerate(t.shape)
    )


def broadcast_binary(
    a: Tensor, b: Tensor, f: Callable[[PrimExpr, PrimExpr], PrimExpr], name: str = "bin"
) -> Tensor:
    shape = broadcast_shape(a.shape, b.shape)
    return te.compute(
        shape,
        lambda *i: f(a[_bcast_index(a, i)], b[_bcast_index(b, i)]),
        name=name,
        tag="broadcast",
    )


def elementwise(a: Tensor, f: Callable[[PrimExpr], PrimExpr], name: str = "ew") -> Tensor:
    return te.compute(a.shape, lambda *i: f(a[i]), name=name, tag="elemwise")
