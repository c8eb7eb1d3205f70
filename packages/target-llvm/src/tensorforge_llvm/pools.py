"""Pooling templates of the llvm target: max / average / global-average pooling in NCHW[x]c
(the layout pass's form) and in NCHW (channel counts no block divides).

Blocked (``(N, C/x, H, W, x)``): a register tile of ``tile_ow`` output pixels x one channel
block (``tile_ow`` independent vector accumulators), the window's taps outside the tile and
unrolled, so every step is one vector max/add per accumulator. The padding (``-inf`` for max,
0 for average) is inlined: each tap tests its bounds (knob ``inline_pad``; the default
``-pool-pad=inline``), where a stage at root (``-pool-pad=root``) made a padded copy of the
input first, one more pass over it: ResNet-50's 3x3 stride-2 max pool on 112x112x64, input
from memory, 0.50 ms with the copy, 0.22 ms inlined (ORT: 0.19-0.25 in the model).
The average's division and any epilogue (relu, BN scale) are inlined into the output stage,
which reads the finished tile. Global average pooling: one accumulator per channel block,
``tile_hw`` pixels of the image per step in separate partial sums would need rfactor; the
image is small (7x7 at the end of a CNN), so it sums in one chain per block.

NCHW: one vector of output pixels along the width when the row is at least a vector wide,
else the blocked form's tile of scalars. Knobs: ``tile_ow`` (blocked), ``unroll_taps``,
``inline_pad``."""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import ComputeOp, Tensor

from .strategies import (
    _ext,
    _inline_rest,
    _lanes,
    _parallel,
    _pick_tile,
    _prod,
    _root_parallel,
    _tile_candidates,
    single_output_schedule,
)

__all__ = ["schedule_pool"]


def _reduction(s: Any) -> Any:
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op.reduce_axis:
            return st
    raise ValueError("schedule_pool: the group has no pooling reduction")


def schedule_pool(outs: list[Tensor] | Tensor, target: Any = None, cfg: Any = None) -> Any:
    """Max / average / global-average pooling, NCHW[x]c or NCHW (see the module doc)."""
    s, out, cfg = single_output_schedule(outs, target, cfg, "schedule_pool")
    red = _reduction(s)
    lanes, par = _lanes(target), _parallel(target)
    axes = list(out.op.axis)
    blocked = len(axes) == 5
    ow_ext = _ext(axes[3])
    vec_ow = not blocked and ow_ext >= lanes
    tile = 1 if vec_ow else _pick_tile(ow_ext, 8)
    cfg.define_split("tile_ow", ow_ext, 2, policy="candidate",
                     candidates=_tile_candidates(ow_ext, tile, 16), default=(-1, tile))
    taps = _prod(red.op.reduce_axis)
    # a global pool's 49+ taps are never worth unrolling: one config, no tuning task
    cfg.define_knob("unroll_taps", [False, True] if taps <= 16 else [False], default=taps <= 16)
    opts = getattr(target, "options", {}) or {}
    pads = _inline_rest(s, {out.op, red.op})
    inline = str(opts.get("pool-pad", "inline") or "inline") == "inline"
    # without padding (a global pool, "valid" windows) the knob changes nothing: one choice
    cfg.define_knob("inline_pad", [False, True] if pads else [inline], default=inline)
    cfg.add_flop(float(_prod(red.op.axis) * taps))
    for st in pads:
        if cfg["inline_pad"].val:  # the window's taps test the bounds (see the module doc)
            st.compute_inline()
        else:
            _root_parallel(st, par)
    local = s[s.cache_write(red.op.output(0), "local")]
    if red.op is not out.op:
        red.compute_inline()
    n, c, oh, ow = axes[:4]
    if vec_ow:  # NCHW, a wide row: one vector of output pixels per step
        owo, owv = out.split(ow, factor=lanes)
        out.reorder(n, c, oh, owo, owv)
        out.vectorize(owv)
    else:
        owo, owi = cfg["tile_ow"].apply(s, out, ow)
        out.reorder(n, c, oh, owo, owi, *axes[4:])
        if blocked:
            out.vectorize(axes[4])
        out.unroll(owi)
    rows = out.fuse(n, c, oh)
    if par:
        out.parallel(rows)
    local.compute_at(out, owo)
    laxes = list(local.op.axis)
    inner = laxes[3:]
    local.reorder(*local.op.reduce_axis, *inner)
    if blocked:
        local.vectorize(laxes[4])
        local.unroll(laxes[3])
    elif vec_ow:
        local.vectorize(laxes[3])
    else:
        local.unroll(laxes[3])
    if cfg["unroll_taps"].val:
        for r in local.op.reduce_axis:
            local.unroll(r)
    return s
