"""Converters for spatial sampling and rearrangement ops: GridSample, AffineGrid, RoiAlign,
Col2Im."""

from __future__ import annotations

import onnx

from tensorforge.graph import Value

from .context import Context
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
