"""The channel shuffle in NCHW[x]c (ShuffleNetV2, `channel_shuffle` with its fused concat or
slices): every output lane reads its own source channel, in another block and lane, so a
vector of output lanes is a gather. Loops: pixels outer (fused, parallel), the channel blocks
unrolled inside, the lanes a vector: with the block index a constant in each unrolled copy,
every lane's source is a constant offset from the pixel's address (no division or test at run
time; LLVM combines neighbouring lanes), 3x faster than the generic schedule's per-lane index
arithmetic (116 channels padded to 128, 14x14: 0.09 -> 0.03 ms, docs/performance.md)."""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import ComputeOp, Tensor

from .strategies import _ext, _parallel, single_output_schedule

__all__ = ["MAX_UNROLLED_BLOCKS", "schedule_channel_shuffle"]

#: channel blocks unrolled per pixel (beyond: the generic order, blocks outside the pixels)
MAX_UNROLLED_BLOCKS = 64


def schedule_channel_shuffle(outs: list[Tensor] | Tensor, target: Any = None,
                             cfg: Any = None) -> Any:
    """Pixels outer, channel blocks unrolled, lanes vectorized (see the module doc); NCHW
    (4-D), many blocks or `unroll_blocks` off: the generic schedule."""
    from tensorforge.ops.schedule_generic import schedule_generic

    s, out, cfg = single_output_schedule(outs, target, cfg, "schedule_channel_shuffle")
    axes = list(out.op.axis)
    blocked = len(axes) == 5 and _ext(axes[1]) <= MAX_UNROLLED_BLOCKS
    cfg.define_knob("unroll_blocks", [True, False] if blocked else [False], default=blocked)
    if not cfg["unroll_blocks"].val:
        return schedule_generic(outs, target)
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op is not out.op:
            st.compute_inline()
    n, c, y, x, lane = axes
    out.reorder(n, y, x, c, lane)
    rows = out.fuse(n, y)
    out.unroll(c)
    out.vectorize(lane)
    if _parallel(target):
        out.parallel(rows)
    return s
