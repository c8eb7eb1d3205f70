"""Converters for normalizations beyond batch/instance/layer norm: RMSNormalization,
GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN; and SwiGLU.

Each becomes reductions and elementwise graph ops (which fuse); float16 inputs compute in
float32 (`stash_type` 1, the default) and round once."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context
from .dispatch import converter

Node = onnx.NodeProto


def _wide(ctx: Context, x: Value, stash: int = 1) -> Value:
    return ctx.cast(x, "float32") if stash == 1 and x.dtype == "float16" else x


@converter("RMSNormalization", versions=(23, 28))
def rms_norm(ctx: Context, node: Node) -> list[Value]:
    x, scale = ctx.get(node, 0), ctx.get(node, 1)
    at = ctx.attrs(node)
    nd = len(x.shape)
    axis = int(at.get("axis", -1)) % nd
    xw = _wide(ctx, x, int(at.get("stash_type", 1)))
    ms = ctx.emit("reduce_mean", ctx.emit("mul", xw, xw), axes=tuple(range(axis, nd)),
                  keepdims=True)
    eps = ctx.scalar(float(at.get("epsilon", 1e-5)), ms)
    inv = ctx.emit("reciprocal", ctx.emit("sqrt", ctx.emit("add", ms, eps)))
    y = ctx.cast(ctx.emit("mul", xw, inv), x.dtype)
    return [ctx.emit("mul", y, scale)]


@converter("GroupNormalization", versions=(18, 28))
def group_norm(ctx: Context, node: Node) -> list[Value]:
    x, scale, bias = (ctx.get(node, i) for i in range(3))
    at = ctx.attrs(node)
    groups = int(at["num_groups"])
    eps = float(at.get("epsilon", 1e-5))
    n, c = x.shape[:2]
    rest = int(np.prod(x.shape[2:], dtype=np.int64))
    xw = _wide(ctx, x, int(at.get("stash_type", 1)))
    g = ctx.reshape(xw, (n, groups, (c // groups) * rest))
    mean = ctx.emit("reduce_mean", g, axes=(2,), keepdims=True)
    d = ctx.emit("sub", g, mean)
    var = ctx.emit("reduce_mean", ctx.emit("mul", d, d), axes=(2,), keepdims=True)
    inv = ctx.emit("reciprocal", ctx.emit("sqrt", ctx.emit("add", var, ctx.scalar(eps, var))))
    y = ctx.cast(ctx.reshape(ctx.emit("mul", d, inv), x.shape), x.dtype)
    per = (c,) + (1,) * (len(x.shape) - 2)
    if ctx.op_version < 21:  # scale and bias per group
        scale = ctx.reshape(ctx.emit("broadcast_to", ctx.reshape(scale, (groups, 1)),
                                     shape=(groups, c // groups)), (c,))
        bias = ctx.reshape(ctx.emit("broadcast_to", ctx.reshape(bias, (groups, 1)),
                                    shape=(groups, c // groups)), (c,))
    y = ctx.emit("mul", y, ctx.reshape(scale, per))
    return [ctx.emit("add", y, ctx.reshape(bias, per))]


@converter("LpNormalization", versions=(1, 28))
def lp_norm(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    axis = int(at.get("axis", -1)) % len(x.shape)
    p = int(at.get("p", 2))
    if p not in (1, 2):
        raise ctx.fail(node, f"p={p}", "p is 1 or 2")
    t = ctx.emit("abs", x) if p == 1 else ctx.emit("mul", x, x)
    norm = ctx.emit("reduce_sum", t, axes=(axis,), keepdims=True)
    if p == 2:
        norm = ctx.emit("sqrt", norm)
    zero = ctx.scalar(0, norm)
    is_zero = ctx.emit("equal", norm, zero)
    safe = ctx.emit("where", is_zero, ctx.scalar(1, norm), norm)
    return [ctx.emit("where", is_zero, zero, ctx.emit("div", x, safe))]


@converter("MeanVarianceNormalization", versions=(9, 28))
def mvn(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    axes = tuple(int(a) % len(x.shape) for a in ctx.attrs(node).get("axes", [0, 2, 3]))
    mean = ctx.emit("reduce_mean", x, axes=axes, keepdims=True)
    sq_mean = ctx.emit("reduce_mean", ctx.emit("mul", x, x), axes=axes, keepdims=True)
    var = ctx.emit("sub", sq_mean, ctx.emit("mul", mean, mean))
    std = ctx.emit("add", ctx.emit("sqrt", var), ctx.scalar(1e-9, var))
    return [ctx.emit("div", ctx.emit("sub", x, mean), std)]


@converter("LRN", versions=(1, 28))
def lrn(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    size = int(at["size"])
    alpha, beta = float(at.get("alpha", 1e-4)), float(at.get("beta", 0.75))
    bias = float(at.get("bias", 1.0))
    nd = len(x.shape)
    sq = ctx.emit("mul", x, x)
    before, after = (size - 1) // 2, (size - 1) - (size - 1) // 2
    pads = tuple((before, after) if d == 1 else (0, 0) for d in range(nd))
    padded = ctx.emit("pad", sq, pads=pads, mode="constant", value=0)
    c = x.shape[1]
    total = None
    for k in range(size):  # the window sum over channels: `size` shifted slices
        begin = tuple(k if d == 1 else 0 for d in range(nd))
        part = ctx.emit("strided_slice", padded, begin=begin, step=(1,) * nd, size=x.shape)
        total = part if total is None else ctx.emit("add", total, part)
    assert total is not None and c == x.shape[1]
    base = ctx.emit("add", ctx.scalar(bias, x), ctx.emit("mul", total,
                                                          ctx.scalar(alpha / size, x)))
    return [ctx.emit("div", x, ctx.emit("pow", base, ctx.scalar(beta, x)))]


@converter("SwiGLU", versions=(1, 28))
def swiglu(ctx: Context, node: Node) -> list[Value]:
    a, b = ctx.get(node, 0), ctx.get(node, 1)
    alpha = float(ctx.attrs(node).get("alpha", 1.0))
    return [ctx.emit("mul", ctx.emit("swish", a, alpha=alpha), b)]
