"""Converters for the quantization ops: QuantizeLinear, DequantizeLinear,
DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv.

They map onto the graph ops `quantize` / `dequantize` (graph/ops/quantize.py) and integer
matmul/conv2d (int32 accumulation), so the kernels are generated like the float ones.
Per-axis and blocked scales are expanded to shapes that broadcast against the input. The
requantization of QLinear* follows onnx's reference: the int32 accumulator times
`a_scale * b_scale / y_scale` (in the scales' type) in float64, rounded half to even."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value
from tensorforge.graph.narrow_types import FORMATS, is_narrow

from .context import Context, np_dtype
from .convert_nn import _lift, _lower, _pads, _pads4, _to2d
from .dispatch import converter

Node = onnx.NodeProto

_INT_RANGE = {"int4": (-8, 7), "uint4": (0, 15), "int2": (-2, 1), "uint2": (0, 3)}


def _expand(ctx: Context, v: Value | None, like: tuple[int, ...], axis: int,
            block: int) -> Value | None:
    """A scale or zero point in a shape that broadcasts against `like` (per tensor, per
    axis, or blocked: each entry repeated `block` times along `axis`)."""
    if v is None:
        return None
    if v.size == 1:
        return ctx.reshape(v, ())
    nd = len(like)
    axis %= nd
    if not block:
        return ctx.reshape(v, tuple(v.size if d == axis else 1 for d in range(nd)))
    nb = v.shape[axis]
    pre, post = tuple(v.shape[:axis]), tuple(v.shape[axis + 1:])
    r = ctx.reshape(v, (*pre, nb, 1, *post))
    r = ctx.emit("broadcast_to", r, shape=(*pre, nb, block, *post))
    r = ctx.reshape(r, (*pre, nb * block, *post))
    if nb * block != like[axis]:
        r = ctx.emit("strided_slice", r, begin=(0,) * nd, step=(1,) * nd,
                     size=tuple(like[axis] if d == axis else s for d, s in enumerate(r.shape)))
    return r


@converter("QuantizeLinear", versions=(10, 28))
def quantize_linear(ctx: Context, node: Node) -> list[Value]:
    x, scale, zp = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    at = ctx.attrs(node)
    axis, block = int(at.get("axis", 1)), int(at.get("block_size", 0))
    to = zp.dtype if zp is not None else (np_dtype(int(at["output_dtype"])) if
                                          at.get("output_dtype") else "uint8")
    s = _expand(ctx, scale, x.shape, axis, block)
    z = _expand(ctx, zp, x.shape, axis, block)
    attrs = {}
    if at.get("precision"):
        attrs["precision"] = np_dtype(int(at["precision"]))
    fmt = FORMATS.get(to)
    if fmt is not None and fmt.kind not in ("int", "uint"):  # float8 / float4: x / scale, cast
        y = ctx.emit("quantize", x, s, to="float32", **attrs)
        if fmt.name == "float4_e2m1fn" and z is not None:
            y = ctx.emit("add", y, ctx.cast(z, "float32"))
        return [ctx.emit("cast", y, to=to, saturate=bool(at.get("saturate", 1)),
                         round_mode="nearest")]
    ins = [x, s] + ([ctx.cast(z, "int32") if is_narrow(z.dtype) else z] if z is not None
                    else [])
    if to in _INT_RANGE:
        lo, hi = _INT_RANGE[to]
        return [ctx.cast(ctx.emit_multi("quantize", ins, {"to": "int32", "lo": lo, "hi": hi,
                                                          **attrs})[0], to)]
    return [ctx.emit_multi("quantize", ins, {"to": to, **attrs})[0]]


@converter("DequantizeLinear", versions=(10, 28))
def dequantize_linear(ctx: Context, node: Node) -> list[Value]:
    x, scale, zp = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    at = ctx.attrs(node)
    axis, block = int(at.get("axis", 1)), int(at.get("block_size", 0))
    to = np_dtype(int(at["output_dtype"])) if at.get("output_dtype") else scale.dtype
    fmt = FORMATS.get(x.dtype)
    if fmt is not None and fmt.kind not in ("int", "uint") and fmt.name != "float4_e2m1fn":
        zp = None  # float8: the zero point is 0 by definition
    s = _expand(ctx, scale, x.shape, axis, block)
    z = _expand(ctx, zp, x.shape, axis, block)
    ins = [x, s] + ([z] if z is not None else [])
    if x.is_const and fmt is None and np.dtype(x.dtype).kind in "iu":
        # a quantized weight or bias: kept as a node (constant folding removes it later)
        # so the QDQ pass (graph/passes/qdq.py) still sees the integers
        return [ctx.emit_node("dequantize", ins, {"to": to})[0]]
    return [ctx.emit_multi("dequantize", ins, {"to": to})[0]]


@converter("DynamicQuantizeLinear", versions=(11, 28))
def dynamic_quantize_linear(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    zero = ctx.constant(np.zeros((), "float32"), "zero")
    hi = ctx.emit("maximum", ctx.emit("reduce_max", x, axes=None, keepdims=False), zero)
    lo = ctx.emit("minimum", ctx.emit("reduce_min", x, axes=None, keepdims=False), zero)
    span = ctx.emit("where", ctx.emit("equal", hi, lo),
                    ctx.constant(np.ones((), "float32"), "one"), ctx.emit("sub", hi, lo))
    scale = ctx.emit("div", span, ctx.constant(np.array(255.0, "float32"), "qrange"))
    zp = ctx.emit("sub", zero, ctx.emit("div", lo, scale))
    zp = ctx.emit("clip", zp, min=0.0, max=255.0)
    zp = ctx.cast(ctx.emit("round", zp), "uint8")
    return [ctx.emit("quantize", x, scale, zp, to="uint8"), scale, zp]


def _centered(ctx: Context, v: Value, zp: Value | None, zp_shape: tuple[int, ...] | None
              ) -> Value:
    """int32(v) - int32(zero point), the zero point reshaped to broadcast."""
    out = ctx.cast(v, "int32")
    if zp is None:
        return out
    z = ctx.cast(zp, "int32")
    if zp_shape is not None and z.size > 1:
        z = ctx.reshape(z, zp_shape)
    return ctx.emit("sub", out, z)


def _row_shape(a: Value, v: Value | None) -> tuple[int, ...] | None:
    """A per-row (M,) scale or zero point of A (.., M, K) as (M, 1)."""
    return (a.shape[-2], 1) if v is not None and v.size > 1 else None


@converter("MatMulInteger", versions=(10, 28))
def matmul_integer(ctx: Context, node: Node) -> list[Value]:
    a, b, azp, bzp = (ctx.get(node, i) for i in range(4))
    return [ctx.emit("matmul", _centered(ctx, a, azp, _row_shape(a, azp)),
                     _centered(ctx, b, bzp, None))]


def _conv_attrs(ctx: Context, node: Node, x: Value, w: Value) -> tuple[int, dict[str, object]]:
    at = ctx.attrs(node)
    nd = len(x.shape) - 2
    if nd not in (1, 2):
        raise ctx.fail(node, f"a {nd}-D spatial input", "1-D and 2-D are supported")
    kernel = list(at.get("kernel_shape", w.shape[2:]))
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    pads = _pads(ctx, node, at, list(x.shape[2:]), kernel, strides, dil)
    return nd, {"strides": tuple(_to2d(strides, nd, 1)), "dilations": tuple(_to2d(dil, nd, 1)),
                "pads": _pads4(pads, nd), "groups": int(at.get("group", 1))}


def _conv_int(ctx: Context, node: Node, x: Value, xzp: Value | None, w: Value,
              wzp: Value | None, bias: Value | None = None) -> Value:
    nd, attrs = _conv_attrs(ctx, node, x, w)
    xc = _centered(ctx, x, xzp, None)
    wc = _centered(ctx, w, wzp, (w.shape[0],) + (1,) * (len(w.shape) - 1))
    ins = [_lift(ctx, xc, nd), _lift(ctx, wc, nd)] + ([ctx.cast(bias, "int32")]
                                                       if bias is not None else [])
    return _lower(ctx, ctx.emit_multi("conv2d", ins, attrs)[0], nd)


@converter("ConvInteger", versions=(10, 28))
def conv_integer(ctx: Context, node: Node) -> list[Value]:
    x, w, xzp, wzp = (ctx.get(node, i) for i in range(4))
    return [_conv_int(ctx, node, x, xzp, w, wzp)]


def _requantize(ctx: Context, acc: Value, scales: list[Value], y_scale: Value,
                y_zp: Value | None, to: str) -> Value:
    """round_half_even(acc * (s0 * s1 / y_scale) + y_zp), clipped to `to` (onnx's reference:
    the multiplier in the scales' type, the product in float64)."""
    m = ctx.emit("div", ctx.emit("mul", scales[0], scales[1]), y_scale)
    d = ctx.emit("mul", ctx.cast(acc, "float64"), ctx.cast(m, "float64"))
    if y_zp is not None:
        d = ctx.emit("add", d, ctx.cast(y_zp, "float64"))
    one = ctx.constant(np.ones((), "float64"), "one")
    return ctx.emit("quantize", d, one, to=to)


@converter("QLinearMatMul", versions=(10, 28))
def qlinear_matmul(ctx: Context, node: Node) -> list[Value]:
    a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp = (ctx.get(node, i) for i in range(8))
    acc = ctx.emit("matmul", _centered(ctx, a, a_zp, _row_shape(a, a_zp)),
                   _centered(ctx, b, b_zp, None))
    a_s = ctx.reshape(a_s, _row_shape(a, a_s) or a_s.shape)
    to = y_zp.dtype if y_zp is not None else a.dtype
    return [_requantize(ctx, acc, [a_s, b_s], y_s, y_zp, to)]


@converter("QLinearConv", versions=(10, 28))
def qlinear_conv(ctx: Context, node: Node) -> list[Value]:
    x, x_s, x_zp, w, w_s, w_zp, y_s, y_zp = (ctx.get(node, i) for i in range(8))
    bias = ctx.get(node, 8)
    acc = _conv_int(ctx, node, x, x_zp, w, w_zp, bias)
    if w_s.size > 1:
        w_s = ctx.reshape(w_s, (1, w_s.size) + (1,) * (len(acc.shape) - 2))
    to = y_zp.dtype if y_zp is not None else x.dtype
    return [_requantize(ctx, acc, [x_s, w_s], y_s, y_zp, to)]
