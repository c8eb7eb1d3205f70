"""More elementwise math: trigonometric and hyperbolic functions, rounding, sign, NaN/Inf
tests, activations with attributes (gelu, mish, shrink, celu, swish ...), integer bit
operations and shifts, and modulo.

Transcendental functions are `te` intrinsics the target maps to its math library (float16
computes in float32). Bit operations follow C on integers; a shift amount outside
[0, bits) gives what ONNX specifies (0, or -1 for a right shift of a negative value) instead
of C's undefined result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te
from ...expr import PrimExpr, const
from ...expr import dtype as dtypes
from ...ops.broadcast import broadcast_binary
from ..registry import OpPattern, TypeList, broadcast_shapes, register_op, same_as_input
from .elementwise import _unary_compute


def _f(x: PrimExpr, v: float) -> PrimExpr:
    return const(v, x.dtype)


def _np_sign(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    return np.sign(a)


def _softplus(x: PrimExpr) -> PrimExpr:
    return te.max_expr(x, _f(x, 0)) + te.log1p(te.exp(-te.abs(x)))


#: the tanh approximation's constants
_GELU_C, _GELU_K = float(np.sqrt(2 / np.pi)), 0.044715


def _gelu_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    x = a.astype("float64")
    if at.get("approximate", "none") == "tanh":
        y = 0.5 * x * (1 + np.tanh(_GELU_C * (x + _GELU_K * x ** 3)))
    else:
        from math import erf

        y = 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2))) if x.size else x
    return y


def _gelu_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    half, one = _f(x, 0.5), _f(x, 1.0)
    if at.get("approximate", "none") == "tanh":
        inner = _f(x, _GELU_C) * (x + _f(x, _GELU_K) * x * x * x)
        return half * x * (one + te.tanh(inner))
    # 1 + erf(z) cancels for z << 0: float32 and float16 evaluate it in float64
    w = x.astype("float64") if x.dtype != "float64" else x
    y = _f(w, 0.5) * w * (_f(w, 1.0) + te.erf(w * _f(w, float(1 / np.sqrt(2)))))
    return y.astype(x.dtype)


def _shrink_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    lam, bias = at.get("lambd", 0.5), at.get("bias", 0.0)
    return np.where(a < -lam, a + bias, np.where(a > lam, a - bias, 0))


def _shrink_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    lam, bias = at.get("lambd", 0.5), at.get("bias", 0.0)
    return te.select(x < _f(x, -lam), x + _f(x, bias),
                     te.select(x > _f(x, lam), x - _f(x, bias), _f(x, 0)))


def _celu_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    al = at.get("alpha", 1.0)
    return np.maximum(a, 0) + np.minimum(0, al * (np.exp(a / al) - 1))


def _celu_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    al = at.get("alpha", 1.0)
    return te.max_expr(x, _f(x, 0)) + te.min_expr(
        _f(x, 0), _f(x, al) * (te.exp(x * _f(x, 1 / al)) - _f(x, 1)))


def _isinf_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    pos, neg = at.get("detect_positive", 1), at.get("detect_negative", 1)
    return (np.isposinf(a) & bool(pos)) | (np.isneginf(a) & bool(neg))


def _isinf_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    pos, neg = at.get("detect_positive", 1), at.get("detect_negative", 1)
    conds = ([x == _f(x, float("inf"))] if pos else []) + (
        [x == _f(x, float("-inf"))] if neg else [])
    return te.any(*conds)


def _sign_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    one, zero = _f(x, 1), _f(x, 0)
    if dtypes.is_uint(x.dtype):
        return te.select(x > zero, one, zero)
    out = te.select(x > zero, one, te.select(x < zero, _f(x, -1), zero))
    return te.select(x != x, x, out) if dtypes.is_float(x.dtype) else out


def _bitwise_not_te(x: PrimExpr, at: dict[str, Any]) -> PrimExpr:
    if dtypes.is_bool(x.dtype):
        return te.select(x, const(False), const(True))
    ones = const(-1, x.dtype) if not dtypes.is_uint(x.dtype) else const(
        2 ** dtypes.bits(x.dtype) - 1, x.dtype)
    return te.bitwise_xor(x, ones)


# name: (numpy reference, te, doc); the output has the input's dtype
_UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], str]] = {
    "sin": (lambda a, at: np.sin(a), lambda x, at: te.sin(x), "sin"),
    "cos": (lambda a, at: np.cos(a), lambda x, at: te.cos(x), "cos"),
    "tan": (lambda a, at: np.tan(a), lambda x, at: te.tan(x), "tan"),
    "asin": (lambda a, at: np.arcsin(a), lambda x, at: te.asin(x), "asin"),
    "acos": (lambda a, at: np.arccos(a), lambda x, at: te.acos(x), "acos"),
    "atan": (lambda a, at: np.arctan(a), lambda x, at: te.atan(x), "atan"),
    "sinh": (lambda a, at: np.sinh(a), lambda x, at: te.sinh(x), "sinh"),
    "cosh": (lambda a, at: np.cosh(a), lambda x, at: te.cosh(x), "cosh"),
    "asinh": (lambda a, at: np.arcsinh(a), lambda x, at: te.asinh(x), "asinh"),
    "acosh": (lambda a, at: np.arccosh(a), lambda x, at: te.acosh(x), "acosh"),
    "atanh": (lambda a, at: np.arctanh(a), lambda x, at: te.atanh(x), "atanh"),
    "round": (lambda a, at: np.round(a), lambda x, at: te.round(x),
              "round to nearest, ties to even"),
    "sign": (_np_sign, _sign_te, "sign: -1, 0 or 1 (NaN stays NaN)"),
    "softsign": (lambda a, at: a / (1 + np.abs(a)),
                 lambda x, at: x / (_f(x, 1) + te.abs(x)), "softsign x / (1 + |x|)"),
    "mish": (lambda a, at: a * np.tanh(np.logaddexp(a, 0)),
             lambda x, at: x * te.tanh(_softplus(x)), "mish x * tanh(softplus(x))"),
    "gelu": (_gelu_np, _gelu_te, "gelu (attr approximate: 'none' (erf) or 'tanh')"),
    "shrink": (_shrink_np, _shrink_te, "shrink (attrs lambd, bias)"),
    "thresholded_relu": (
        lambda a, at: np.where(a > at.get("alpha", 1.0), a, 0),
        lambda x, at: te.select(x > _f(x, at.get("alpha", 1.0)), x, _f(x, 0)),
        "x if x > alpha else 0"),
    "celu": (_celu_np, _celu_te, "celu (attr alpha)"),
    "swish": (lambda a, at: a / (1 + np.exp(-at.get("alpha", 1.0) * a)),
              lambda x, at: x * te.sigmoid(x * _f(x, at.get("alpha", 1.0))),
              "swish x * sigmoid(alpha * x)"),
    "bitwise_not": (lambda a, at: np.invert(a), _bitwise_not_te, "bitwise not of integers"),
}

for _name, (_ref, _te, _doc) in _UNARY.items():
    register_op(
        _name, OpPattern.ELEMWISE, same_as_input(),
        (lambda r: lambda ins, at: [np.asarray(r(ins[0], at)).astype(ins[0].dtype)])(_ref),
        _unary_compute(_te), doc=f"elementwise {_doc}",
    )


def _bool_unary_compute(fn: Callable[..., Any]) -> Callable[..., list[Any]]:
    def compute(inputs: list[Any], attrs: dict[str, Any], out_types: TypeList) -> list[Any]:
        (x,) = inputs
        return [te.compute(x.shape, lambda *i: fn(x[i], attrs), name="test", tag="elemwise")]

    return compute


for _name, _ref, _te, _doc in (
        ("isnan", lambda a, at: np.isnan(a), lambda x, at: x != x, "x is NaN"),
        ("isinf", _isinf_np, _isinf_te, "x is +-inf (attrs detect_positive, detect_negative)")):
    register_op(_name, OpPattern.ELEMWISE, lambda types, at: [(types[0][0], "bool")],
                (lambda r: lambda ins, at: [np.asarray(r(ins[0], at))])(_ref),
                _bool_unary_compute(_te), doc=f"elementwise {_doc} -> bool")


# binary integer ops ------------------------------------------------------------------------
def _shift_np(a: np.ndarray, b: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    bits = a.dtype.itemsize * 8
    a, b = np.broadcast_arrays(a, b)
    ok = (b >= 0) & (b < bits)
    s = np.where(ok, b, 0).astype(a.dtype)
    if at.get("direction", "LEFT") == "LEFT":
        out = np.left_shift(a, s)
        fill = np.zeros_like(a)
    else:
        out = np.right_shift(a, s)
        fill = np.where(a < 0, -1, 0).astype(a.dtype) if a.dtype.kind == "i" else \
            np.zeros_like(a)
    return np.where(ok, out, fill).astype(a.dtype)


def _shift_te(at: dict[str, Any]) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    left = at.get("direction", "LEFT") == "LEFT"

    def f(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        bits = dtypes.bits(a.dtype)
        zero = const(0, a.dtype)
        ok = te.all(b >= const(0, b.dtype), b < const(bits, b.dtype))
        safe = te.select(ok, b, const(0, b.dtype))
        out = te.shift_left(a, safe) if left else te.shift_right(a, safe)
        if left or dtypes.is_uint(a.dtype):
            fill = zero
        else:
            fill = te.select(a < zero, const(-1, a.dtype), zero)
        return te.select(ok, out, fill)

    return f


def _mod_np(a: np.ndarray, b: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    with np.errstate(all="ignore"):
        if at.get("fmod", 0):
            out = np.fmod(a, b)
        else:
            out = np.mod(a, b)
    if a.dtype.kind in "iu":
        out = np.where(np.broadcast_to(b, out.shape) == 0, 0, out)
    return out


def _mod_te(at: dict[str, Any]) -> Callable[[PrimExpr, PrimExpr], PrimExpr]:
    fmod = bool(at.get("fmod", 0))

    def f(a: PrimExpr, b: PrimExpr) -> PrimExpr:
        if dtypes.is_float(a.dtype):
            r = te.truncmod(a, b)  # C fmod: exact
            if fmod:
                return r
            zero = const(0.0, a.dtype)  # floor modulo as Python: r + b when the signs differ
            return te.select(te.all(r != zero, (r < zero) != (b < zero)), r + b, r)
        zero, one = const(0, a.dtype), const(1, a.dtype)
        safe = te.select(b == zero, one, b)  # x % 0 is 0 (a trap in C)
        r = te.truncmod(a, safe) if fmod else te.floormod(a, safe)
        return te.select(b == zero, zero, r)

    return f


_BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], str]] = {
    "bitwise_and": (lambda a, b, at: np.bitwise_and(a, b),
                    lambda at: lambda a, b: te.bitwise_and(a, b), "bitwise and"),
    "bitwise_or": (lambda a, b, at: np.bitwise_or(a, b),
                   lambda at: lambda a, b: te.bitwise_or(a, b), "bitwise or"),
    "bitwise_xor": (lambda a, b, at: np.bitwise_xor(a, b),
                    lambda at: lambda a, b: te.bitwise_xor(a, b), "bitwise xor"),
    "bit_shift": (_shift_np, _shift_te, "bit shift (attr direction LEFT/RIGHT); amounts "
                  "outside [0, bits) give 0 (-1 for a right shift of a negative value)"),
    "mod": (_mod_np, _mod_te, "modulo (attr fmod: 0 floor/sign of divisor, 1 C fmod/sign "
            "of dividend); an integer modulo by 0 is 0"),
}


def _binary_compute(make: Callable[..., Any]) -> Callable[..., list[Any]]:
    def compute(inputs: list[Any], attrs: dict[str, Any], out_types: TypeList) -> list[Any]:
        a, b = inputs
        return [broadcast_binary(a, b, make(attrs), name="bin")]

    return compute


for _name, (_ref, _mk, _doc) in _BINARY.items():
    register_op(
        _name, OpPattern.BROADCAST,
        lambda types, at: [(broadcast_shapes([t[0] for t in types]), types[0][1])],
        (lambda r: lambda ins, at: [np.asarray(r(ins[0], ins[1], at)).astype(
            ins[0].dtype)])(_ref),
        _binary_compute(_mk), doc=f"broadcasting {_doc}",
    )
