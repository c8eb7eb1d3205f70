"""Converters for spatial sampling and rearrangement ops: GridSample, AffineGrid, RoiAlign,
Col2Im, MaxUnpool; and Det."""

from __future__ import annotations

import numpy as np
import onnx

from tensorforge.graph import Value

from .context import Context, np_dtype
from .dispatch import converter

Node = onnx.NodeProto

_MODES = {"bilinear": "linear", "linear": "linear", "nearest": "nearest", "bicubic": "cubic",
          "cubic": "cubic"}


@converter("GridSample", versions=(16, 28))
def grid_sample(ctx: Context, node: Node) -> list[Value]:
    x, grid = ctx.get(node, 0), ctx.get(node, 1)
    at = ctx.attrs(node)
    mode = _MODES.get(at.get("mode", "linear" if ctx.op_version >= 20 else "bilinear"))
    if mode is None:
        raise ctx.fail(node, f"mode={at.get('mode')!r}")
    pad = at.get("padding_mode", "zeros")
    if pad not in ("zeros", "border", "reflection"):
        raise ctx.fail(node, f"padding_mode={pad!r}")
    align = bool(at.get("align_corners", 0))
    dtype = "float64" if x.dtype == "float64" else "float32"
    coords = ctx.emit("grid_coords", grid, dims=tuple(x.shape[2:]), mode=mode, padding=pad,
                      align_corners=align, dtype=dtype)
    return [ctx.emit("grid_sample", x, coords, mode=mode, padding=pad, align_corners=align)]


@converter("AffineGrid", versions=(20, 28))
def affine_grid(ctx: Context, node: Node) -> list[Value]:
    theta = ctx.get(node, 0)
    size = [int(s) for s in np.asarray(ctx.const(node, 1, "size")).reshape(-1)]
    align = bool(ctx.attrs(node).get("align_corners", 0))
    n, sp = size[0], size[2:]
    axes = []
    for d in sp:  # normalized coordinates of each position along one spatial dim
        if align:
            axes.append(np.linspace(-1, 1, d) if d > 1 else np.zeros(1))
        else:
            axes.append((np.arange(d) * 2 + 1) / d - 1)
    mesh = np.meshgrid(*axes, indexing="ij")  # coords in (x, y[, z]) order, homogeneous
    base = np.stack([*[m.reshape(-1) for m in reversed(mesh)],
                     np.ones(int(np.prod(sp)))], -1).astype(theta.dtype)
    base_v = ctx.constant(base.reshape(1, *base.shape), "base")
    grid = ctx.emit("matmul", base_v, ctx.emit("transpose", theta, perm=(0, 2, 1)))
    return [ctx.reshape(grid, (n, *sp, len(sp)))]


@converter("RoiAlign", versions=(10, 28))
def roi_align(ctx: Context, node: Node) -> list[Value]:
    x, rois, bidx = (ctx.get(node, i) for i in range(3))
    at = ctx.attrs(node)
    half = at.get("coordinate_transformation_mode", "half_pixel" if ctx.op_version >= 16
                  else "output_half_pixel") == "half_pixel"
    return [ctx.emit("roi_align", x, rois, bidx,
                     out=(int(at.get("output_height", 1)), int(at.get("output_width", 1))),
                     mode=at.get("mode", "avg"), sampling_ratio=int(at.get("sampling_ratio", 0)),
                     spatial_scale=float(at.get("spatial_scale", 1.0)), half_pixel=half)]


