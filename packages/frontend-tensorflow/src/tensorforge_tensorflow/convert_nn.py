"""Converters for convolutions, pooling, bias add and batch norm. NHWC data becomes NCHW
(`Nchw` entries) and filters become OIHW (depthwise: (C*M, 1, KH, KW)) at import, so the graph's
NCHW ops (and the llvm plugin's NCHW[x]c layout pass after them) apply unchanged."""

from __future__ import annotations

from typing import Any

from tensorforge.graph import Value

from .context import Context, Entry, Nchw
from .dispatch import converter


def same_pads(size: int, k: int, s: int, d: int = 1) -> tuple[int, int]:
    """TensorFlow's SAME padding of one spatial dim: (before, after), the extra one after."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


class _Window:
    """The spatial attributes of a conv or pool node in graph (NCHW) form."""

    def __init__(self, ctx: Context, node: Any, x: Value, kernel: tuple[int, int]):
        self.nhwc = ctx.attr(node, "data_format", "NHWC") in ("NHWC", "NDHWC")
        sp = (1, 2) if self.nhwc else (2, 3)  # the spatial axes in the node's own format

        def pair(name: str) -> tuple[int, int]:
            v = ctx.attr(node, name) or [1, 1, 1, 1]
            return (int(v[sp[0]]), int(v[sp[1]]))

        self.strides = pair("strides")
        self.dilations = pair("dilations")
        padding = ctx.attr(node, "padding", "VALID")
        h, w = x.shape[2], x.shape[3]  # x is NCHW here
        if padding == "SAME":
            (pt, pb), (pl, pr) = (same_pads(h, kernel[0], self.strides[0], self.dilations[0]),
                                  same_pads(w, kernel[1], self.strides[1], self.dilations[1]))
        elif padding == "VALID":
            pt = pb = pl = pr = 0
        elif padding == "EXPLICIT":
            e = [int(p) for p in ctx.attr(node, "explicit_paddings", [])]
            if len(e) != 8:
                raise ctx.fail(node, f"explicit_paddings {e}")
            pt, pb, pl, pr = e[2 * sp[0]:2 * sp[0] + 2] + e[2 * sp[1]:2 * sp[1] + 2]
        else:
            raise ctx.fail(node, f"padding={padding!r}")
        self.pads = (pt, pl, pb, pr)


def _data(ctx: Context, node: Any) -> Value:
    """Input 0 as NCHW: an NHWC tensor relaid (once), an NCHW one as is."""
    nhwc = ctx.attr(node, "data_format", "NHWC") == "NHWC"
    return ctx.nchw(node, 0) if nhwc else ctx.value(node, 0)


def _result(ctx: Context, node: Any, y: Value) -> Entry:
    return Nchw(y) if ctx.attr(node, "data_format", "NHWC") == "NHWC" else y


@converter("Conv2D", "DepthwiseConv2dNative")
def conv2d(ctx: Context, node: Any) -> list[Entry]:
    x = _data(ctx, node)
    f = ctx.value(node, 1)  # HWIO; depthwise: (KH, KW, C, multiplier)
    kh, kw, cin, cout = f.shape
    win = _Window(ctx, node, x, (kh, kw))
    if node.op == "DepthwiseConv2dNative":
        w = ctx.reshape(ctx.transpose(f, (2, 3, 0, 1)), (cin * cout, 1, kh, kw))
        groups = cin
    else:
        w = ctx.transpose(f, (3, 2, 0, 1))
        if x.shape[1] % cin:
            raise ctx.fail(node, f"{x.shape[1]} input channels with a filter of {cin}")
        groups = x.shape[1] // cin
    y = ctx.emit("conv2d", x, w, strides=win.strides, pads=win.pads, dilations=win.dilations,
                 groups=groups)
    return [_result(ctx, node, y)]


@converter("MaxPool", "AvgPool")
def pool(ctx: Context, node: Any) -> list[Entry]:
    x = _data(ctx, node)
    k = ctx.attr(node, "ksize")
    nhwc = ctx.attr(node, "data_format", "NHWC") == "NHWC"
    kernel = (int(k[1]), int(k[2])) if nhwc else (int(k[2]), int(k[3]))
    if int(k[0]) != 1 or int(k[3 if nhwc else 1]) != 1:
        raise ctx.fail(node, f"a pooling window over the batch or channels (ksize {list(k)})")
    win = _Window(ctx, node, x, kernel)
    if node.op == "MaxPool":
        y = ctx.emit("max_pool2d", x, kernel=kernel, strides=win.strides, pads=win.pads)
    else:  # TensorFlow averages over the window's valid (unpadded) elements only
        y = ctx.emit("avg_pool2d", x, kernel=kernel, strides=win.strides, pads=win.pads,
                     count_include_pad=False)
    return [_result(ctx, node, y)]


@converter("BiasAdd", "BiasAddV1")
def bias_add(ctx: Context, node: Any) -> list[Entry]:
    x, b = ctx.entry(node, 0), ctx.value(node, 1)
    if isinstance(x, Nchw):
        return [Nchw(ctx.emit("add", x.value, ctx.reshape(b, (b.shape[0], 1, 1))))]
    v = ctx.tf(x)
    if ctx.attr(node, "data_format", "NHWC") == "NCHW" and len(v.shape) > 2:
        b = ctx.reshape(b, (b.shape[0],) + (1,) * (len(v.shape) - 2))
    return [ctx.emit("add", v, b)]


@converter("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")
def fused_batch_norm(ctx: Context, node: Any) -> list[Entry]:
    if ctx.attr(node, "is_training", False):
        raise ctx.fail(node, "is_training=True (batch statistics)",
                       "save the model for inference (training=False)")
    x = _data(ctx, node)
    scale, offset, mean, var = (ctx.value(node, i) for i in range(1, 5))
    y = ctx.emit("batch_norm", x, scale, offset, mean, var,
                 epsilon=float(ctx.attr(node, "epsilon", 1e-3)))
    outs: list[Entry] = [_result(ctx, node, y), mean, var, mean, var]
    if node.op == "FusedBatchNormV3":
        outs.append(ctx.constant([], "reserve_space_3", dtype="float32"))
    return outs
