"""Converters for shape and data-movement ops. Shape arguments (Reshape's shape, Slice's
starts, Pad's pads, Resize's sizes ...) must be known at import; they usually are constants or
fold from Shape chains (see Context.emit)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from tensorforge.graph import Value
from tensorforge.graph.narrow_types import is_narrow
from tensorforge.graph.ops.resize import resize_taps

from .context import Context
from .dispatch import converter

Node = onnx.NodeProto


def _ints(a: Any) -> list[int]:
    return [int(v) for v in np.asarray(a).reshape(-1)]


@converter("Constant", versions=(1, 25))
def constant(ctx: Context, node: Node) -> list[Value]:
    at = ctx.attrs(node)
    if "value" in at:
        arr = at["value"]
    elif "value_float" in at:
        arr = np.array(at["value_float"], dtype="float32")
    elif "value_floats" in at:
        arr = np.array(at["value_floats"], dtype="float32")
    elif "value_int" in at:
        arr = np.array(at["value_int"], dtype="int64")
    elif "value_ints" in at:
        arr = np.array(at["value_ints"], dtype="int64")
    else:
        raise ctx.fail(node, f"a constant of kind {sorted(at)}",
                       "only dense numeric constants are supported")
    if np.asarray(arr).dtype.kind not in "biuf" and not is_narrow(np.asarray(arr).dtype.name):
        raise ctx.fail(node, f"a constant of dtype {np.asarray(arr).dtype}")
    return [ctx.constant(arr, "value")]


@converter("ConstantOfShape", versions=(9, 25))
def constant_of_shape(ctx: Context, node: Node) -> list[Value]:
    shape = _ints(ctx.const(node, 0, "shape"))
    val = ctx.attrs(node).get("value", np.zeros(1, dtype="float32"))
    return [ctx.constant(np.full(shape, np.asarray(val).reshape(-1)[0],
                                 dtype=np.asarray(val).dtype), "value")]


@converter("Shape", versions=(1, 25))
def shape(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    dims = list(x.shape)
    start, end = int(at.get("start", 0)), at.get("end")
    dims = dims[start:] if end is None else dims[start:int(end)]
    return [ctx.constant(np.array(dims, dtype="int64"), "shape")]


@converter("Size", versions=(1, 25))
def size(ctx: Context, node: Node) -> list[Value]:
    return [ctx.constant(np.array(ctx.get(node, 0).size, dtype="int64"), "size")]


@converter("Reshape", versions=(5, 25))
def reshape(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    shape = _ints(ctx.const(node, 1, "shape"))
    if not ctx.attrs(node).get("allowzero", 0):
        shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = x.size // known if known else 0
    if int(np.prod(shape)) != x.size:
        raise ctx.fail(node, f"a reshape of {list(x.shape)} to {shape}",
                       "the element counts differ")
    return [ctx.reshape(x, tuple(shape))]


@converter("Flatten", versions=(1, 25))
def flatten(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    axis = int(ctx.attrs(node).get("axis", 1))
    axis = axis + len(x.shape) if axis < 0 else axis
    return [ctx.reshape(x, (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:]))))]


def _axes_arg(ctx: Context, node: Node, since: int) -> list[int] | None:
    if ctx.op_version >= since:
        a = ctx.const(node, 1, "axes")
        return None if a is None else _ints(a)
    a = ctx.attrs(node).get("axes")
    return None if a is None else list(a)


@converter("Squeeze", versions=(1, 25))
def squeeze(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    axes = _axes_arg(ctx, node, 13)
    nd = len(x.shape)
    drop = {a % nd for a in axes} if axes else {d for d, s in enumerate(x.shape) if s == 1}
    return [ctx.reshape(x, tuple(s for d, s in enumerate(x.shape) if d not in drop))]


@converter("Unsqueeze", versions=(1, 25))
def unsqueeze(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    axes = _axes_arg(ctx, node, 13) or []
    nd = len(x.shape) + len(axes)
    ins = {a % nd for a in axes}
    it = iter(x.shape)
    return [ctx.reshape(x, tuple(1 if d in ins else next(it) for d in range(nd)))]


@converter("Transpose", versions=(1, 25))
def transpose(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    perm = ctx.attrs(node).get("perm") or list(range(len(x.shape)))[::-1]
    if list(perm) == list(range(len(x.shape))):
        return [ctx.emit("identity", x)]
    return [ctx.emit("transpose", x, perm=tuple(int(p) for p in perm))]


@converter("Concat", versions=(4, 13))
def concat(ctx: Context, node: Node) -> list[Value]:
    vals = [ctx.get(node, i) for i in range(len(node.input)) if ctx.has(node, i)]
    vals = [v for v in vals if v.size > 0] or vals[:1]
    axis = int(ctx.attrs(node)["axis"]) % len(vals[0].shape)
    if len(vals) == 1:
        return [ctx.emit("identity", vals[0])]
    return [ctx.emit_multi("concat", vals, {"axis": axis})[0]]


@converter("Split", versions=(2, 18))
def split(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    axis = int(at.get("axis", 0)) % len(x.shape)
    n = x.shape[axis]
    sizes = _ints(ctx.const(node, 1, "split")) if (ctx.op_version >= 13 and ctx.has(node, 1)) \
        else at.get("split")
    if not sizes:
        parts = int(at.get("num_outputs", len(node.output)))
        chunk = -(-n // parts)
        sizes = [min(chunk, n - i * chunk) for i in range(parts)]
    sizes = [int(s) for s in sizes]
    if sum(sizes) != n:
        raise ctx.fail(node, f"split sizes {sizes} for a dimension of {n}")
    return ctx.emit_multi("split", [x], {"axis": axis, "sizes": tuple(sizes)})


def _slice_attrs(shape: tuple[int, ...], starts: list[int], ends: list[int],
                 axes: list[int], steps: list[int]) -> dict[str, tuple[int, ...]]:
    nd = len(shape)
    begin, step, size = [0] * nd, [1] * nd, list(shape)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= nd
        n = shape[a]
        if st == 0:
            raise ValueError("a Slice step of 0")
        s = s + n if s < 0 else s
        e = e + n if e < 0 else e
        if st > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
            cnt = max(0, -(-(e - s) // st))
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
            cnt = max(0, -(-(s - e) // -st))
        begin[a], step[a], size[a] = s, st, cnt
    return {"begin": tuple(begin), "step": tuple(step), "size": tuple(size)}


@converter("Slice", versions=(1, 13))
def slice_(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    if ctx.op_version < 10:
        at = ctx.attrs(node)
        starts, ends = list(at["starts"]), list(at["ends"])
        axes, steps = list(at.get("axes", range(len(starts)))), [1] * len(starts)
    else:
        starts = _ints(ctx.const(node, 1, "starts"))
        ends = _ints(ctx.const(node, 2, "ends"))
        axes = _ints(ctx.const(node, 3, "axes")) if ctx.has(node, 3) else list(
            range(len(starts)))
        steps = _ints(ctx.const(node, 4, "steps")) if ctx.has(node, 4) else [1] * len(starts)
    try:
        attrs = _slice_attrs(x.shape, starts, ends, axes, steps)
    except ValueError as e:
        raise ctx.fail(node, str(e)) from None
    if attrs["size"] == tuple(x.shape) and all(s == 1 for s in attrs["step"]):
        return [ctx.emit("identity", x)]
    return [ctx.emit_multi("strided_slice", [x], attrs)[0]]


@converter("Expand", versions=(8, 13))
def expand(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    target = tuple(int(s) for s in np.broadcast_shapes(
        tuple(x.shape), tuple(_ints(ctx.const(node, 1, "shape")))))
    if target == tuple(x.shape):
        return [ctx.emit("identity", x)]
    return [ctx.emit("broadcast_to", x, shape=target)]


@converter("Pad", versions=(2, 25))
def pad(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    nd = len(x.shape)
    mode = at.get("mode", "constant")
    if ctx.op_version < 11:
        pads, value = list(at["pads"]), float(at.get("value", 0.0))
        axes = list(range(nd))
    else:
        pads = _ints(ctx.const(node, 1, "pads"))
        cv = ctx.const(node, 2, "constant_value") if ctx.has(node, 2) else None
        value = 0 if cv is None or cv.size == 0 else np.asarray(cv).reshape(-1)[0].item()
        axes = _ints(ctx.const(node, 3, "axes")) if ctx.has(node, 3) else list(range(nd))
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise ctx.fail(node, f"mode={mode!r}")
    k = len(axes)
    per = [(0, 0)] * nd
    for i, a in enumerate(axes):
        per[a % nd] = (pads[i], pads[k + i])
    if mode != "constant" and any(b < 0 or e < 0 for b, e in per):
        raise ctx.fail(node, f"negative pads with mode={mode!r}")
    if mode == "reflect" and any(max(b, e) >= s for (b, e), s in zip(per, x.shape) if b or e):
        raise ctx.fail(node, "reflect pads as large as the dimension")
    return [ctx.emit("pad", x, pads=tuple(per), mode=mode, value=value)]


def _resize_common(ctx: Context, node: Node, x: Value, scales: list[float] | None,
                   sizes: list[int] | None, axes: list[int], policy: str
                   ) -> tuple[list[int], list[float]]:
    nd = len(x.shape)
    full_sizes, full_scales = list(x.shape), [1.0] * nd
    if sizes is not None:
        if policy in ("not_larger", "not_smaller"):
            ratios = [sizes[i] / x.shape[a] for i, a in enumerate(axes)]
            r = min(ratios) if policy == "not_larger" else max(ratios)
            for a in axes:
                full_sizes[a] = int(np.floor(r * x.shape[a] + 0.5))
                full_scales[a] = r
        else:
            for i, a in enumerate(axes):
                full_sizes[a] = sizes[i]
                full_scales[a] = sizes[i] / x.shape[a]
    elif scales is not None:
        for i, a in enumerate(axes):
            full_scales[a] = float(np.float32(scales[i]))
            full_sizes[a] = int(np.floor(x.shape[a] * full_scales[a]))
    else:
        raise ctx.fail(node, "neither scales nor sizes")
    return full_sizes, full_scales


@converter("Resize", "Upsample", versions=(7, 19))
def resize(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    nd = len(x.shape)
    mode = at.get("mode", "nearest")
    if mode not in ("nearest", "linear", "bilinear", "cubic", "bicubic"):
        raise ctx.fail(node, f"mode={mode!r}", "nearest, linear and cubic are supported")
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    legacy = node.op_type == "Upsample" or ctx.op_version < 11
    scales: list[float] | None = None
    sizes: list[int] | None = None
    axes = list(range(nd))
    policy = "stretch"
    if legacy:
        if node.op_type == "Upsample" and ctx.op_version < 9:
            scales = [float(s) for s in at["scales"]]
        else:
            scales = [float(s) for s in np.asarray(ctx.const(node, 1, "scales")).reshape(-1)]
        coord = "asymmetric"
        nearest = "floor" if all(s >= 1 for s in scales) else "ceil"
    else:
        coord = at.get("coordinate_transformation_mode", "half_pixel")
        nearest = at.get("nearest_mode", "round_prefer_floor")
        sc = ctx.const(node, 2, "scales") if ctx.has(node, 2) else None
        sz = ctx.const(node, 3, "sizes") if ctx.has(node, 3) else None
        if sc is not None and sc.size:
            scales = [float(s) for s in sc.reshape(-1)]
        if sz is not None and sz.size:
            sizes = _ints(sz)
        if "axes" in at:
            axes = [int(a) % nd for a in at["axes"]]
        policy = at.get("keep_aspect_ratio_policy", "stretch")
    full_sizes, full_scales = _resize_common(ctx, node, x, scales, sizes, axes, policy)
    if not legacy and (mode == "cubic" or at.get("antialias", 0) or
                       coord == "tf_crop_and_resize"):
        return [_resize_taps(ctx, node, x, full_sizes, full_scales, axes, mode, coord,
                             nearest)]
    if full_sizes == list(x.shape) and all(s == 1.0 for s in full_scales):
        return [ctx.emit("identity", x)]
    attrs = {"size": tuple(full_sizes), "scales": tuple(full_scales), "mode": mode,
             "coord": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    return [ctx.emit_multi("resize", [x], attrs)[0]]


def _resize_taps(ctx: Context, node: Node, x: Value, sizes: list[int], scales: list[float],
                 axes: list[int], mode: str, coord: str, nearest: str) -> Value:
    """Cubic, antialiased or cropped resizes: one `resize_taps` per resized dim, with the
    taps and weights of onnx's reference computed at import (they depend on shapes only;
    tf_crop_and_resize's roi must be known at import)."""
    at = ctx.attrs(node)
    nd = len(x.shape)
    roi = None
    if coord == "tf_crop_and_resize":
        r = [float(v) for v in np.asarray(ctx.const(node, 1, "roi")).reshape(-1)]
        k = len(r) // 2
        full = [(0.0, 1.0)] * nd
        for i, a in enumerate(axes if k != nd else range(nd)):
            full[a] = (r[i], r[k + i])
        roi = full
    attrs = {"mode": mode, "coord": coord, "nearest_mode": nearest,
             "cubic_a": float(at.get("cubic_coeff_a", -0.75)),
             "exclude_outside": bool(at.get("exclude_outside", 0)),
             "antialias": bool(at.get("antialias", 0))}
    y = x
    for d in range(nd):
        if sizes[d] == x.shape[d] and scales[d] == 1.0 and roi is None:
            continue
        if roi is not None and roi[d] == (0.0, 1.0) and sizes[d] == x.shape[d]:
            continue
        index, weight = resize_taps(x.shape[d], sizes[d], scales[d], attrs,
                                    roi[d] if roi is not None else (0.0, 1.0))
        y = ctx.emit("resize_taps", y, ctx.constant(index, "index"),
                     ctx.constant(weight, "weight"), axis=d,
                     extrapolation=float(at.get("extrapolation_value", 0.0)))
    return y if y is not x else ctx.emit("identity", x)