@converter("Col2Im", versions=(18, 28))
def col2im(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    image = [int(v) for v in np.asarray(ctx.const(node, 1, "image_shape")).reshape(-1)]
    block = [int(v) for v in np.asarray(ctx.const(node, 2, "block_shape")).reshape(-1)]
    at = ctx.attrs(node)
    m = len(image)
    return [ctx.emit("col2im", x, image=tuple(image), block=tuple(block),
                     dilations=tuple(int(v) for v in at.get("dilations", [1] * m)),
                     strides=tuple(int(v) for v in at.get("strides", [1] * m)),
                     pads=tuple(int(v) for v in at.get("pads", [0] * (2 * m))))]


@converter("MaxUnpool", versions=(9, 28))
def max_unpool(ctx: Context, node: Node) -> list[Value]:
    x, idx = ctx.get(node, 0), ctx.get(node, 1)
    at = ctx.attrs(node)
    if ctx.has(node, 2):
        shape = [int(v) for v in np.asarray(ctx.const(node, 2, "output_shape")).reshape(-1)]
    else:
        k = list(at["kernel_shape"])
        n = len(k)
        s = list(at.get("strides", [1] * n))
        p = list(at.get("pads", [0] * (2 * n)))
        shape = [*x.shape[:2], *[(x.shape[2 + i] - 1) * s[i] + k[i] - p[i] - p[n + i]
                                 for i in range(n)]]
    return [ctx.emit("max_unpool", x, idx, shape=tuple(shape))]


@converter("Det", versions=(11, 28))
def det(ctx: Context, node: Node) -> list[Value]:
    return [ctx.emit("det", ctx.get(node, 0))]


@converter("DFT", versions=(17, 28))
def dft(ctx: Context, node: Node) -> list[Value]:
    x = ctx.get(node, 0)
    at = ctx.attrs(node)
    nd = len(x.shape)
    if ctx.op_version >= 20:
        axis = int(np.asarray(ctx.const(node, 2, "axis")).reshape(-1)[0]) if ctx.has(
            node, 2) else -2
    else:
        axis = int(at.get("axis", 1))
    axis %= nd
    inverse, onesided = bool(at.get("inverse", 0)), bool(at.get("onesided", 0))
    if ctx.has(node, 1):
        n = int(np.asarray(ctx.const(node, 1, "dft_length")).reshape(-1)[0])
    else:
        n = 2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis]
    return [ctx.emit("dft", x, axis=axis, length=n, inverse=inverse, onesided=onesided)]


@converter("STFT", versions=(17, 28))
def stft(ctx: Context, node: Node) -> list[Value]:
    x, window = ctx.get(node, 0), ctx.get(node, 2)
    step = int(np.asarray(ctx.const(node, 1, "frame_step")).reshape(-1)[0])
    if ctx.has(node, 3):
        n = int(np.asarray(ctx.const(node, 3, "frame_length")).reshape(-1)[0])
    else:
        n = window.shape[0]
    ins = [x] + ([window] if window is not None else [])
    return [ctx.emit_multi("stft", ins, {"length": n, "step": step, "onesided": bool(
        ctx.attrs(node).get("onesided", 1))})[0]]


@converter("DeformConv", versions=(19, 28))
def deform_conv(ctx: Context, node: Node) -> list[Value]:
    x, w, off, bias, mask = (ctx.get(node, i) for i in range(5))
    if len(x.shape) != 4:
        raise ctx.fail(node, f"a {len(x.shape) - 2}-D input", "2-D deformable convs only")
    at = ctx.attrs(node)
    ins = [x, w, off]
    if bias is not None or mask is not None:
        ins.append(bias if bias is not None else ctx.constant(np.zeros((0,), x.dtype), "b"))
    if mask is not None:
        ins.append(mask)
    return [ctx.emit_multi("deform_conv2d", ins, {
        "strides": tuple(int(v) for v in at.get("strides", [1, 1])),
        "dilations": tuple(int(v) for v in at.get("dilations", [1, 1])),
        "pads": tuple(int(v) for v in at.get("pads", [0, 0, 0, 0])),
        "groups": int(at.get("group", 1)), "offset_groups": int(at.get("offset_group", 1))})[0]]


@converter("MelWeightMatrix", versions=(17, 28))
def mel_weight_matrix(ctx: Context, node: Node) -> list[Value]:
    n_mel = int(np.asarray(ctx.const(node, 0, "num_mel_bins")).reshape(-1)[0])
    n_dft = int(np.asarray(ctx.const(node, 1, "dft_length")).reshape(-1)[0])
    dtype = np_dtype(int(ctx.attrs(node).get("output_datatype", onnx.TensorProto.FLOAT)))
    return [ctx.emit_multi("mel_weight_matrix", [ctx.get(node, i) for i in (2, 3, 4)],
                           {"mel_bins": n_mel, "dft_length": n_dft, "dtype": dtype})[0]]
