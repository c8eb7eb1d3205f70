"""Elementwise and broadcasting ops."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ... import te
from ...errors import DataCheckError
from ...expr import PrimExpr, const
from ...expr import dtype as dt
from ...ops.arith import float_to_int_np, int_pow, int_pow_np, nonzero_divisor, saturate_high
from ...ops.broadcast import broadcast_binary
from ..registry import OpPattern, TypeList, broadcast_shapes, register_op, same_as_input


def _f(x: PrimExpr, v: float) -> PrimExpr:
    return const(v, x.dtype)


_UNARY: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "relu": (lambda a, at: np.maximum(a, 0), lambda x, at: te.max_expr(x, _f(x, 0))),
    "sigmoid": (lambda a, at: 1 / (1 + np.exp(-a)), lambda x, at: te.sigmoid(x)),
    "tanh": (lambda a, at: np.tanh(a), lambda x, at: te.tanh(x)),
    "exp": (lambda a, at: np.exp(a), lambda x, at: te.exp(x)),
    "log": (lambda a, at: np.log(a), lambda x, at: te.log(x)),
    "sqrt": (lambda a, at: np.sqrt(a), lambda x, at: te.sqrt(x)),
    "neg": (lambda a, at: -a, lambda x, at: -x),
    "abs": (lambda a, at: np.abs(a), lambda x, at: te.abs(x)),
    "floor": (lambda a, at: np.floor(a), lambda x, at: te.floor(x)),
    "ceil": (lambda a, at: np.ceil(a), lambda x, at: te.ceil(x)),
    "reciprocal": (lambda a, at: 1 / a, lambda x, at: _f(x, 1.0) / x),
    "identity": (lambda a, at: a.copy(), lambda x, at: x),
    "clip": (
        lambda a, at: np.clip(a, at.get("min", -np.inf), at.get("max", np.inf)),
        lambda x, at: te.min_expr(te.max_expr(x, _f(x, at.get("min", float("-inf")))),
                                  _f(x, at.get("max", float("inf")))),
    ),
    "leaky_relu": (
        lambda a, at: np.where(a >= 0, a, a * at.get("alpha", 0.01)),
        lambda x, at: te.select(x >= _f(x, 0), x, x * _f(x, at.get("alpha", 0.01))),
    ),
    "hard_sigmoid": (
        lambda a, at: np.clip(a * at.get("alpha", 0.2) + at.get("beta", 0.5), 0, 1),
        lambda x, at: te.min_expr(te.max_expr(
            x * _f(x, at.get("alpha", 0.2)) + _f(x, at.get("beta", 0.5)), _f(x, 0)), _f(x, 1)),
    ),
    "hard_swish": (
        lambda a, at: a * np.clip(a / 6 + 0.5, 0, 1),
        lambda x, at: x * te.min_expr(te.max_expr(x * _f(x, 1 / 6) + _f(x, 0.5), _f(x, 0)),
                                      _f(x, 1)),
    ),
    # x * sigmoid(x) (SiLU, swish): what `combine_swish` makes of Mul(x, Sigmoid(x))
    "silu": (lambda a, at: a / (1 + np.exp(-a)), lambda x, at: x * te.sigmoid(x)),
}


def _erf_np(a: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    from math import erf

    return np.vectorize(erf, otypes=[a.dtype])(a)


_UNARY["erf"] = (_erf_np, lambda x, at: te.erf(x))


def in_float32(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` over float16 operands computed in float32 and rounded once at the end, as ONNX
    Runtime does (a float16 constant such as LeakyRelu's alpha = 0.01 would otherwise be
    rounded to half, and (a + b) / 2 would overflow at 65504)."""

    def f(*args: Any) -> Any:
        exprs = [a for a in args if isinstance(a, PrimExpr)]
        if not exprs or exprs[0].dtype != "float16":
            return fn(*args)
        r = fn(*[a.astype("float32") if isinstance(a, PrimExpr) else a for a in args])
        return r.astype("float16") if r.dtype == "float32" else r

    return f


def _unary_compute(fn: Callable[..., Any]) -> Callable[..., list[Any]]:
    g = in_float32(fn)

    def compute(inputs: list[Any], attrs: dict[str, Any], out_types: TypeList) -> list[Any]:
        (x,) = inputs
        return [te.compute(x.shape, lambda *i: g(x[i], attrs), name="ew", tag="elemwise")]

    return compute


for _name, (_ref, _te) in _UNARY.items():
    register_op(
        _name, OpPattern.ELEMWISE, same_as_input(),
        (lambda r: lambda ins, at: [r(ins[0], at).astype(ins[0].dtype)])(_ref),
        _unary_compute(_te), doc=f"elementwise {_name}",
    )


def _cast_infer(types: TypeList, attrs: dict[str, Any]) -> TypeList:
    return [(types[0][0], attrs["to"])]


def _cast_ref(ins: list[np.ndarray], at: dict[str, Any]) -> list[np.ndarray]:
    from ..narrow_types import FORMATS

    if ins[0].dtype.name in FORMATS or at["to"] in FORMATS:
        return [_narrow_cast_np(ins[0], at)]
    x, to = ins[0], np.dtype(at["to"])
    if x.dtype.kind == "f" and to.kind in "iub":
        return [float_to_int_np(x, at["to"], at.get("saturate", False))]
    return [x.astype(to)]


