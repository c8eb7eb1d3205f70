"""Constant folding shared by the simplifier and the evaluator: the exact semantics of casts,
float32 rounding, integer ops on immediates, and the truth of `d <op> 0` over a bound range."""

from __future__ import annotations

import math
import struct
from functools import cache
from typing import Any

from ..expr import dtype as dt
from ..expr import nodes as n
from ..expr.construct import truncdiv_int, truncmod_int
from ..expr.numeric import float_to_int, fmax, fmin


@cache
def is_index(dtype: str) -> bool:
    """Scalar signed integers: the dtypes canonical index arithmetic applies to."""
    d = dt.parse(dtype)
    return d.lanes == 1 and d.code == "int"


def lanes_of(dtype: str) -> int:
    return dt.lanes(dtype)


def round_f32(v: float) -> float:
    try:
        return struct.unpack("f", struct.pack("f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def wrap_int(v: int, dtype: str) -> int:
    """The value a cast to `dtype` produces: bool -> 0/1; uint and narrow ints wrap."""
    d = dt.parse(dtype)
    if d.code == "bool":
        return int(v != 0)
    if d.code == "uint":
        return v % (1 << d.bits)
    if d.code == "int" and d.bits < 32:
        m = 1 << d.bits
        v %= m
        return v - m if v >= m // 2 else v
    return v


def cast_value(v: Any, dtype: str) -> Any:
    """Python semantics of `Cast(dtype, const)` (shared with the evaluator)."""
    d = dt.parse(dtype)
    if d.code == "float":
        f = float(v)
        return round_f32(f) if d.bits == 32 else f
    if d.code == "bool":
        return bool(v)
    if isinstance(v, float):
        return float_to_int(v, dtype)  # truncation toward zero; x86 for NaN / out of range
    return wrap_int(int(v), dtype)


def fold_float(t: type, x: float, y: float, dtype: str) -> float | None:
    if t is n.Add:
        r = x + y
    elif t is n.Sub:
        r = x - y
    elif t is n.Mul:
        r = x * y
    elif t is n.Div:
        if y == 0:
            return None
        r = x / y
    elif t is n.Min:
        r = fmin(x, y)
    elif t is n.Max:
        r = fmax(x, y)
    else:
        return None
    return round_f32(r) if dt.bits(dtype) == 32 else r


def fold_int(t: type, x: int, y: int) -> int | None:
    if t is n.Add:
        return x + y
    if t is n.Sub:
        return x - y
    if t is n.Mul:
        return x * y
    if t is n.Min:
        return min(x, y)
    if t is n.Max:
        return max(x, y)
    if y == 0:
        return None
    if t is n.FloorDiv:
        return x // y
    if t is n.FloorMod:
        return x % y
    if t is n.Div:
        return truncdiv_int(x, y)
    if t is n.Mod:
        return truncmod_int(x, y)
    return None


CMP_FOLD = {
    n.LT: lambda x, y: x < y,
    n.LE: lambda x, y: x <= y,
    n.GT: lambda x, y: x > y,
    n.GE: lambda x, y: x >= y,
    n.EQ: lambda x, y: x == y,
    n.NE: lambda x, y: x != y,
}
NEGATE = {n.LT: n.GE, n.GE: n.LT, n.LE: n.GT, n.GT: n.LE, n.EQ: n.NE, n.NE: n.EQ}
IMM = (n.IntImm, n.FloatImm)


def zero_of(dtype: str) -> n.PrimExpr:
    return n.FloatImm(0.0, dtype) if dt.is_float(dtype) else n.IntImm(0, dtype)


def bool_const(v: bool, lanes: int = 1) -> n.PrimExpr:
    c = n.IntImm(int(v), "bool")
    return c if lanes == 1 else n.Broadcast(c, lanes)


def const_value(e: n.PrimExpr) -> Any:
    """The value of a scalar or broadcast immediate, else None."""
    if type(e) is n.Broadcast:
        e = e.value
    if type(e) in IMM:
        return e.value
    return None


def decide_bounds(t: type, lo: Any, hi: Any) -> bool | None:
    """Truth of `d <op> 0` for every d in [lo, hi], or None when it depends on d."""
    if t is n.LT:
        return True if hi < 0 else False if lo >= 0 else None
    if t is n.LE:
        return True if hi <= 0 else False if lo > 0 else None
    if t is n.GT:
        return True if lo > 0 else False if hi <= 0 else None
    if t is n.GE:
        return True if lo >= 0 else False if hi < 0 else None
    if lo > 0 or hi < 0:
        return t is n.NE
    if lo == hi == 0:
        return t is n.EQ
    return None
