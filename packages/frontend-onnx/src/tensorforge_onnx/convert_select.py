"""Converters for ops whose output size depends on input values: NonZero, Compress, Unique,
NonMaxSuppression. The kernels write a bound and the count; the result may only be a model
output (`Context.mark_sized`), which the executor trims to the count."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context
from .dispatch import converter

Node = onnx.NodeProto


@converter("NonZero", versions=(9, 28))
def nonzero(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    if not x.shape:
        x = ctx.reshape(x, (1,))
    res, count = ctx.emit_multi("nonzero", [x])
    return [ctx.mark_sized(res, count, 1)]


@converter("Compress", versions=(9, 28))
def compress(ctx: Context, node: Node) -> list[Value]:
    x, cond = ctx.get(node, 0), ctx.get(node, 1)
    at = ctx.attrs(node)
    if "axis" not in at:
        x, axis = ctx.reshape(x, (x.size,)), 0
    else:
        axis = int(at["axis"]) % len(x.shape)
    if cond.is_const:  # known selection: a static gather
        sel = np.nonzero(cond.const.reshape(-1)[:x.shape[axis]])[0].astype("int64")
        return [ctx.emit("take", x, ctx.constant(sel, "indices"), axis=axis)]
    res, count = ctx.emit_multi("compress", [x, cond], {"axis": axis})
    return [ctx.mark_sized(res, count, axis)]


@converter("Unique", versions=(11, 28))
def unique(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    axis = int(at["axis"]) % len(x.shape) if "axis" in at else None
    if axis is None:
        y, first, inverse, counts, n = ctx.emit_multi(
            "unique", [x], {"sorted": bool(at.get("sorted", 1))})
    else:
        y, first, inverse, counts, n = ctx.emit_multi(
            "unique_slices", [x], {"axis": axis, "sorted": bool(at.get("sorted", 1))})
    outs = [ctx.mark_sized(y, n, axis or 0), ctx.mark_sized(first, n, 0), inverse,
            ctx.mark_sized(counts, n, 0)]
    return outs[:len(node.output)]


@converter("NonMaxSuppression", versions=(10, 28))
def non_max_suppression(ctx: Context, node: Node) -> list[Value]:
    ins = [ctx.get(node, i) for i in range(5)]
    while ins and ins[-1] is None:
        ins.pop()
    ins = [v if v is not None else ctx.constant(np.zeros((0,), "float32"), "none")
           for v in ins]
    res, count = ctx.emit_multi("non_max_suppression", ins, {
        "center_point_box": int(ctx.attrs(node).get("center_point_box", 0))})
    return [ctx.mark_sized(res, count, 0)]
