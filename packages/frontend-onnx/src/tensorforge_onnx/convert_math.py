"""Converters for elementwise math, activations, comparisons, casts and reductions."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from tensorforge.graph import Value
from tensorforge.graph.narrow_types import is_narrow

from .context import Context, f32, np_dtype
from .dispatch import converter

Node = onnx.NodeProto

_UNARY = {
    "Relu": "relu", "Sigmoid": "sigmoid", "Tanh": "tanh", "Exp": "exp", "Log": "log",
    "Sqrt": "sqrt", "Neg": "neg", "Abs": "abs", "Floor": "floor", "Ceil": "ceil",
    "Reciprocal": "reciprocal", "Erf": "erf", "HardSwish": "hard_swish", "Softplus": "softplus",
    "Not": "logical_not",
}


@converter(*_UNARY, versions=(1, 22))
def unary(ctx: Context, node: Node) -> list[Value]:
    return [ctx.emit(_UNARY[node.op_type], ctx.get(node, 0))]


_ATTR_UNARY: dict[str, tuple[str, dict[str, float]]] = {
    "LeakyRelu": ("leaky_relu", {"alpha": 0.01}),
    "HardSigmoid": ("hard_sigmoid", {"alpha": 0.2, "beta": 0.5}),
    "Elu": ("elu", {"alpha": 1.0}),
    "Selu": ("selu", {"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875}),
}


@converter(*_ATTR_UNARY, versions=(1, 22))
def attr_unary(ctx: Context, node: Node) -> list[Value]:
    op, defaults = _ATTR_UNARY[node.op_type]
    at = ctx.attrs(node)
    return [ctx.emit(op, ctx.get(node, 0), **{k: f32(at.get(k, v))
                                               for k, v in defaults.items()})]


@converter("PRelu", versions=(1, 16))
def prelu(ctx: Context, node: Node) -> list[Value]:
    x, slope = ctx.get(node, 0), ctx.get(node, 1)
    # ONNX 1-D slope of size C with a rank > 2 input: per-channel (an old exporters' form)
    if len(slope.shape) == 1 and len(x.shape) > 2 and slope.shape[0] == x.shape[1] != \
            x.shape[-1]:
        slope = ctx.reshape(slope, (slope.shape[0],) + (1,) * (len(x.shape) - 2))
    return [ctx.emit("prelu", x, slope)]


@converter("Identity", versions=(1, 25))
def identity(ctx: Context, node: Node) -> list[Value]:
    return [ctx.get(node, 0)]


_BINARY = {
    "Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Pow": "pow",
    "Equal": "equal", "Less": "less", "Greater": "greater", "LessOrEqual": "less_equal",
    "GreaterOrEqual": "greater_equal", "And": "logical_and", "Or": "logical_or",
}


@converter(*_BINARY, versions=(7, 19))
def binary(ctx: Context, node: Node) -> list[Value]:
    a, b = ctx.get(node, 0), ctx.get(node, 1)
    if node.op_type == "Pow":
        if np.dtype(a.dtype).kind in "iu" and np.dtype(b.dtype).kind == "f":
            # as ONNX Runtime: std::pow in double, truncated to the integer type
            r = ctx.emit("pow", ctx.cast(a, "float64"), ctx.cast(b, "float64"))
            return [ctx.cast(r, a.dtype)]
        if np.dtype(a.dtype).kind == "f":
            b = ctx.cast(b, a.dtype)
    return [ctx.emit(_BINARY[node.op_type], a, b)]


@converter("Xor", versions=(7, 7))
def xor(ctx: Context, node: Node) -> list[Value]:
    eq = ctx.emit("equal", ctx.get(node, 0), ctx.get(node, 1))
    return [ctx.emit("logical_not", eq)]


_VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}


@converter(*_VARIADIC, versions=(6, 13))
def variadic(ctx: Context, node: Node) -> list[Value]:
    vals = [ctx.get(node, i) for i in range(len(node.input)) if ctx.has(node, i)]
    out = vals[0]
    for v in vals[1:]:
        out = ctx.emit(_VARIADIC[node.op_type], out, v)
    if node.op_type == "Mean" and len(vals) > 1:
        out = ctx.emit("div", out, ctx.scalar(len(vals), out))
        if vals[0].dtype == "float16":  # as ONNX Runtime: in float32 (65504 + 65504 fits)
            wide = [ctx.cast(v, "float32") for v in vals]
            out = wide[0]
            for v in wide[1:]:
                out = ctx.emit("add", out, v)
            out = ctx.cast(ctx.emit("div", out, ctx.scalar(len(vals), out)), "float16")
    elif len(vals) == 1:
        out = ctx.emit("identity", out)
    return [out]


def _bound(dtype: str, lo: bool) -> float:
    """Clip's default bounds: numeric_limits lowest() and max() (finite, as the ONNX spec
    says: Clip(-inf) without a min is -FLT_MAX, not -inf)."""
    if np.dtype(dtype).kind == "f":
        fi = np.finfo(dtype)
        return float(fi.min) if lo else float(fi.max)
    info = np.iinfo(dtype)
    return int(info.min if lo else info.max)


@converter("Clip", versions=(6, 13))
def clip(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    if ctx.op_version < 11:
        at = ctx.attrs(node)
        lo, hi = at.get("min", _bound(x.dtype, True)), at.get("max", _bound(x.dtype, False))
        return [ctx.emit("clip", x, min=lo, max=hi)]
    mn, mx = ctx.get(node, 1), ctx.get(node, 2)
    if (mn is None or mn.is_const) and (mx is None or mx.is_const):
        lo = _bound(x.dtype, True) if mn is None else mn.const.item()
        hi = _bound(x.dtype, False) if mx is None else mx.const.item()
        return [ctx.emit("clip", x, min=lo, max=hi)]
    out = x if mn is None else ctx.emit("maximum", x, mn)
    return [out if mx is None else ctx.emit("minimum", out, mx)]


@converter("Where", versions=(9, 16))
def where(ctx: Context, node: Node) -> list[Value]:
    return [ctx.emit("where", ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2))]


@converter("Cast", versions=(6, 28))
def cast(ctx: Context, node: Node) -> list[Value]:
    to = ctx.attrs(node)["to"]
    try:
        dtype = np_dtype(to)
    except (KeyError, TypeError, ValueError):
        dtype = "?"
    if dtype in ("object", "?") or (not is_narrow(dtype) and np.dtype(dtype).kind not in
                                     "biuf"):
        raise ctx.fail(node, f"a cast to {onnx.TensorProto.DataType.Name(to)}",
                       "only numeric and bool tensors are supported")
    return [ctx.emit("cast", ctx.get(node, 0), **_cast_attrs(ctx, node, dtype))]


def _cast_attrs(ctx: Context, node: Node, to: str) -> dict[str, Any]:
    at = ctx.attrs(node)
    out: dict[str, Any] = {"to": to}
    if is_narrow(to):  # how a narrow float type rounds and saturates (Cast-19+)
        out["saturate"] = bool(at.get("saturate", 1))
        out["round_mode"] = str(at.get("round_mode", "nearest"))
    return out


@converter("CastLike", versions=(15, 28))
def cast_like(ctx: Context, node: Node) -> list[Value]:
    to = ctx.get(node, 1).dtype
    return [ctx.emit("cast", ctx.get(node, 0), **_cast_attrs(ctx, node, to))]


# reductions -------------------------------------------------------------------------------
_REDUCE = {"ReduceSum": "sum", "ReduceMean": "mean", "ReduceMax": "max", "ReduceMin": "min",
           "ReduceProd": "prod",
           "ReduceSumSquare": "sum", "ReduceL1": "sum", "ReduceL2": "sum",
           "ReduceLogSum": "sum", "ReduceLogSumExp": "sum"}


def _reduce_axes(ctx: Context, node: Node) -> tuple[int, ...] | None | str:
    """The reduced axes (None: all); 'noop' for an identity."""
    at = ctx.attrs(node)
    axes_as_input = ctx.op_version >= (13 if node.op_type == "ReduceSum" else 18)
    if axes_as_input:
        axes = ctx.const(node, 1, "axes")
        axes = None if axes is None else [int(a) for a in axes.reshape(-1)]
    else:
        axes = at.get("axes")
    if not axes:
        return "noop" if at.get("noop_with_empty_axes", 0) else None
    return tuple(int(a) for a in axes)


def _int_reduce(ctx: Context, node: Node, x: Value) -> Value:
    """An integer reduction as ONNX Runtime computes it: in double, converted back with
    saturation (ReduceSum of [2e9, 2e9] in int32 is 2147483647, ReduceMean truncates).
    ReduceLogSumExp: ONNX Runtime adds exp(x - max) truncated to the integer type, so
    log(count of the maximum) + max, truncated."""
    if node.op_type == "ReduceLogSumExp":
        axes = _reduce_axes(ctx, node)
        if axes != "noop":
            nd = len(x.shape)
            axes_n = None if axes is None else tuple(a % nd for a in axes)
            keep = bool(ctx.attrs(node).get("keepdims", 1))
            m = ctx.emit("reduce_max", x, axes=axes_n, keepdims=True)
            terms = ctx.cast(ctx.emit("exp", ctx.cast(ctx.emit("sub", x, m), "float64")),
                             x.dtype)
            s = ctx.emit("reduce_sum", ctx.cast(terms, "float64"), axes=axes_n, keepdims=keep)
            m2 = ctx.cast(m if keep else ctx.reshape(m, s.shape), "float64")
            return ctx.emit("cast", ctx.emit("add", ctx.emit("log", s), m2), to=x.dtype,
                            saturate=True)
    r = _reduce_float(ctx, node, ctx.cast(x, "float64"))
    return ctx.emit("cast", r, to=x.dtype, saturate=True)


@converter(*_REDUCE, versions=(1, 28))
def reduce(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    if np.dtype(x.dtype).kind in "iu" and node.op_type not in ("ReduceMax", "ReduceMin"):
        return [_int_reduce(ctx, node, x)]
    return [_reduce_float(ctx, node, x)]


def _reduce_float(ctx: Context, node: Node, x: Value) -> Value:
    axes = _reduce_axes(ctx, node)
    if axes == "noop":  # no reduction; the elementwise parts still apply (as onnxruntime)
        post = {"ReduceSumSquare": ["mul"], "ReduceL1": ["abs"], "ReduceL2": ["abs"],
                "ReduceLogSum": ["log"]}.get(node.op_type, ["identity"])
        if post == ["mul"]:
            return ctx.emit("mul", x, x)
        return ctx.emit(post[0], x)
    nd = len(x.shape)
    axes_n = None if axes is None else tuple(a % nd for a in axes)
    keep = bool(ctx.attrs(node).get("keepdims", 1))
    if x.dtype == "bool":
        if node.op_type not in ("ReduceMax", "ReduceMin"):
            raise ctx.fail(node, "a reduction of a bool tensor")
        r = ctx.emit(f"reduce_{_REDUCE[node.op_type]}", ctx.cast(x, "uint8"), axes=axes_n,
                     keepdims=keep)
        return ctx.cast(r, "bool")
    kw: dict[str, Any] = {"axes": axes_n, "keepdims": keep}
    op = node.op_type
    if op == "ReduceSumSquare" or op == "ReduceL2":
        x = ctx.emit("mul", x, x)
    elif op == "ReduceL1":
        x = ctx.emit("abs", x)
    elif op == "ReduceLogSumExp":
        m = ctx.emit("reduce_max", x, axes=axes_n, keepdims=True)
        e = ctx.emit("exp", ctx.emit("sub", x, m))
        s = ctx.emit("log", ctx.emit("reduce_sum", e, **kw))
        m2 = m if keep else ctx.reshape(m, s.shape)
        return ctx.emit("add", s, m2)
    out = ctx.emit(f"reduce_{_REDUCE[op]}", x, **kw)
    if op == "ReduceL2":
        out = ctx.emit("sqrt", out)
    elif op == "ReduceLogSum":
        out = ctx.emit("log", out)
    return out


@converter("Einsum", versions=(12, 28))
def einsum(ctx: Context, node: Node) -> list[Value]:
    vals = [ctx.get(node, i) for i in range(len(node.input))]
    eq = str(ctx.attrs(node)["equation"]).replace(" ", "")
    lhs, _, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(vals):
        raise ctx.fail(node, f"equation {eq!r} for {len(vals)} operands")
    # `...` becomes capital letters, one per broadcast dim, aligned from the right
    ell = max((len(v.shape) - len(s.replace("...", "")) for s, v in zip(subs, vals)
               if "..." in s), default=0)
    caps = "".join(chr(ord("A") + k) for k in range(ell))
    subs = [s.replace("...", caps[ell - (len(v.shape) - len(s.replace("...", ""))):])
            for s, v in zip(subs, vals)]
    if _ == "":  # implicit output: the letters seen once, sorted, after the ellipsis dims
        counts = {ch: sum(s.count(ch) for s in subs) for ch in set("".join(subs))}
        rhs = caps + "".join(sorted(ch for ch, n in counts.items() if n == 1 and
                                    ch not in caps))
    else:
        rhs = rhs.replace("...", caps)
    return [ctx.emit_multi("einsum", vals, {"inputs": tuple(subs), "output": rhs})[0]]
