"""Converters for ops that compute with positions or rearrange data: ArgMax/ArgMin, Hardmax,
CumSum/CumProd, TopK, Trilu, OneHot, Range, EyeLike, the signal windows, Tile,
DepthToSpace/SpaceToDepth, CenterCropPad, ReverseSequence.

Arguments that decide shapes (TopK's k, OneHot's depth, Tile's repeats, Range's limit) must
be known at import (constants or specialized inputs); data arguments (Trilu's k, OneHot's
values, Range's start and delta) are read by the kernels at run time."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context, np_dtype
from .dispatch import converter

Node = onnx.NodeProto


def _scalar(ctx: Context, node: Node, i: int, what: str) -> int:
    return int(np.asarray(ctx.const(node, i, what)).reshape(-1)[0])


@converter("ArgMax", "ArgMin", versions=(1, 28))
def arg_max_min(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    op = "argmax" if node.op_type == "ArgMax" else "argmin"
    return [ctx.emit(op, x, axis=int(at.get("axis", 0)) % len(x.shape),
                     keepdims=bool(at.get("keepdims", 1)),
                     last=bool(at.get("select_last_index", 0)))]


@converter("Hardmax", versions=(1, 28))
def hardmax(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    nd = len(x.shape)
    if ctx.op_version < 13:  # the 2-D coercion of old versions
        axis = int(ctx.attrs(node).get("axis", 1)) % nd
        rows = int(np.prod(x.shape[:axis], dtype=np.int64))
        flat = ctx.reshape(x, (rows, int(np.prod(x.shape[axis:], dtype=np.int64))))
        return [ctx.reshape(_hardmax(ctx, flat, 1), x.shape)]
    return [_hardmax(ctx, x, int(ctx.attrs(node).get("axis", -1)) % nd)]


def _hardmax(ctx: Context, x: Value, axis: int) -> Value:
    best = ctx.emit("argmax", x, axis=axis, keepdims=True, last=False)
    pos = np.arange(x.shape[axis]).reshape([-1 if d == axis else 1 for d in range(len(x.shape))])
    hit = ctx.emit("equal", ctx.constant(pos.astype("int64"), "pos"), best)
    return ctx.cast(hit, x.dtype)


@converter("CumSum", "CumProd", versions=(11, 28))
def cumulative(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    axis = _scalar(ctx, node, 1, "axis") % len(x.shape)
    return [ctx.emit("cumulative", x, axis=axis,
                     kind="sum" if node.op_type == "CumSum" else "prod",
                     exclusive=bool(at.get("exclusive", 0)), reverse=bool(at.get("reverse", 0)))]


@converter("TopK", versions=(1, 28))
def topk(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    k = int(at["k"]) if ctx.op_version < 10 else _scalar(ctx, node, 1, "k")
    axis = int(at.get("axis", -1)) % len(x.shape)
    if not 0 <= k <= x.shape[axis]:
        raise ctx.fail(node, f"k={k} for an axis of {x.shape[axis]}")
    return ctx.emit_multi("topk", [x], {"axis": axis, "k": k,
                                        "largest": bool(at.get("largest", 1))})


@converter("Trilu", versions=(14, 28))
def trilu(ctx: Context, node: Node) -> list[Value]:
    ins = [ctx.get(node, 0)] + ([ctx.get(node, 1)] if ctx.has(node, 1) else [])
    return [ctx.emit_multi("trilu", ins, {"upper": bool(ctx.attrs(node).get("upper", 1))})[0]]


@converter("OneHot", versions=(9, 28))
def one_hot(ctx: Context, node: Node) -> list[Value]:
    idx, values = ctx.get(node, 0), ctx.get(node, 2)
    depth = int(np.asarray(ctx.const(node, 1, "depth")).reshape(-1)[0])
    axis = int(ctx.attrs(node).get("axis", -1)) % (len(idx.shape) + 1)
    return [ctx.emit("one_hot", idx, ctx.reshape(values, (2,)), depth=depth, axis=axis)]


@converter("Range", versions=(11, 27))
def range_(ctx: Context, node: Node) -> list[Value]:
    start, limit, delta = (ctx.const(node, i, n).reshape(()) for i, n in
                           enumerate(("start", "limit", "delta")))
    n = max(int(np.ceil((float(limit) - float(start)) / float(delta))), 0)
    s, d = ctx.reshape(ctx.get(node, 0), ()), ctx.reshape(ctx.get(node, 2), ())
    return [ctx.emit("arange", s, d, n=n)]


@converter("EyeLike", versions=(9, 28))
def eye_like(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)  # only its shape matters
    at = ctx.attrs(node)
    dtype = np_dtype(at["dtype"]) if "dtype" in at else x.dtype
    return [ctx.constant(np.eye(x.shape[0], x.shape[1], int(at.get("k", 0)), dtype=dtype),
                         "eye")]


_WINDOW = {"HannWindow": "hann", "HammingWindow": "hamming", "BlackmanWindow": "blackman"}


@converter(*_WINDOW, versions=(17, 28))
def window(ctx: Context, node: Node) -> list[Value]:
    n = _scalar(ctx, node, 0, "size")
    at = ctx.attrs(node)
    dtype = np_dtype(int(at.get("output_datatype", onnx.TensorProto.FLOAT)))
    return ctx.emit_multi("window", [], {"kind": _WINDOW[node.op_type], "n": n,
                                         "periodic": bool(at.get("periodic", 1)),
                                         "dtype": dtype})


@converter("Tile", versions=(6, 28))
def tile(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    reps = [int(r) for r in np.asarray(ctx.const(node, 1, "repeats")).reshape(-1)]
    # out[r, d] = x[d]: broadcast a leading unit dim per axis, then merge (rep, dim) pairs
    inter = tuple(v for s in x.shape for v in (1, s))
    target = tuple(v for r, s in zip(reps, x.shape) for v in (r, s))
    y = ctx.emit("broadcast_to", ctx.reshape(x, inter), shape=target)
    return [ctx.reshape(y, tuple(r * s for r, s in zip(reps, x.shape)))]


@converter("DepthToSpace", versions=(1, 28))
def depth_to_space(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    b = int(at["blocksize"])
    n, c, h, w = x.shape
    if at.get("mode", "DCR") == "DCR":
        y = ctx.reshape(x, (n, b, b, c // (b * b), h, w))
        y = ctx.emit("transpose", y, perm=(0, 3, 4, 1, 5, 2))
    else:
        y = ctx.reshape(x, (n, c // (b * b), b, b, h, w))
        y = ctx.emit("transpose", y, perm=(0, 1, 4, 2, 5, 3))
    return [ctx.reshape(y, (n, c // (b * b), h * b, w * b))]


@converter("SpaceToDepth", versions=(1, 28))
def space_to_depth(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    b = int(at["blocksize"])
    n, c, h, w = x.shape
    y = ctx.reshape(x, (n, c, h // b, b, w // b, b))
    crd = at.get("mode", "DCR") == "CRD"
    y = ctx.emit("transpose", y, perm=(0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4))
    return [ctx.reshape(y, (n, c * b * b, h // b, w // b))]


@converter("CenterCropPad", versions=(18, 28))
def center_crop_pad(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    size = [int(s) for s in np.asarray(ctx.const(node, 1, "shape")).reshape(-1)]
    nd = len(x.shape)
    axes = [int(a) % nd for a in ctx.attrs(node).get("axes", range(nd))]
    begin, sl_size, pads = [0] * nd, list(x.shape), [(0, 0)] * nd
    for a, want in zip(axes, size):
        have = x.shape[a]
        if want < have:  # crop: the window starts at floor((have - want) / 2)
            begin[a], sl_size[a] = (have - want) // 2, want
        elif want > have:  # pad: the extra goes after first (floor before, ceil after)
            extra = want - have
            pads[a] = (extra // 2, extra - extra // 2)
    y = x
    if sl_size != list(x.shape):
        y = ctx.emit("strided_slice", y, begin=tuple(begin), step=(1,) * nd,
                     size=tuple(sl_size))
    if any(p != (0, 0) for p in pads):
        y = ctx.emit("pad", y, pads=tuple(pads), mode="constant", value=0)
    return [y if y is not x else ctx.emit("identity", x)]


@converter("ReverseSequence", versions=(10, 28))
def reverse_sequence(ctx: Context, node: Node) -> list[Value]:
    x, lens = ctx.get(node, 0), ctx.get(node, 1)
    at = ctx.attrs(node)
    return [ctx.emit("reverse_sequence", x, lens, time_axis=int(at.get("time_axis", 0)),
                     batch_axis=int(at.get("batch_axis", 1)))]
