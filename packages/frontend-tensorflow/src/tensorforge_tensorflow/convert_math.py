"""Converters for elementwise math, activations, casts, matrix products, reductions and
softmax. Elementwise ops keep an NHWC tensor in the NCHW layout its producer left it in."""

from __future__ import annotations

from typing import Any

import numpy as np

from .context import STORAGE_AXIS, Context, Entry, Nchw, shape_of
from .dispatch import converter

# TensorFlow op -> (graph op, attributes from the node: name -> (TF attr, default))
_UNARY: dict[str, tuple[str, dict[str, tuple[str, Any]]]] = {
    "Relu": ("relu", {}), "Sigmoid": ("sigmoid", {}), "Tanh": ("tanh", {}),
    "Elu": ("elu", {}), "Selu": ("selu", {}), "Softplus": ("softplus", {}),
    "LeakyRelu": ("leaky_relu", {"alpha": ("alpha", 0.2)}),
    "Sqrt": ("sqrt", {}), "Exp": ("exp", {}), "Log": ("log", {}), "Neg": ("neg", {}),
    "Abs": ("abs", {}), "Floor": ("floor", {}), "Ceil": ("ceil", {}),
    "Reciprocal": ("reciprocal", {}), "Erf": ("erf", {}), "LogicalNot": ("logical_not", {}),
}
_BINARY = {
    "Add": "add", "AddV2": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "div",
    "Maximum": "maximum", "Minimum": "minimum", "Pow": "pow", "Less": "less",
    "LessEqual": "less_equal", "Greater": "greater", "GreaterEqual": "greater_equal",
    "Equal": "equal", "LogicalAnd": "logical_and", "LogicalOr": "logical_or",
}


def _unary_on(ctx: Context, x: Entry, op: str, **attrs: Any) -> Entry:
    return ctx.same_layout(x, ctx.emit(op, ctx.stored(x), **attrs))


@converter(*_UNARY)
def unary(ctx: Context, node: Any) -> list[Entry]:
    op, attr_map = _UNARY[node.op]
    attrs = {k: float(ctx.attr(node, tf_name, d)) for k, (tf_name, d) in attr_map.items()}
    return [_unary_on(ctx, ctx.entry(node, 0), op, **attrs)]


@converter("Relu6")
def relu6(ctx: Context, node: Any) -> list[Entry]:
    return [_unary_on(ctx, ctx.entry(node, 0), "clip", min=0.0, max=6.0)]


@converter("Rsqrt")
def rsqrt(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    return [_unary_on(ctx, _unary_on(ctx, x, "sqrt"), "reciprocal")]


@converter("Square")
def square(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    return [ctx.elementwise("mul", [x, x])]


@converter("Cast")
def cast(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    return [ctx.same_layout(x, ctx.cast(ctx.stored(x), ctx.dtype(node, "DstT")))]


@converter(*_BINARY)
def binary(ctx: Context, node: Any) -> list[Entry]:
    return [ctx.elementwise(_BINARY[node.op], [ctx.entry(node, 0), ctx.entry(node, 1)])]


@converter("SquaredDifference")
def squared_difference(ctx: Context, node: Any) -> list[Entry]:
    d = ctx.elementwise("sub", [ctx.entry(node, 0), ctx.entry(node, 1)])
    return [ctx.elementwise("mul", [d, d])]


@converter("AddN")
def add_n(ctx: Context, node: Any) -> list[Entry]:
    acc = ctx.entry(node, 0)
    for i in range(1, ctx.n_inputs(node)):
        acc = ctx.elementwise("add", [acc, ctx.entry(node, i)])
    return [acc]


# matrix products ------------------------------------------------------------------------------
def _swap_last(ctx: Context, v: Any) -> Any:
    perm = tuple(range(len(v.shape) - 2)) + (len(v.shape) - 1, len(v.shape) - 2)
    return ctx.transpose(v, perm)


@converter("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")
def matmul(ctx: Context, node: Any) -> list[Entry]:
    a, b = ctx.value(node, 0), ctx.value(node, 1)
    if node.op == "MatMul":
        ta, tb = ctx.attr(node, "transpose_a", False), ctx.attr(node, "transpose_b", False)
    else:
        ta, tb = ctx.attr(node, "adj_x", False), ctx.attr(node, "adj_y", False)
    if ta:
        a = _swap_last(ctx, a)
    if b.is_const and len(b.shape) == 2 and not a.is_const:
        # x @ B with constant B: a dense with weights (N, K), the form the layout pass packs
        w = b.const if tb else np.ascontiguousarray(b.const.T)
        k = a.shape[-1]
        a2 = ctx.reshape(a, (int(np.prod(a.shape[:-1])), k))
        y = ctx.emit("dense", a2, ctx.constant(w, "weight"))
        return [ctx.reshape(y, (*a.shape[:-1], w.shape[0]))]
    if tb:
        b = _swap_last(ctx, b)
    return [ctx.emit("matmul", a, b)]


# reductions --------------------------------------------------------------------------------
_REDUCE = {"Mean": "mean", "Sum": "sum", "Max": "max", "Min": "min"}


@converter(*_REDUCE)
def reduce(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    rank = len(shape_of(x))
    axes = sorted({int(a) % rank for a in np.asarray(ctx.const(node, 1, "axes")).reshape(-1)})
    keep = bool(ctx.attr(node, "keep_dims", False))
    kind = _REDUCE[node.op]
    out_shape = tuple(1 if d in axes else s for d, s in enumerate(shape_of(x))
                      if keep or d not in axes)
    if not axes:
        return [x]
    if isinstance(x, Nchw):
        if kind == "mean" and axes == [1, 2]:  # global average pooling: stays blocked later
            y = ctx.emit("global_avg_pool2d", x.value)
        else:
            y = ctx.emit(f"reduce_{kind}", x.value, axes=tuple(STORAGE_AXIS[a] for a in axes),
                         keepdims=True)
        if keep:
            return [Nchw(y)]
        return [ctx.reshape(ctx.tf(Nchw(y)), out_shape)]
    return [ctx.emit(f"reduce_{kind}", ctx.tf(x), axes=tuple(axes), keepdims=keep)]


@converter("Softmax", "LogSoftmax")
def softmax(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    op = "softmax" if node.op == "Softmax" else "log_softmax"
    if isinstance(x, Nchw):  # the last (channel) axis is axis 1 of the NCHW value
        return [Nchw(ctx.emit(op, x.value, axis=1))]
    v = ctx.tf(x)
    return [ctx.emit(op, v, axis=len(v.shape) - 1)]
