"""Converters for convolutions, pooling, dense/matmul, normalizations, softmax, dropout.

1-D convolutions and pools run as 2-D ones over a unit height (reshape in, reshape out)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context, f32
from .dispatch import converter

Node = onnx.NodeProto


def _spatial(ctx: Context, node: Node, x: Value) -> int:
    nd = len(x.shape) - 2
    if nd not in (1, 2):
        raise ctx.fail(node, f"a {nd}-D spatial input {list(x.shape)}",
                       "only 1-D and 2-D convolutions and pools are supported")
    return nd


def _to2d(v: list[int] | tuple[int, ...], nd: int, fill: int) -> list[int]:
    return [fill, *v] if nd == 1 else list(v)


def _pads(ctx: Context, node: Node, at: dict[str, Any], in_sp: list[int], kernel: list[int],
          strides: list[int], dil: list[int]) -> list[int]:
    """ONNX pads (begins..., ends...) for the spatial dims, auto_pad resolved."""
    n = len(in_sp)
    auto = at.get("auto_pad", "NOTSET") or "NOTSET"
    if auto == "NOTSET":
        return [int(p) for p in at.get("pads", [0] * (2 * n))]
    if auto == "VALID":
        return [0] * (2 * n)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise ctx.fail(node, f"auto_pad={auto!r}")
    begins, ends = [], []
    for i in range(n):
        out = -(-in_sp[i] // strides[i])
        total = max((out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in_sp[i], 0)
        small = total // 2
        b = small if auto == "SAME_UPPER" else total - small
        begins.append(b)
        ends.append(total - b)
    return begins + ends


def _pads4(p: list[int], nd: int) -> tuple[int, int, int, int]:
    if nd == 1:
        return (0, p[0], 0, p[1])
    return (p[0], p[1], p[2], p[3])


def _lift(ctx: Context, x: Value, nd: int) -> Value:
    return ctx.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2])) if nd == 1 else x


def _lower(ctx: Context, y: Value, nd: int) -> Value:
    return ctx.reshape(y, (y.shape[0], y.shape[1], y.shape[3])) if nd == 1 else y


@converter("Conv", versions=(1, 22))
def conv(ctx: Context, node: Node) -> list[Value]:
    x, w, b = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    if len(x.shape) > 4:
        return [_conv_nd(ctx, node, x, w, b)]
    nd = _spatial(ctx, node, x)
    at = ctx.attrs(node)
    kernel = list(at.get("kernel_shape", w.shape[2:]))
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    pads = _pads(ctx, node, at, list(x.shape[2:]), kernel, strides, dil)
    ins = [_lift(ctx, x, nd), _lift(ctx, w, nd)] + ([b] if b is not None else [])
    y = ctx.emit_multi("conv2d", ins, {
        "strides": tuple(_to2d(strides, nd, 1)), "dilations": tuple(_to2d(dil, nd, 1)),
        "pads": _pads4(pads, nd), "groups": int(at.get("group", 1))})[0]
    return [_lower(ctx, y, nd)]


def _conv_nd(ctx: Context, node: Node, x: Value, w: Value, b: Value | None) -> Value:
    """3-D (and higher) convolutions: the direct N-D op."""
    at = ctx.attrs(node)
    nd = len(x.shape) - 2
    kernel = list(at.get("kernel_shape", w.shape[2:]))
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    pads = _pads(ctx, node, at, list(x.shape[2:]), kernel, strides, dil)
    return ctx.emit_multi("conv_nd", [x, w] + ([b] if b is not None else []), {
        "strides": tuple(strides), "dilations": tuple(dil), "pads": tuple(pads),
        "groups": int(at.get("group", 1))})[0]


@converter("ConvTranspose", versions=(1, 22))
def conv_transpose(ctx: Context, node: Node) -> list[Value]:
    x, w, b = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    nd = len(x.shape) - 2 if len(x.shape) > 4 else _spatial(ctx, node, x)
    at = ctx.attrs(node)
    g = int(at.get("group", 1))
    kernel = list(at.get("kernel_shape", w.shape[2:]))
    strides = list(at.get("strides", [1] * nd))
    dil = list(at.get("dilations", [1] * nd))
    opad = list(at.get("output_padding", [0] * nd))
    in_sp = list(x.shape[2:])
    auto = at.get("auto_pad", "NOTSET") or "NOTSET"
    out_shape = list(at.get("output_shape", []))[-nd:] if "output_shape" in at else None
    if out_shape is None and auto in ("SAME_UPPER", "SAME_LOWER"):
        out_shape = [in_sp[i] * strides[i] for i in range(nd)]
    if out_shape is not None:
        begins, ends = [], []
        for i in range(nd):
            total = (strides[i] * (in_sp[i] - 1) + opad[i] + (kernel[i] - 1) * dil[i] + 1
                     - out_shape[i])
            if total < 0:  # the requested size needs extra rows at the end
                opad[i] -= total
                total = 0
            if auto == "SAME_UPPER":
                begins.append(total // 2)
                ends.append(total - total // 2)
            else:
                begins.append(total - total // 2)
                ends.append(total // 2)
        pads = begins + ends
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    else:
        pads = [int(p) for p in at.get("pads", [0] * (2 * nd))]
    if nd > 2:
        return [ctx.emit_multi("conv_transpose_nd", [x, w] + ([b] if b is not None else []), {
            "strides": tuple(strides), "dilations": tuple(dil), "pads": tuple(pads),
            "output_padding": tuple(opad), "groups": g})[0]]
    ins = [_lift(ctx, x, nd), _lift(ctx, w, nd)] + ([b] if b is not None else [])
    y = ctx.emit_multi("conv2d_transpose", ins, {
        "strides": tuple(_to2d(strides, nd, 1)), "dilations": tuple(_to2d(dil, nd, 1)),
        "pads": _pads4(pads, nd), "output_padding": tuple(_to2d(opad, nd, 0)),
        "groups": g})[0]
    return [_lower(ctx, y, nd)]


@converter("GlobalAveragePool", "GlobalMaxPool", versions=(1, 22))
def global_pool(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    if node.op_type == "GlobalAveragePool" and len(x.shape) == 4:
        return [ctx.emit("global_avg_pool2d", x)]
    kind = "mean" if node.op_type == "GlobalAveragePool" else "max"
    return [ctx.emit(f"reduce_{kind}", x, axes=tuple(range(2, len(x.shape))), keepdims=True)]


@converter("Gemm", versions=(1, 13))
def gemm(ctx: Context, node: Node) -> list[Value]:
    a, b, c = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    at = ctx.attrs(node)
    alpha, beta = f32(at.get("alpha", 1.0)), f32(at.get("beta", 1.0))
    if at.get("transA", 0):
        a = ctx.emit("transpose", a, perm=(1, 0))
    if len(a.shape) != 2:
        a = ctx.reshape(a, (a.shape[0], int(np.prod(a.shape[1:]))))
    trans_b = bool(at.get("transB", 0))
    bias_in_dense = c is not None and beta == 1.0 and alpha == 1.0 and len(c.shape) == 1
    if b.is_const:
        w = ctx.constant(b.const if trans_b else np.ascontiguousarray(b.const.T), "weight")
        ins = [a, w] + ([c] if bias_in_dense else [])
        y = ctx.emit_multi("dense", ins)[0]
    else:
        bb = b if not trans_b else ctx.emit("transpose", b, perm=(1, 0))
        y = ctx.emit("matmul", a, bb)
        bias_in_dense = False
    if alpha != 1.0:
        y = ctx.emit("mul", y, ctx.scalar(alpha, y))
    if c is not None and not bias_in_dense and beta != 0.0:
        if beta != 1.0:
            c = ctx.emit("mul", c, ctx.scalar(beta, c))
        y = ctx.emit("add", y, c)
    return [y]


@converter("MatMul", versions=(1, 13))
def matmul(ctx: Context, node: Node) -> list[Value]:
    a, b = ctx.get(node, 0), ctx.get(node, 1)
    out_shape = np.matmul(np.empty(a.shape, "b"), np.empty(b.shape, "b")).shape
    if len(a.shape) == 1:
        a = ctx.reshape(a, (1, a.shape[0]))
    if len(b.shape) == 1:
        b = ctx.reshape(b, (b.shape[0], 1))
    if b.is_const and len(b.shape) == 2 and not a.is_const:
        k = a.shape[-1]
        a2 = ctx.reshape(a, (int(np.prod(a.shape[:-1])), k))
        w = ctx.constant(np.ascontiguousarray(b.const.T), "weight")
        y = ctx.emit("dense", a2, w)
    else:
        y = ctx.emit("matmul", a, b)
    return [ctx.reshape(y, out_shape)]


def _softmax(ctx: Context, node: Node, op: str) -> list[Value]:
    x = ctx.get(node, 0)
    nd = len(x.shape)
    if ctx.op_version >= 13:
        return [ctx.emit(op, x, axis=int(ctx.attrs(node).get("axis", -1)) % max(nd, 1))]
    axis = int(ctx.attrs(node).get("axis", 1)) % max(nd, 1)
    rows = int(np.prod(x.shape[:axis]))
    flat = ctx.reshape(x, (rows, int(np.prod(x.shape[axis:]))))
    return [ctx.reshape(ctx.emit(op, flat, axis=1), x.shape)]


@converter("Softmax", versions=(1, 13))
def softmax(ctx: Context, node: Node) -> list[Value]:
    return _softmax(ctx, node, "softmax")


@converter("LogSoftmax", versions=(1, 13))
def log_softmax(ctx: Context, node: Node) -> list[Value]:
    return _softmax(ctx, node, "log_softmax")


@converter("BatchNormalization", versions=(7, 15))
def batch_norm(ctx: Context, node: Node) -> list[Value]:
    at = ctx.attrs(node)
    if at.get("training_mode", 0):
        return _batch_norm_training(ctx, node, at)
    if len(node.output) > 1 and any(node.output[1:]):
        raise ctx.fail(node, "running mean/var outputs without training_mode",
                       "export the model in inference mode (model.eval())")
    if ctx.op_version < 9 and not at.get("spatial", 1):
        raise ctx.fail(node, "spatial=0")
    ins = [ctx.get(node, i) for i in range(5)]
    return [ctx.emit_multi("batch_norm", ins, {"epsilon": f32(at.get("epsilon", 1e-5))})[0]]


def _batch_norm_training(ctx: Context, node: Node, at: dict[str, Any]) -> list[Value]:
    """Normalize with the batch's statistics; the running mean and variance outputs are
    momentum * running + (1 - momentum) * batch (onnx's reference)."""
    x, scale, bias, mean, var = (ctx.get(node, i) for i in range(5))
    axes = tuple(d for d in range(len(x.shape)) if d != 1)
    bm = ctx.emit("reduce_mean", x, axes=axes, keepdims=False)
    shape = (1, x.shape[1]) + (1,) * (len(x.shape) - 2)
    d = ctx.emit("sub", x, ctx.reshape(bm, shape))
    bv = ctx.emit("reduce_mean", ctx.emit("mul", d, d), axes=axes, keepdims=False)
    y = ctx.emit_multi("batch_norm", [x, scale, bias, bm, bv],
                       {"epsilon": float(at.get("epsilon", 1e-5))})[0]
    m = float(at.get("momentum", 0.9))
    mom, rest = ctx.scalar(m, mean), ctx.scalar(1 - m, mean)
    run_mean = ctx.emit("add", ctx.emit("mul", mean, mom), ctx.emit("mul", bm, rest))
    run_var = ctx.emit("add", ctx.emit("mul", var, mom), ctx.emit("mul", bv, rest))
    return [y, run_mean, run_var][:len(node.output)]


@converter("InstanceNormalization", versions=(6, 22))
def instance_norm(ctx: Context, node: Node) -> list[Value]:
    x, scale, bias = (ctx.get(node, i) for i in range(3))
    eps = f32(ctx.attrs(node).get("epsilon", 1e-5))
    axes = tuple(range(2, len(x.shape)))
    shape = (x.shape[1],) + (1,) * len(axes)
    y = _normalize(ctx, x, axes, eps)[0]
    y = ctx.emit("mul", y, ctx.reshape(scale, shape))
    return [ctx.emit("add", y, ctx.reshape(bias, shape))]


def _normalize(ctx: Context, x: Value, axes: tuple[int, ...], eps: float
               ) -> tuple[Value, Value, Value]:
    """(x - mean) * inv_std over `axes` (keepdims); returns (y, mean, inv_std)."""
    mean = ctx.emit("reduce_mean", x, axes=axes, keepdims=True)
    d = ctx.emit("sub", x, mean)
    var = ctx.emit("reduce_mean", ctx.emit("mul", d, d), axes=axes, keepdims=True)
    inv = ctx.emit("reciprocal", ctx.emit("sqrt", ctx.emit("add", var, ctx.scalar(eps, var))))
    return ctx.emit("mul", d, inv), mean, inv


@converter("LayerNormalization", versions=(17, 17))
def layer_norm(ctx: Context, node: Node) -> list[Value]:
    x, scale, bias = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    at = ctx.attrs(node)
    nd = len(x.shape)
    axis = int(at.get("axis", -1)) % nd
    eps = f32(at.get("epsilon", 1e-5))
    extra = len(node.output) > 1 and any(node.output[1:])
    if not extra:
        ins = [x, scale] + ([bias] if bias is not None else [])
        return [ctx.emit_multi("layer_norm", ins, {"axis": axis, "epsilon": eps})[0]]
    y, mean, inv = _normalize(ctx, x, tuple(range(axis, nd)), eps)
    y = ctx.emit("mul", y, scale)
    if bias is not None:
        y = ctx.emit("add", y, bias)
    return [y, mean, inv]


@converter("Dropout", versions=(1, 22))
def dropout(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    training = ctx.get(node, 2) if ctx.op_version >= 12 else None
    if training is not None:
        t = ctx.const(node, 2, "training_mode")
        if bool(np.asarray(t).item()):
            ratio = ctx.const(node, 1, "ratio") if ctx.has(node, 1) else np.array(0.5)
            if float(np.asarray(ratio).item()) != 0.0:
                raise ctx.fail(node, "training_mode=True", "export in inference mode")
    outs = [x]
    if len(node.output) > 1 and node.output[1]:
        # all kept; onnxruntime returns an all-False mask before opset 12
        fill = ctx.op_version >= 12
        outs.append(ctx.constant(np.full(x.shape, fill, dtype=bool), "mask"))
    return outs
