"""Math intrinsics as `Call` nodes; target code generators map each name to hardware."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from ..expr import PrimExpr, StringImm, convert
from ..expr import construct as _c
from ..expr import dtype as dt

UNARY_MATH = (
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil",
    "round", "trunc", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh",
    "acosh", "atanh", "log1p", "expm1",
)


def _unary(op: str) -> Any:
    def f(x: Any) -> PrimExpr:
        x = convert(x)
        if not dt.is_float(x.dtype):
            if op in ("floor", "ceil", "round", "trunc"):
                return x
            x = _c.cast("float32", x)
        return _c.call(x.dtype, op, x)

    f.__name__ = op
    f.__doc__ = f"Elementwise {op}."
    return f


exp = _unary("exp")
exp2 = _unary("exp2")
log = _unary("log")
log2 = _unary("log2")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
tanh = _unary("tanh")
sigmoid = _unary("sigmoid")
erf = _unary("erf")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")  # noqa: A001  (to nearest, ties to even)
trunc = _unary("trunc")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
sinh = _unary("sinh")
cosh = _unary("cosh")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")
log1p = _unary("log1p")
expm1 = _unary("expm1")

BIT_OPS = ("bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right")


def _bit_op(op: str) -> Any:
    def f(x: Any, y: Any) -> PrimExpr:
        x, y = _c.binary_args(x, y)
        if dt.is_float(x.dtype):
            raise TypeError(f"{op} needs integer or bool operands, got {x.dtype}")
        return _c.call(x.dtype, op, x, y)

    f.__name__ = op
    f.__doc__ = (f"Elementwise {op} of integers (C semantics; a shift amount outside "
                 "[0, bits) is undefined: guard it).")
    return f


bitwise_and = _bit_op("bitwise_and")
bitwise_or = _bit_op("bitwise_or")
bitwise_xor = _bit_op("bitwise_xor")
shift_left = _bit_op("shift_left")
shift_right = _bit_op("shift_right")  # arithmetic for signed types, logical for unsigned


def reinterpret(x: Any, dtype: str) -> PrimExpr:
    """The bits of `x` read as `dtype` (same width): float32 <-> int32/uint32 and so on."""
    x = convert(x)
    if dt.bits(x.dtype) != dt.bits(dtype):
        raise TypeError(f"reinterpret {x.dtype} as {dtype}: the widths differ")
    return _c.call(dt.with_lanes(dtype, dt.lanes(x.dtype)), "reinterpret", x)


def abs(x: Any) -> PrimExpr:  # noqa: A001
    x = convert(x)
    if dt.is_uint(x.dtype) or dt.is_bool(x.dtype):
        return x
    return _c.call(x.dtype, "abs", x)


def pow(x: Any, y: Any) -> PrimExpr:  # noqa: A001
    x, y = _c.binary_args(x, y)
    if not dt.is_float(x.dtype):
        x, y = _c.cast("float32", x), _c.cast("float32", y)
    return _c.call(x.dtype, "pow", x, y)


def fma(a: Any, b: Any, c: Any) -> PrimExpr:
    a, b = _c.binary_args(a, b)
    a, c = _c.binary_args(a, c)
    return _c.call(a.dtype, "fma", a, b, c)


def power(x: Any, y: Any) -> PrimExpr:
    return pow(x, y)


def if_then_else(cond: Any, t: Any, f: Any) -> PrimExpr:
    """`t` if `cond` else `f`, evaluating only the taken side (safe for padded reads)."""
    return _c.if_then_else(cond, t, f)


def select(cond: Any, t: Any, f: Any) -> PrimExpr:
    """Both sides evaluated (vectorizes well); prefer if_then_else when a side may be unsafe."""
    return _c.select(cond, t, f)


def const(value: Any, dtype: str | None = None) -> PrimExpr:
    return _c.const(value, dtype)


def cast(x: Any, dtype: str) -> PrimExpr:
    return _c.cast(dtype, x)


def max_expr(a: Any, b: Any) -> PrimExpr:
    return _c.max_(a, b)


def min_expr(a: Any, b: Any) -> PrimExpr:
    return _c.min_(a, b)


def all(*conds: Any) -> PrimExpr:  # noqa: A001
    out = _c.const(True)
    for c in conds:
        out = _c.logical_and(out, c)
    return out


def any(*conds: Any) -> PrimExpr:  # noqa: A001
    out = _c.const(False)
    for c in conds:
        out = _c.logical_or(out, c)
    return out


# runtime checks -------------------------------------------------------------------------------
CHECK_PREFIX = "check:"  # an assertion message that is a check's JSON description
_CHECK_NODE: ContextVar[int | None] = ContextVar("tensorforge_check_node", default=None)


@contextmanager
def check_scope(node: int) -> Iterator[None]:
    """Stamp the checks built inside (`runtime_check`) with the position of the graph node
    whose compute builds them in its fused group (the executor names that node)."""
    token = _CHECK_NODE.set(node)
    try:
        yield
    finally:
        _CHECK_NODE.reset(token)


def runtime_check(value: Any, ok: Any, **info: Any) -> PrimExpr:
    """`value`, after checking `ok` at run time: where `ok` is false the kernel stops and
    returns the status of this check. `info` (JSON-able) describes the check for the error
    message: `kind` ("index", "div_zero"), `op` (the ONNX-style op name), `tensor` (the
    placeholder whose data is checked) and kind-specific fields; see
    `tensorforge.runtime.checks`, which turns a failed status into a `TensorforgeError`."""
    value, ok = convert(value), convert(ok)
    if not dt.is_bool(ok.dtype):
        raise TypeError(f"runtime_check: the condition {ok} is not boolean")
    info.setdefault("node", _CHECK_NODE.get())
    text = CHECK_PREFIX + json.dumps(info, sort_keys=True)
    return _c.call(value.dtype, "runtime_check", value, ok, StringImm(text))
