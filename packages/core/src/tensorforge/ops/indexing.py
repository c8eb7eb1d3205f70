"""Indices read from data, checked in the generated code (Gather, GatherElements, GatherND,
ScatterElements, ScatterND and any op whose index comes from a tensor).

ONNX's rule: an index k into an axis of size n is valid in [-n, n - 1], a negative one counts
from the end. `data_index` turns a loaded index into a position in [0, n): it checks the range
with `te.runtime_check` (an out-of-range index makes the kernel return an error status, which
the executor reports naming the node, the value and the bound) unless the index's dtype or a
range proven at graph level (`known`) already keeps it inside, and it wraps negative indices
unless they cannot occur. The check is one compare and branch per load; where the load is
invariant in an inner loop LLVM hoists it with the load.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from .. import te
from ..expr import PrimExpr, const
from ..expr import dtype as dt
from ..te import PlaceholderOp, Tensor

__all__ = ["data_index", "dtype_range", "tensor_name", "without_index_checks"]

_UNCHECKED: ContextVar[bool] = ContextVar("tensorforge_unchecked_indices", default=False)


@contextmanager
def without_index_checks() -> Iterator[None]:
    """Compile without the index checks (negative indices still wrap): only to measure what
    the checks cost (benchmarks/index_checks.py). An out-of-range index then reads or writes
    out of bounds, as it did before the checks existed."""
    token = _UNCHECKED.set(True)
    try:
        yield
    finally:
        _UNCHECKED.reset(token)


def dtype_range(dtype: str) -> tuple[int, int]:
    """The values an integer (or bool) dtype can hold."""
    d = dt.parse(dtype)
    if d.code == "bool":
        return 0, 1
    if d.code == "uint":
        return 0, 2**d.bits - 1
    if d.code == "int":
        return -(2 ** (d.bits - 1)), 2 ** (d.bits - 1) - 1
    raise TypeError(f"indices must be integers, got dtype {dtype}")


def tensor_name(t: Tensor) -> str | None:
    """The kernel parameter holding `t` (a placeholder), where the error path finds the
    offending value; None for a tensor computed inside the kernel."""
    return t.op.name if isinstance(t.op, PlaceholderOp) else None


def data_index(k: PrimExpr, bound: int, op: str, indices: Tensor, axis: int,
               known: Any = None, component: int | None = None) -> PrimExpr:
    """The position in [0, bound) that index value `k` (loaded from `indices`) selects on
    `axis` of an operand of ONNX op `op`; checked and wrapped as the module docstring says.
    `known`: a (lo, hi) range the graph analysis proved for the indices, else the dtype's;
    `component`: the position in the last dimension of a GatherND/ScatterND index tuple."""
    lo, hi = dtype_range(k.dtype)
    if known is not None:
        lo, hi = max(lo, int(known[0])), min(hi, int(known[1]))
    if not (lo >= -bound and hi < bound) and not _UNCHECKED.get():
        conds = []
        if lo < -bound:
            conds.append(k >= const(-bound, k.dtype))
        if hi >= bound:
            conds.append(k < const(bound, k.dtype))
        k = te.runtime_check(k, te.all(*conds), kind="index", op=op, axis=axis, bound=bound,
                             tensor=tensor_name(indices), component=component)
        lo, hi = max(lo, -bound), min(hi, bound - 1)
    pos = k.astype("int32" if bound < 2**31 else "int64")  # in range now: no overflow
    if lo < 0:
        pos = te.select(pos < const(0, pos.dtype), pos + const(bound, pos.dtype), pos)
    return pos
