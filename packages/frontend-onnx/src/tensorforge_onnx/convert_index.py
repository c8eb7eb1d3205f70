"""Converters for the ops that index with data: Gather, GatherElements, GatherND, Scatter,
ScatterElements, ScatterND (opsets 11-23, `reduction` from ScatterElements/ScatterND-16).

Constant indices are checked here, at import, naming the node; indices known only at run time
are checked by the generated code (see `tensorforge.graph.ops.indexing`)."""

from __future__ import annotations

import onnx

from tensorforge.graph import Value
from tensorforge.graph.ops.indexing import check_indices

from .context import Context
from .dispatch import converter

Node = onnx.NodeProto


def _axis(ctx: Context, node: Node, x: Value) -> int:
    nd = len(x.shape)
    axis = int(ctx.attrs(node).get("axis", 0))
    if not -nd <= axis < nd:
        raise ctx.fail(node, f"axis={axis} for an input of rank {nd}")
    return axis % nd


def _const_indices(ctx: Context, node: Node, idx: Value, bounds: list[int], first_axis: int,
                   tuple_last: bool) -> Value:
    """A constant index input checked (naming the node) and wrapped to non-negative."""
    if not idx.is_const:
        return idx
    ind = idx.const.astype("int64")
    where = "its constant indices"  # (the frontend's error names the node)
    if tuple_last:
        ind = ind.copy()
        for c, n in enumerate(bounds):
            ind[..., c] = check_indices(ind[..., c], n, node.op_type, first_axis + c, where)
    else:
        ind = check_indices(ind, bounds[0], node.op_type, first_axis, where)
    return ctx.constant(ind, "indices")


@converter("Gather", versions=(1, 13))
def gather(ctx: Context, node: Node) -> list[Value]:
    x, idx = ctx.get(node, 0), ctx.get(node, 1)
    axis = _axis(ctx, node, x)
    n = x.shape[axis]
    idx = _const_indices(ctx, node, idx, [n], axis, False)
    if idx.is_const and not x.is_const and idx.const.ndim == 0:
        k = int(idx.const)  # one slice along axis, the axis removed
        begin = tuple(k if d == axis else 0 for d in range(len(x.shape)))
        sz = tuple(1 if d == axis else s for d, s in enumerate(x.shape))
        sl = ctx.emit("strided_slice", x, begin=begin, step=(1,) * len(x.shape), size=sz)
        return [ctx.reshape(sl, x.shape[:axis] + x.shape[axis + 1:])]
    return [ctx.emit("take", x, idx, axis=axis)]


@converter("GatherElements", versions=(11, 13))
def gather_elements(ctx: Context, node: Node) -> list[Value]:
    x, idx = ctx.get(node, 0), ctx.get(node, 1)
    axis = _axis(ctx, node, x)
    idx = _const_indices(ctx, node, idx, [x.shape[axis]], axis, False)
    return [ctx.emit("gather_elements", x, idx, axis=axis)]


@converter("GatherND", versions=(11, 13))
def gather_nd(ctx: Context, node: Node) -> list[Value]:
    x, idx = ctx.get(node, 0), ctx.get(node, 1)
    b = int(ctx.attrs(node).get("batch_dims", 0))
    k = idx.shape[-1] if idx.shape else 0
    if b < 0 or not idx.shape or b + k > len(x.shape):
        raise ctx.fail(node, f"batch_dims={b} with data {list(x.shape)} and indices "
                             f"{list(idx.shape)}")
    idx = _const_indices(ctx, node, idx, list(x.shape[b:b + k]), b, True)
    return [ctx.emit("gather_nd", x, idx, batch_dims=b)]


def _reduction(ctx: Context, node: Node) -> str:
    red = ctx.attrs(node).get("reduction", "none")
    allowed = ("none", "add", "mul") if ctx.op_version < 18 else ("none", "add", "mul",
                                                                    "max", "min")
    if red not in allowed:
        raise ctx.fail(node, f"reduction={red!r}", f"opset {ctx.opset} allows "
                                                    f"{', '.join(allowed)}")
    return red


@converter("ScatterElements", "Scatter", versions=(9, 18))
def scatter_elements(ctx: Context, node: Node) -> list[Value]:
    x, idx, upd = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    axis = _axis(ctx, node, x)
    idx = _const_indices(ctx, node, idx, [x.shape[axis]], axis, False)
    return [ctx.emit("scatter_elements", x, idx, upd, axis=axis,
                     reduction=_reduction(ctx, node))]


@converter("ScatterND", versions=(11, 18))
def scatter_nd(ctx: Context, node: Node) -> list[Value]:
    x, idx, upd = ctx.get(node, 0), ctx.get(node, 1), ctx.get(node, 2)
    k = idx.shape[-1] if idx.shape else 0
    if not idx.shape or not 1 <= k <= len(x.shape):
        raise ctx.fail(node, f"indices of shape {list(idx.shape)} for data of rank "
                             f"{len(x.shape)}")
    idx = _const_indices(ctx, node, idx, list(x.shape[:k]), 0, True)
    return [ctx.emit("scatter_nd", x, idx, upd, reduction=_reduction(ctx, node))]


