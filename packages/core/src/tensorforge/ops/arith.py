"""Integer and conversion semantics of the elementwise ops, as TE expressions and as numpy
references that agree bit for bit (see `tensorforge.expr.numeric` for the scalar rules).

- `int_pow`: integer power by square-and-multiply in the base's dtype, wrapping like numpy
  and like ONNX Runtime's `x^2`/`x^3` fast path (ONNX Runtime's general path goes through
  double `std::pow`, inexact past 2**53 and undefined past the dtype's range). A negative
  exponent gives 1 for x = 1, +-1 for x = -1, INT_MIN for x = 0 (x86's conversion of
  1/0 = inf, as ONNX Runtime returns) and 0 otherwise (the truncation of 1/x**k).
- `float_to_int` (casts from float): x86's truncating conversion (NaN and out of range give
  INT_MIN for 32/64-bit results, narrower ones wrap from int32); with `saturate`, values at or
  above the dtype's maximum give the maximum (ONNX Runtime's integer reductions, computed in
  double, convert that way).
- `nonzero_divisor`: an integer divisor checked at run time (ONNX Runtime raises "Integer
  division by zero"; x86 would fault).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import te
from ..expr import Let, PrimExpr, Var, const
from ..expr import dtype as dt
from .indexing import tensor_name

__all__ = ["float_to_int_np", "int_pow", "int_pow_np", "nonzero_divisor", "saturate_high"]


# integer power ---------------------------------------------------------------------------
def int_pow(x: PrimExpr, e: PrimExpr) -> PrimExpr:
    """x ** e for integer x (result in x's dtype, wrapping) and integer e (see above)."""
    t = x.dtype
    bits = dt.bits(e.dtype) - (0 if dt.is_uint(e.dtype) else 1)
    one = const(1, t)
    # each step's result and square are let-bound: as a tree the expression would double
    lets: list[tuple[Var, PrimExpr]] = []
    result: PrimExpr = one
    base: PrimExpr = x
    for k in range(bits):
        bit = te.truncmod(te.truncdiv(e, const(2**k, e.dtype)), const(2, e.dtype))
        r = Var(f"pow_r{k}", t)
        lets.append((r, te.select(bit != const(0, e.dtype), result * base, result)))
        result = r
        if k + 1 < bits:
            sq = Var(f"pow_b{k}", t)
            lets.append((sq, base * base))
            base = sq
    if not dt.is_uint(e.dtype):
        result = te.select(e < const(0, e.dtype), _negative_power(x, e), result)
    for v, val in reversed(lets):
        result = Let(v, val, result)
    return result


def _negative_power(x: PrimExpr, e: PrimExpr) -> PrimExpr:
    """x ** e for e < 0 in integers (see the module docstring)."""
    t = x.dtype
    one, zero = const(1, t), const(0, t)
    odd = te.truncmod(e, const(2, e.dtype)) != const(0, e.dtype)
    neg_one = te.select(odd, const(-1, t) if not dt.is_uint(t) else const(2**dt.bits(t) - 1, t),
                        one)
    low = const(_indefinite(t), t)
    negative = te.select(x == one, one, te.select(x == const(0, t), low, zero))
    if not dt.is_uint(t):
        negative = te.select(x == const(-1, t), neg_one, negative)
    return negative


def _indefinite(dtype: str) -> int:
    """x86's INT_MIN of a 32/64-bit conversion, wrapped into `dtype`."""
    v = -(2**63) if dt.bits(dtype) == 64 else -(2**31)
    return int(np.array(v, "int64").astype(dtype))


def int_pow_np(x: np.ndarray, e: np.ndarray) -> np.ndarray:
    """numpy reference of `int_pow`."""
    x, e = np.broadcast_arrays(np.asarray(x), np.asarray(e))
    t = x.dtype
    with np.errstate(over="ignore"):
        pos = np.power(x, np.where(e < 0, 0, e).astype(e.dtype), dtype=t)
    if e.dtype.kind == "u":
        return pos
    low = t.type(_indefinite(str(t)))
    neg = np.where(x == 1, t.type(1), np.where(x == 0, low, t.type(0)))
    if t.kind == "i":
        neg = np.where(x == -1, np.where(e % 2 != 0, t.type(-1), t.type(1)), neg)
    return np.where(e < 0, neg, pos).astype(t)


# float -> int ----------------------------------------------------------------------------
def saturate_high(x: PrimExpr, converted: PrimExpr, dtype: str) -> PrimExpr:
    """`converted` (the x86 conversion of float `x`), or the dtype's maximum where x is at or
    above it."""
    top = 2.0 ** (dt.bits(dtype) - (0 if dt.is_uint(dtype) else 1))
    return te.select(x >= const(top, x.dtype), te.max_value(dtype), converted)


def float_to_int_np(a: np.ndarray, dtype: str, saturate: bool = False) -> np.ndarray:
    """The x86 conversion of a float array (see `tensorforge.expr.numeric.float_to_int`)."""
    d = np.dtype(dtype)
    a = np.asarray(a).astype("float64")
    if d.kind == "b":
        return a != 0
    bits = 8 * d.itemsize

    def signed(v: np.ndarray, b: int) -> np.ndarray:  # cvttsd2si, b = 32 or 64
        ok = (v > -(2.0 ** (b - 1))) & (v < 2.0 ** (b - 1))
        with np.errstate(invalid="ignore"):
            r = np.where(ok, v, 0).astype(f"int{b}")
        return np.where(ok, r, np.iinfo(f"int{b}").min).astype(f"int{b}")

    if bits < 32:
        out = signed(a, 32).astype(d)  # wraps
    elif d.kind == "i":
        out = signed(a, bits)
    else:
        half = 2.0 ** (bits - 1)
        big = a >= half
        hi = signed(a - half, bits).view(f"uint{bits}") ^ np.array(1 << (bits - 1), d)
        out = np.where(big, hi, signed(a, bits).view(f"uint{bits}")).astype(d)
    if saturate:
        top = 2.0 ** (bits - (0 if d.kind == "u" else 1))
        out = np.where(a >= top, np.iinfo(d).max, out).astype(d)
    return out


# division -------------------------------------------------------------------------------
def nonzero_divisor(b: PrimExpr, divisor: Any, op: str) -> PrimExpr:
    """Integer divisor `b` (loaded from tensor `divisor`) checked to be non-zero at run time;
    the kernel's error names the op's node and the position of the zero."""
    if dt.is_float(b.dtype):
        return b
    return te.runtime_check(b, b != const(0, b.dtype), kind="div_zero", op=op,
                            tensor=tensor_name(divisor))