def _narrow_cast_np(x: np.ndarray, at: dict[str, Any]) -> np.ndarray:
    """A cast from or to a narrow type (bfloat16, float8 ...) as the kernels do it
    (graph/narrow_types.py: rounding, saturate); the legalize pass rewrites it before code
    generation."""
    from ..narrow_types import FORMATS, compute_dtype, decode_np, encode_np, numpy_dtype

    to = at["to"]
    src = FORMATS.get(x.dtype.name)
    if src is not None:
        x = decode_np(x.view(src.storage), src)
    if to not in FORMATS:
        return x.astype(to)
    bits = encode_np(x.astype(compute_dtype(to)), FORMATS[to], at.get("saturate", True),
                     at.get("round_mode", "nearest"))
    return bits.view(numpy_dtype(to))


def _cast_compute(ins: list[Any], at: dict[str, Any], out: TypeList) -> list[Any]:
    x, to = ins[0], at["to"]

    def f(*i: Any) -> Any:
        v = x[i].astype(to)
        if at.get("saturate") and dt.is_float(x.dtype) and not dt.is_float(to):
            v = saturate_high(x[i], v, to)
        return v

    return [te.compute(x.shape, f, name="cast", tag="elemwise")]


register_op("cast", OpPattern.ELEMWISE, _cast_infer, _cast_ref, _cast_compute,
            doc="elementwise cast to attrs['to']; float -> int as x86 converts (NaN and out "
            "of range: INT_MIN), with attrs['saturate'] values above the maximum give it")


def _div_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind == "f":
        return a / b
    if np.any(b == 0):
        raise DataCheckError("Div: integer division by zero")
    with np.errstate(over="ignore"):
        q = np.floor_divide(a, b)  # -> truncation toward zero, as C (and ONNX Runtime)
        return np.where((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)), q + 1, q)


def _pow_np(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if a.dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
        return int_pow_np(a, b)
    with np.errstate(all="ignore"):
        return np.power(a, b)


def _pow_te(a: Any, b: Any) -> Any:
    if not dt.is_float(a.dtype) and not dt.is_float(b.dtype):
        return int_pow(a, b)
    return te.pow(a, b).astype(a.dtype)


_BINARY: dict[str, tuple[Callable[..., Any], Callable[..., Any], bool]] = {
    # name: (numpy, te, result is bool)
    "add": (np.add, lambda a, b: a + b, False),
    "sub": (np.subtract, lambda a, b: a - b, False),
    "mul": (np.multiply, lambda a, b: a * b, False),
    "div": (_div_np, lambda a, b: a / b if a.dtype.startswith("float") else te.truncdiv(a, b),
            False),
    "pow": (_pow_np, _pow_te, False),
    "maximum": (np.maximum, lambda a, b: te.max_expr(a, b), False),
    "minimum": (np.minimum, lambda a, b: te.min_expr(a, b), False),
    "equal": (np.equal, lambda a, b: a == b, True),
    "less": (np.less, lambda a, b: a < b, True),
    "less_equal": (np.less_equal, lambda a, b: a <= b, True),
    "greater": (np.greater, lambda a, b: a > b, True),
    "greater_equal": (np.greater_equal, lambda a, b: a >= b, True),
    "logical_and": (np.logical_and, lambda a, b: a & b, True),
    "logical_or": (np.logical_or, lambda a, b: a | b, True),
}


def _binary_infer(is_bool: bool) -> Callable[..., TypeList]:
    def infer(types: TypeList, attrs: dict[str, Any]) -> TypeList:
        shape = broadcast_shapes([t[0] for t in types])
        return [(shape, "bool" if is_bool else types[0][1])]

    return infer


def _binary_compute(fn: Callable[..., Any], name: str) -> Callable[..., list[Any]]:
    g = in_float32(fn)

    def compute(inputs: list[Any], attrs: dict[str, Any], out_types: TypeList) -> list[Any]:
        a, b = inputs
        if name == "div" and not dt.is_float(b.dtype):  # a zero divisor is an error
            return [broadcast_binary(a, b, lambda x, y: g(x, nonzero_divisor(y, b, "Div")),
                                     name="bin")]
        return [broadcast_binary(a, b, g, name="bin")]

    return compute


for _name, (_ref, _te, _is_bool) in _BINARY.items():
    register_op(
        _name, OpPattern.BROADCAST, _binary_infer(_is_bool),
        (lambda r, ib: lambda ins, at: [np.asarray(r(ins[0], ins[1])).astype(
            "bool" if ib else ins[0].dtype)])(_ref, _is_bool),
        _binary_compute(_te, _name), doc=f"broadcasting {_name}",
    )


def _where_infer(types: TypeList, attrs: dict[str, Any]) -> TypeList:
    return [(broadcast_shapes([t[0] for t in types]), types[1][1])]


def _where_compute(inputs: list[Any], attrs: dict[str, Any], out_types: TypeList) -> list[Any]:
    c, a, b = inputs
    shape = out_types[0][0]

    def idx(t: Any, i: tuple) -> tuple:
        off = len(i) - len(t.shape)
        return tuple(0 if int(t.shape[d].value) == 1 else i[off + d]
                     for d in range(len(t.shape)))

    return [te.compute(shape, lambda *i: te.select(c[idx(c, i)], a[idx(a, i)], b[idx(b, i)]),
                       name="where", tag="broadcast")]


register_op("where", OpPattern.BROADCAST, _where_infer,
            lambda ins, at: [np.where(ins[0], ins[1], ins[2])], _where_compute,
            doc="where(cond, x, y) with broadcasting")
