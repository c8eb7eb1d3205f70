"""Converters for the elementwise ops beyond the basic arithmetic: trigonometric and
hyperbolic functions, rounding and sign, NaN/Inf tests, activations with attributes, integer
bit operations, shifts and modulo."""

from __future__ import annotations

import onnx

from tensorforge.graph import Value

from .context import Context
from .dispatch import converter

Node = onnx.NodeProto

_UNARY = {
    "Sin": "sin", "Cos": "cos", "Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan",
    "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh", "Acosh": "acosh", "Atanh": "atanh",
    "Round": "round", "Sign": "sign", "Softsign": "softsign", "Mish": "mish",
    "IsNaN": "isnan", "BitwiseNot": "bitwise_not",
}


@converter(*_UNARY, versions=(1, 28))
def unary(ctx: Context, node: Node) -> list[Value]:
    return [ctx.emit(_UNARY[node.op_type], ctx.get(node, 0))]


# op: (graph op, {attribute: default})
_ATTR_UNARY: dict[str, tuple[str, dict[str, object]]] = {
    "Gelu": ("gelu", {"approximate": "none"}),
    "Shrink": ("shrink", {"lambd": 0.5, "bias": 0.0}),
    "ThresholdedRelu": ("thresholded_relu", {"alpha": 1.0}),
    "Celu": ("celu", {"alpha": 1.0}),
    "Swish": ("swish", {"alpha": 1.0}),
    "IsInf": ("isinf", {"detect_positive": 1, "detect_negative": 1}),
}


@converter(*_ATTR_UNARY, versions=(1, 28))
def attr_unary(ctx: Context, node: Node) -> list[Value]:
    op, defaults = _ATTR_UNARY[node.op_type]
    at = ctx.attrs(node)
    attrs = {k: type(v)(at.get(k, v)) for k, v in defaults.items()}
    return [ctx.emit(op, ctx.get(node, 0), **attrs)]


_BIT = {"BitwiseAnd": "bitwise_and", "BitwiseOr": "bitwise_or", "BitwiseXor": "bitwise_xor"}


@converter(*_BIT, versions=(18, 28))
def bitwise(ctx: Context, node: Node) -> list[Value]:
    return [ctx.emit(_BIT[node.op_type], ctx.get(node, 0), ctx.get(node, 1))]


@converter("BitShift", versions=(11, 28))
def bit_shift(ctx: Context, node: Node) -> list[Value]:
    x, y = ctx.get(node, 0), ctx.get(node, 1)
    return [ctx.emit("bit_shift", x, ctx.cast(y, x.dtype),
                     direction=str(ctx.attrs(node)["direction"]))]


@converter("Mod", versions=(10, 28))
def mod(ctx: Context, node: Node) -> list[Value]:
    return [ctx.emit("mod", ctx.get(node, 0), ctx.get(node, 1),
                     fmod=int(ctx.attrs(node).get("fmod", 0)))]
