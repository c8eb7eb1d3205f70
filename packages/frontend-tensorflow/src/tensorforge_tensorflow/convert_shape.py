"""Converters for shapes and data movement: Reshape, Squeeze, ExpandDims, ConcatV2, Split,
Pack, Unpack, StridedSlice, Slice, ReverseV2, Transpose, Pad, GatherV2 and the shape
computations Shape, Fill, Range, ZerosLike that fold to constants at import.

Concat, Split and Pad on an NCHW-stored NHWC tensor remap their axis and stay NCHW; Transpose
composes its permutation with the layout's (no extra transpose); shape-sensitive ops (Reshape,
StridedSlice) see the tensor in TensorFlow's layout."""

from __future__ import annotations

from typing import Any

import numpy as np

from .context import NHWC_TO_NCHW, STORAGE_AXIS, Context, Entry, Nchw, shape_of
from .dispatch import converter


def _rank4_nchw(entries: list[Entry]) -> bool:
    """Whether to work in NCHW: some entry is Nchw and all are rank 4."""
    return (any(isinstance(e, Nchw) for e in entries)
            and all(len(shape_of(e)) == 4 for e in entries))


@converter("Reshape")
def reshape(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    shape = [int(s) for s in np.asarray(ctx.const(node, 1, "shape")).reshape(-1)]
    if shape.count(-1) > 1:
        raise ctx.fail(node, f"the shape {shape} with more than one -1")
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = x.size // known if known else 0
    if int(np.prod(shape)) != x.size:
        raise ctx.fail(node, f"a reshape of {list(x.shape)} to {shape} (sizes differ)")
    return [ctx.reshape(x, tuple(shape))]


@converter("Squeeze")
def squeeze(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    dims = ctx.attr(node, "squeeze_dims", None) or ctx.attr(node, "axis", None) or []
    rank = len(x.shape)
    drop = {int(d) % rank for d in dims} if dims else {d for d, s in enumerate(x.shape)
                                                        if s == 1}
    return [ctx.reshape(x, tuple(s for d, s in enumerate(x.shape) if d not in drop))]


@converter("ExpandDims")
def expand_dims(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    axis = int(np.asarray(ctx.const(node, 1, "axis")).reshape(-1)[0])
    shape = list(x.shape)
    shape.insert(axis % (len(shape) + 1), 1)
    return [ctx.reshape(x, tuple(shape))]


@converter("ConcatV2")
def concat(ctx: Context, node: Any) -> list[Entry]:
    n = ctx.n_inputs(node) - 1
    entries = [ctx.entry(node, i) for i in range(n)]
    axis = int(ctx.const(node, n, "axis"))
    if _rank4_nchw(entries):
        vals = [ctx.to_nchw(e) for e in entries]
        return [Nchw(ctx.emit_multi("concat", vals, {"axis": STORAGE_AXIS[axis % 4]})[0])]
    vals = [ctx.tf(e) for e in entries]
    if len(vals) == 1:
        return [vals[0]]
    return [ctx.emit_multi("concat", vals, {"axis": axis % len(vals[0].shape)})[0]]


def _split(ctx: Context, x: Entry, axis: int, sizes: list[int]) -> list[Entry]:
    rank = len(shape_of(x))
    axis %= rank
    if isinstance(x, Nchw):
        return [Nchw(v) for v in ctx.emit_multi("split", [x.value], {
            "axis": STORAGE_AXIS[axis], "sizes": tuple(sizes)})]
    if len(sizes) == 1:
        return [ctx.tf(x)]
    return list(ctx.emit_multi("split", [ctx.tf(x)], {"axis": axis, "sizes": tuple(sizes)}))


@converter("Split")
def split(ctx: Context, node: Any) -> list[Entry]:
    axis = int(ctx.const(node, 0, "axis"))
    x = ctx.entry(node, 1)
    n = int(ctx.attr(node, "num_split"))
    dim = shape_of(x)[axis % len(shape_of(x))]
    if dim % n:
        raise ctx.fail(node, f"a split of {dim} into {n} unequal parts")
    return _split(ctx, x, axis, [dim // n] * n)


@converter("SplitV")
def split_v(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    sizes = [int(s) for s in np.asarray(ctx.const(node, 1, "size_splits")).reshape(-1)]
    axis = int(ctx.const(node, 2, "axis"))
    dim = shape_of(x)[axis % len(shape_of(x))]
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - (sum(sizes) + 1)
    return _split(ctx, x, axis, sizes)


@converter("Pack")
def pack(ctx: Context, node: Any) -> list[Entry]:
    vals = [ctx.value(node, i) for i in range(ctx.n_inputs(node))]
    rank = len(vals[0].shape) + 1
    axis = int(ctx.attr(node, "axis", 0)) % rank
    shape = (*vals[0].shape[:axis], 1, *vals[0].shape[axis:])
    parts = [ctx.reshape(v, shape) for v in vals]
    return [parts[0] if len(parts) == 1 else ctx.emit_multi("concat", parts, {"axis": axis})[0]]


@converter("Unpack")
def unpack(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    axis = int(ctx.attr(node, "axis", 0)) % len(x.shape)
    n = x.shape[axis]
    out_shape = tuple(s for d, s in enumerate(x.shape) if d != axis)
    parts = ctx.emit_multi("split", [x], {"axis": axis, "sizes": (1,) * n}) if n > 1 else [x]
    return [ctx.reshape(p, out_shape) for p in parts]


# slicing ----------------------------------------------------------------------------------------
def slice_plan(shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int],
               masks: dict[str, int]) -> tuple[list[tuple[int, int, int]], tuple[int, ...]]:
    """TensorFlow's StridedSlice semantics: per input dim (begin, step, size), and the output
    shape (new axes inserted, shrunk axes dropped)."""
    bit = lambda m, k: (masks.get(m, 0) >> k) & 1  # noqa: E731
    spec: list[tuple[Any, ...]] = []
    real = sum(1 for k in range(len(begin))
               if not bit("ellipsis_mask", k) and not bit("new_axis_mask", k))
    for k in range(len(begin)):
        if bit("ellipsis_mask", k):
            spec += [("full",)] * (len(shape) - real)
        elif bit("new_axis_mask", k):
            spec.append(("new",))
        else:
            spec.append(("dim", begin[k], end[k], strides[k], bit("begin_mask", k),
                         bit("end_mask", k), bit("shrink_axis_mask", k)))
    used = sum(1 for s in spec if s[0] != "new")
    spec += [("full",)] * (len(shape) - used)
    plan: list[tuple[int, int, int]] = []
    out: list[int] = []
    d = 0
    for s in spec:
        if s[0] == "new":
            out.append(1)
            continue
        n = shape[d]
        d += 1
        if s[0] == "full":
            plan.append((0, 1, n))
            out.append(n)
            continue
        _, b, e, st, bm, em, shrink = s
        if st == 0:
            raise ValueError("a stride of 0")
        if shrink:
            idx = b + n if b < 0 else b
            if not 0 <= idx < n:
                raise ValueError(f"index {b} out of range for a dim of {n}")
            plan.append((idx, 1, 1))
            continue
        start, stop, step = slice(None if bm else b, None if em else e, st).indices(n)
        size = len(range(start, stop, step))
        plan.append((start if size else 0, step, size))
        out.append(size)
    return plan, tuple(out)


def _slice(ctx: Context, node: Any, x: Any, plan: list[tuple[int, int, int]],
           out_shape: tuple[int, ...]) -> Entry:
    if any(size == 0 for _, _, size in plan):
        raise ctx.fail(node, "an empty slice")
    if any((b, st, sz) != (0, 1, n) for (b, st, sz), n in zip(plan, x.shape)):
        x = ctx.emit("strided_slice", x, begin=tuple(p[0] for p in plan),
                     step=tuple(p[1] for p in plan), size=tuple(p[2] for p in plan))
    return ctx.reshape(x, out_shape)


@converter("StridedSlice")
def strided_slice(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    begin, end, strides = ([int(v) for v in np.asarray(ctx.const(node, i, what)).reshape(-1)]
                           for i, what in ((1, "begin"), (2, "end"), (3, "strides")))
    masks = {m: int(ctx.attr(node, m, 0)) for m in (
        "begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")}
    try:
        plan, out_shape = slice_plan(tuple(x.shape), begin, end, strides, masks)
    except ValueError as e:
        raise ctx.fail(node, f"a slice of {list(x.shape)} with {e}") from None
    return [_slice(ctx, node, x, plan, out_shape)]


@converter("Slice")
def slice_(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    begin = [int(v) for v in np.asarray(ctx.const(node, 1, "begin")).reshape(-1)]
    size = [int(v) for v in np.asarray(ctx.const(node, 2, "size")).reshape(-1)]
    plan = [(b, 1, n - b if s == -1 else s) for b, s, n in zip(begin, size, x.shape)]
    return [_slice(ctx, node, x, plan, tuple(p[2] for p in plan))]


@converter("ReverseV2")
def reverse(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.value(node, 0)
    axes = {int(a) % len(x.shape) for a in np.asarray(ctx.const(node, 1, "axis")).reshape(-1)}
    plan = [(n - 1, -1, n) if d in axes else (0, 1, n) for d, n in enumerate(x.shape)]
    return [_slice(ctx, node, x, plan, tuple(x.shape))]


@converter("Transpose")
def transpose(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    perm = [int(p) for p in np.asarray(ctx.const(node, 1, "perm")).reshape(-1)]
    if isinstance(x, Nchw):  # permute the NCHW value straight into the asked order
        return [ctx.transpose(x.value, tuple(STORAGE_AXIS[p] for p in perm))]
    return [ctx.transpose(ctx.tf(x), tuple(perm))]


@converter("Pad", "PadV2", "MirrorPad")
def pad(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    pads = [(int(b), int(a)) for b, a in np.asarray(ctx.const(node, 1, "paddings"))]
    attrs: dict[str, Any] = {"mode": "constant"}
    if node.op == "PadV2":
        attrs["value"] = float(np.asarray(ctx.const(node, 2, "constant_values")).reshape(-1)[0])
    elif node.op == "MirrorPad":
        mode = ctx.attr(node, "mode", "REFLECT")
        if mode != "REFLECT":
            raise ctx.fail(node, f"mode={mode!r}", "REFLECT is supported")
        attrs["mode"] = "reflect"
    if isinstance(x, Nchw):
        attrs["pads"] = tuple(pads[p] for p in NHWC_TO_NCHW)
        return [Nchw(ctx.emit("pad", x.value, **attrs))]
    attrs["pads"] = tuple(pads)
    return [ctx.emit("pad", ctx.tf(x), **attrs)]


@converter("GatherV2")
def gather(ctx: Context, node: Any) -> list[Entry]:
    x, idx = ctx.value(node, 0), ctx.value(node, 1)
    axis = int(ctx.const(node, 2, "axis"))
    if int(ctx.attr(node, "batch_dims", 0)):
        raise ctx.fail(node, "batch_dims != 0")
    return [ctx.emit("take", x, idx, axis=axis % len(x.shape))]


# shape computations (constants at import) -------------------------------------------------------
@converter("Shape")
def shape(ctx: Context, node: Any) -> list[Entry]:
    dtype = ctx.dtype(node, "out_type") if "out_type" in node.attr else "int32"
    return [ctx.constant(np.array(shape_of(ctx.entry(node, 0)), dtype=dtype), "shape")]


@converter("Fill")
def fill(ctx: Context, node: Any) -> list[Entry]:
    dims = tuple(int(d) for d in np.asarray(ctx.const(node, 0, "dims")).reshape(-1))
    v = ctx.value(node, 1)
    if v.is_const:
        return [ctx.constant(np.full(dims, v.const.reshape(())), "fill")]
    one = ctx.reshape(v, (1,) * len(dims))
    return [ctx.emit("broadcast_to", one, shape=dims)]


@converter("ZerosLike", "OnesLike")
def zeros_like(ctx: Context, node: Any) -> list[Entry]:
    x = ctx.entry(node, 0)
    fill_value = 0 if node.op == "ZerosLike" else 1
    return [ctx.constant(np.full(shape_of(x), fill_value, dtype=x.dtype), "fill")]


@converter("Range")
def range_(ctx: Context, node: Any) -> list[Entry]:
    start, limit, delta = (np.asarray(ctx.const(node, i, w)).reshape(()) for i, w in
                           ((0, "start"), (1, "limit"), (2, "delta")))
    dtype = ctx.dtype(node, "Tidx") if "Tidx" in node.attr else str(start.dtype)
    return [ctx.constant(np.arange(start, limit, delta).astype(dtype), "range")]
