"""The llvm template for convolutions left in NCHW by the layout pass: channel counts that no
block divides (a segmentation head's 21 classes, EfficientNet's squeeze-and-excitation
reductions to 2-10 channels) and grouped convolutions whose groups hold fewer than 4
channels.

Register tile: ``tile_oc`` output channels (rows, unrolled) x one vector of output pixels
along the width (``lanes`` wide, or the whole row when it is shorter), accumulated over the
whole reduction in a local buffer, then finished by the inlined epilogue; every step is
``tile_oc`` broadcasts of weights x one (strided when stride > 1) input vector. On a 1x1 image
(the SE convolutions) the tile is ``tile_oc`` scalar accumulators. The padding is its own
stage at root, as for the blocked convolutions. Knobs: ``tile_oc``, ``unroll_kw``."""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import Tensor

from .strategies import (
    _ext,
    _find,
    _inline_rest,
    _lanes,
    _parallel,
    _pick_tile,
    _prod,
    _root_parallel,
    _tile_candidates,
    single_output_schedule,
)

__all__ = ["schedule_conv2d_nchw"]


def schedule_conv2d_nchw(outs: list[Tensor] | Tensor, target: Any = None,
                         cfg: Any = None) -> Any:
    """Direct NCHW convolution (grouped and depthwise too), see the module doc."""
    s, out, cfg = single_output_schedule(outs, target, cfg, "schedule_conv2d_nchw")
    conv = _find(s, "conv2d_nchw")
    lanes, par = _lanes(target), _parallel(target)
    n, f, y, x = out.op.axis
    oc, ow = _ext(f), _ext(x)
    vec = lanes if ow >= lanes else (ow if ow >= 4 else 1)
    rows = _pick_tile(oc, 8)
    cfg.define_split("tile_oc", oc, 2, policy="candidate",
                     candidates=_tile_candidates(oc, rows, 16), default=(-1, rows))
    kw = _ext(conv.op.reduce_axis[-1])
    cfg.define_knob("unroll_kw", [False, True], default=kw <= 3)
    cfg.add_flop(2.0 * _prod(conv.op.axis) * _prod(conv.op.reduce_axis))
    for st in _inline_rest(s, {out.op, conv.op}):
        _root_parallel(st, par)
    local = s[s.cache_write(conv.op.output(0), "local")]
    if conv.op is not out.op:
        conv.compute_inline()
    fo, fi = cfg["tile_oc"].apply(s, out, f)
    if vec > 1:
        xo, xi = out.split(x, factor=vec)
        out.reorder(n, fo, y, xo, fi, xi)
        out.vectorize(xi)
    else:
        xo, xi = x, None
        out.reorder(n, fo, y, xo, fi)
    out.unroll(fi)
    rowloop = out.fuse(n, fo, y)
    if par:
        out.parallel(rowloop)
    local.compute_at(out, xo)
    _, lf, _, lx = local.op.axis
    red = list(local.op.reduce_axis)
    local.reorder(*red, lf, lx)
    if vec > 1:
        local.vectorize(lx)
    local.unroll(lf)
    if cfg["unroll_kw"].val:
        local.unroll(red[-1])
    return s
