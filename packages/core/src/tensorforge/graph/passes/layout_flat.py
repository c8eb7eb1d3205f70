"""Which 1x1 convs the NCHW[x]c layout pass computes over one row of H*W pixels
(`conv2d_nchwc(flat_pixels=True)`; docs/architecture.md, "1x1 convs over a flat pixel
axis")."""

from __future__ import annotations

from typing import Any

#: `-conv1x1-flat=auto` flattens 1x1 convs on images up to this many pixels wide
FLAT_MAX_WIDTH = 14


def flat_pixels_on(target: Any, kh: int, kw: int, width: int, attrs: dict[str, Any]) -> bool:
    """Whether a groups-1 conv (`attrs` its strides, pads and dilations) computes over one
    row of H*W pixels: 1x1, stride 1, unpadded, and the `-conv1x1-flat` target option:
    `auto` on images up to `FLAT_MAX_WIDTH` wide, whose short rows cap the GEMM form's
    pixel tile (measured, docs/performance.md "1x1 convs over a flat pixel axis": the 7x7
    layers of RegNetX-400MF 106 -> 126 GFLOP/s, ResNet-50 98-102 -> 107-108; on 56-pixel
    rows no gain), `on`, `off`. A target without the option (not the LLVM CPU) keeps rows."""
    opts = getattr(target, "options", {}) or {}
    policy = str(opts.get("conv1x1-flat", "off") or "off")
    if policy == "off" or (kh, kw) != (1, 1) or attrs["strides"] != (1, 1) or any(
            attrs["pads"]) or attrs["dilations"] != (1, 1):
        return False
    return policy == "on" or width <= FLAT_MAX_WIDTH
