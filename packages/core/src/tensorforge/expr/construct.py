"""Constructors behind the Python operators: conversion of Python scalars, dtype promotion,
and the trivial folds (constants, `x + 0`, `x * 1`) that keep generated IR readable.
Real simplification lives in `tensorforge.arith`."""

from __future__ import annotations

from typing import Any

from . import dtype as dt
from .nodes import (
    Add,
    And,
    Broadcast,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Select,
    Sub,
)
from .numeric import float_to_int, fmax, fmin


def const(value: Any, dtype: str | None = None) -> PrimExpr:
    """A constant of `dtype` (inferred from the Python type when omitted)."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        else:
            dtype = "float32"
    if dt.lanes(dtype) > 1:
        return Broadcast(const(value, dt.element(dtype)), dt.lanes(dtype))
    if dt.is_float(dtype):
        return FloatImm(float(value), dtype)
    if dt.is_bool(dtype):
        return IntImm(int(bool(value)), "bool")
    return IntImm(int(value), dtype)


def convert(value: Any, dtype: str | None = None) -> PrimExpr:
    if isinstance(value, PrimExpr):
        return value
    if hasattr(value, "as_expr"):  # IterVar and friends
        return value.as_expr()
    if isinstance(value, (bool, int, float)):
        return const(value, dtype)
    if hasattr(value, "dtype") and hasattr(value, "item"):  # numpy scalar
        return const(value.item(), str(value.dtype))
    raise TypeError(f"cannot convert {value!r} ({type(value).__name__}) to an expression")


def _is_const(e: PrimExpr, v: float | None = None) -> bool:
    if isinstance(e, (IntImm, FloatImm)):
        return v is None or e.value == v
    if isinstance(e, Broadcast):
        return _is_const(e.value, v)
    return False


def _lift_scalar(x: Any, other: Any) -> PrimExpr:
    """Convert a Python scalar to the dtype of the expression it meets."""
    if isinstance(x, PrimExpr) or hasattr(x, "as_expr"):
        return convert(x)
    if isinstance(other, PrimExpr) or hasattr(other, "as_expr"):
        o = convert(other)
        if isinstance(x, float) and not dt.is_float(o.dtype):
            return const(x, "float32")
        return const(x, o.dtype)
    return convert(x)


def binary_args(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Match dtypes of two operands (int -> float, narrow -> wide, scalar -> vector)."""
    a, b = _lift_scalar(a, b), _lift_scalar(b, a)
    if a.dtype == b.dtype:
        return a, b
    da, db = dt.parse(a.dtype), dt.parse(b.dtype)
    if da.lanes != db.lanes:
        if da.lanes == 1:
            a = Broadcast(a, db.lanes)
        elif db.lanes == 1:
            b = Broadcast(b, da.lanes)
        else:
            raise TypeError(f"lane mismatch: {a.dtype} vs {b.dtype} in `{a}` and `{b}`")
        da, db = dt.parse(a.dtype), dt.parse(b.dtype)
    if da.element == db.element:
        return a, b
    if da.code == "float" and db.code != "float":
        return a, cast(a.dtype, b)
    if db.code == "float" and da.code != "float":
        return cast(b.dtype, a), b
    if da.bits >= db.bits:
        return a, cast(dt.with_lanes(da.element, db.lanes), b)
    return cast(dt.with_lanes(db.element, da.lanes), a), b


def truncdiv_int(x: int, y: int) -> int:
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


def truncmod_int(x: int, y: int) -> int:
    return x - y * truncdiv_int(x, y)


def _both_imm(a: PrimExpr, b: PrimExpr) -> bool:
    return type(a) in (IntImm, FloatImm) and type(b) in (IntImm, FloatImm)


