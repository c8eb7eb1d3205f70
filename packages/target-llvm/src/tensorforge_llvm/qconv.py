"""The llvm template of `qconv2d_nchwc` (int8 convolution, graph/ops/qconv.py).

The padding stage packs 4 input channels of a padded pixel into one int32 (at root, one pass
over the input); the register tile is `tile_ow` output pixels x `tile_oc` blocks of `y` output
channels (int32 accumulators), over the reduction (channel quads, ry, rx): each step
broadcasts one packed pixel and does one `dot4_u8s8` (a VNNI `vpdpbusd`: 64 multiply-adds)
with the weight vector of that quad. The requantizing epilogue (float scale, round, zero
point, clip) is inlined into the output stage. Knobs: `tile_ow`, `unroll_kw`,
`tile_oc` (channel blocks per tile: 2 on narrow images)."""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import Tensor

from .strategies import (
    _ext,
    _find,
    _inline_rest,
    _lanes,
    _parallel,
    _prod,
    _tile_candidates,
    default_tile_ow,
    register_file,
    single_output_schedule,
)

__all__ = ["schedule_qconv2d_nchwc"]


def schedule_qconv2d_nchwc(outs: list[Tensor] | Tensor, target: Any = None,
                           cfg: Any = None) -> Any:
    """int8 NCHW[x]c convolution, register-tiled along output width and channels."""
    s, out, cfg = single_output_schedule(outs, target, cfg, "schedule_qconv2d_nchwc")
    conv = _find(s, "qconv2d_nchwc")
    lanes, par = _lanes(target), _parallel(target)
    n, oc, oh, ow, ob = out.op.axis
    kernel = conv.op.input_tensors[1]
    oc_bn, kw = int(kernel.shape[4].value), int(kernel.shape[3].value)
    owx = _ext(ow)
    tile = default_tile_ow(owx, oc_bn, lanes, register_file(target))
    cfg.define_split("tile_ow", owx, 2, policy="candidate",
                     candidates=_tile_candidates(owx, tile), default=(-1, tile))
    cfg.define_knob("unroll_kw", [False, True], default=kw <= 3)
    # a narrow image (ResNet's 7x7 last stage): two channel blocks per tile, so enough
    # independent accumulators hide vpdpbusd's latency
    ocx = _ext(oc)
    cfg.define_knob("tile_oc", [1, 2] if ocx % 2 == 0 else [1],
                    default=2 if ocx % 2 == 0 and cfg["tile_ow"].size[1] < 12 else 1)
    cfg.add_flop(2.0 * 4 * _prod(conv.op.axis) * _prod(conv.op.reduce_axis))

    for st in _inline_rest(s, {out.op, conv.op}):  # the packing: one pass over the input
        axes = list(st.op.axis)  # scalar: a vector would gather bytes a block apart
        rows = st.fuse(*axes[:-1])
        if par:
            st.parallel(rows)
    local = s[s.cache_write(conv.op.output(0), "local")]
    if conv.op is not out.op:
        conv.compute_inline()
    owo, owi = cfg["tile_ow"].apply(s, out, ow)
    oco, oci = out.split(oc, factor=cfg["tile_oc"].val)
    out.reorder(n, oco, oh, owo, oci, owi, ob)
    out.vectorize(ob)
    rows = out.fuse(n, oco, oh)
    if par:
        out.parallel(rows)
    local.compute_at(out, owo)
    _, coc, _, cw, cb = local.op.axis
    rg, ry, rx = local.op.reduce_axis
    local.reorder(rg, ry, rx, coc, cw, cb)
    local.vectorize(cb)
    local.unroll(cw)
    local.unroll(coc)
    if cfg["unroll_kw"].val:
        local.unroll(rx)
    return s
