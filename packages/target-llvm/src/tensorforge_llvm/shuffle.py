"""The channel shuffle in NCHW[x]c (ShuffleNetV2, `channel_shuffle` with its fused concat, or the
split after it): every output lane reads its own source channel, in another block and lane, so a
vector of output lanes is a gather. Loops: pixels outer (fused, parallel), the channel blocks
unrolled inside, the lanes a vector: with the block index a constant in each unrolled copy,
every lane's source is a constant offset from the pixel's address (no division or test at run
time; LLVM combines neighbouring lanes), 3x faster than the generic schedule's per-lane index
arithmetic (116 channels padded to 128, 14x14: 0.09 -> 0.03 ms, docs/performance.md)."""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import ComputeOp, Tensor

from .strategies import _cfg, _ext, _parallel

__all__ = ["MAX_UNROLLED_BLOCKS", "schedule_channel_shuffle", "schedule_split"]

#: channel blocks unrolled per pixel (beyond: the generic order, blocks outside the pixels)
MAX_UNROLLED_BLOCKS = 64


def schedule_channel_shuffle(outs: list[Tensor] | Tensor, target: Any = None,
                             cfg: Any = None) -> Any:
    """Pixels outer, channel blocks unrolled, lanes vectorized (see the module doc), each
    output alike: the shuffle's own output, or the parts of a `split` fused after it (a
    Dynamo export's `split(shuffle(x))`, which the `split/lanes` strategy schedules). NCHW
    (4-D) outputs, many blocks or `unroll_blocks` off: the generic schedule."""
    from tensorforge import te
    from tensorforge.ops.schedule_generic import schedule_generic

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    cfg = _cfg(cfg, target)
    blocked = all(len(o.shape) == 5 and _ext(o.op.axis[1]) <= MAX_UNROLLED_BLOCKS
                  for o in outs)
    cfg.define_knob("unroll_blocks", [True, False] if blocked else [False], default=blocked)
    if not cfg["unroll_blocks"].val:
        return schedule_generic(outs, target)
    s = te.create_schedule([o.op for o in outs])
    out_ops = {o.op for o in outs}
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op not in out_ops:
            st.compute_inline()
    for o in outs:
        out = s[o]
        n, c, y, x, lane = out.op.axis
        out.reorder(n, y, x, c, lane)
        rows = out.fuse(n, y)
        out.unroll(c)
        out.vectorize(lane)
        if _parallel(target):
            out.parallel(rows)
    return s


def schedule_split(outs: list[Tensor] | Tensor, target: Any = None, cfg: Any = None) -> Any:
    """A split group: where a channel shuffle feeds it (the parts read a tensor named
    `channel_shuffle`), `schedule_channel_shuffle` on its parts; any other split, the generic
    schedule."""
    from tensorforge.ops.schedule_generic import schedule_generic

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    if any(t.op.name.startswith("channel_shuffle") for o in outs for t in o.op.input_tensors):
        return schedule_channel_shuffle(outs, target, cfg)
    return schedule_generic(outs, target)