def add(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if _both_imm(a, b):
        return const(a.value + b.value, a.dtype)
    if _is_const(b, 0):
        return a
    if _is_const(a, 0):
        return b
    return Add(a, b)


def sub(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if _both_imm(a, b):
        return const(a.value - b.value, a.dtype)
    if _is_const(b, 0):
        return a
    return Sub(a, b)


def mul(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if _both_imm(a, b):
        return const(a.value * b.value, a.dtype)
    if _is_const(b, 1):
        return a
    if _is_const(a, 1):
        return b
    if not dt.is_float(a.dtype) and (_is_const(a, 0) or _is_const(b, 0)):
        return const(0, a.dtype)
    return Mul(a, b)


def div(a: Any, b: Any) -> PrimExpr:
    """`/`: true division of floats. Integers must use `//` (floor) or `truncdiv`."""
    a, b = binary_args(a, b)
    if not dt.is_float(a.dtype):
        raise TypeError(
            f"`/` on integer expressions `{a}` / `{b}` is ambiguous: use `//` for floor "
            "division or tensorforge.expr.truncdiv for C-style truncation"
        )
    if _both_imm(a, b) and b.value != 0:
        return const(a.value / b.value, a.dtype)
    if _is_const(b, 1):
        return a
    return Div(a, b)


def truncdiv(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if type(a) is IntImm and type(b) is IntImm and b.value != 0:
        return const(truncdiv_int(a.value, b.value), a.dtype)
    return Div(a, b)


def truncmod(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if type(a) is IntImm and type(b) is IntImm and b.value != 0:
        return const(truncmod_int(a.value, b.value), a.dtype)
    return Mod(a, b)


def floordiv(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if dt.is_float(a.dtype):
        return call(a.dtype, "floor", div(a, b))
    if type(a) is IntImm and type(b) is IntImm and b.value != 0:
        return const(a.value // b.value, a.dtype)
    if _is_const(b, 1):
        return a
    return FloorDiv(a, b)


def floormod(a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    if type(a) is IntImm and type(b) is IntImm and b.value != 0:
        return const(a.value % b.value, a.dtype)
    if _is_const(b, 1):
        return const(0, a.dtype)
    return FloorMod(a, b)


def min_(a: Any, b: Any) -> PrimExpr:
    """Minimum; for floats numpy's (NaN-propagating, see `numeric.fmin`)."""
    a, b = binary_args(a, b)
    if _both_imm(a, b):
        return a if fmin(a.value, b.value) is a.value else b
    return Min(a, b)


def max_(a: Any, b: Any) -> PrimExpr:
    """Maximum; for floats numpy's (NaN-propagating, see `numeric.fmax`)."""
    a, b = binary_args(a, b)
    if _both_imm(a, b):
        return a if fmax(a.value, b.value) is a.value else b
    return Max(a, b)


def neg(a: Any) -> PrimExpr:
    """-a; for floats `a * -1` (IEEE negation: -(0.0) is -0.0, which `0 - a` is not)."""
    a = convert(a)
    if type(a) in (IntImm, FloatImm):
        return const(-a.value, a.dtype)
    if dt.is_float(a.dtype):
        return Mul(a, const(-1.0, a.dtype))
    return sub(const(0, a.dtype), a)


def cmp(kind: type, a: Any, b: Any) -> PrimExpr:
    a, b = binary_args(a, b)
    return kind(a, b)


def _as_bool(x: Any) -> PrimExpr:
    x = convert(x)
    if not dt.is_bool(x.dtype):
        raise TypeError(f"logical operators need boolean operands, got `{x}` of {x.dtype}")
    return x


def logical_and(a: Any, b: Any) -> PrimExpr:
    a, b = _as_bool(a), _as_bool(b)
    if _is_const(a):
        return b if a.value else a
    if _is_const(b):
        return a if b.value else b
    return And(a, b)


def logical_or(a: Any, b: Any) -> PrimExpr:
    a, b = _as_bool(a), _as_bool(b)
    if _is_const(a):
        return a if a.value else b
    if _is_const(b):
        return b if b.value else a
    return Or(a, b)


def logical_not(a: Any) -> PrimExpr:
    a = _as_bool(a)
    if type(a) is IntImm:
        return const(not a.value, "bool")
    return Not(a)


def cast(dtype: str, value: Any) -> PrimExpr:
    value = convert(value)
    if value.dtype == dtype:
        return value
    if dt.lanes(dtype) != dt.lanes(value.dtype) and dt.lanes(value.dtype) == 1:
        return Broadcast(cast(dt.element(dtype), value), dt.lanes(dtype))
    if type(value) in (IntImm, FloatImm) and dt.lanes(dtype) == 1:
        v = value.value
        if not dt.is_float(dtype) and isinstance(v, float):
            v = float_to_int(v, dtype)
        return const(v, dtype)
    return Cast(dtype, value)


def select(cond: Any, t: Any, f: Any) -> PrimExpr:
    cond = _as_bool(cond)
    t, f = binary_args(t, f)
    if type(cond) is IntImm:
        return t if cond.value else f
    return Select(cond, t, f)


def call(dtype: str, op: str, *args: Any) -> PrimExpr:
    return Call(dtype, op, tuple(convert(a) for a in args))


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """Lazy select: only the taken branch is evaluated (guards out-of-bounds reads)."""
    cond = _as_bool(cond)
    t, f = binary_args(t, f)
    if type(cond) is IntImm:
        return t if cond.value else f
    return Call(t.dtype, "if_then_else", (cond, t, f))
