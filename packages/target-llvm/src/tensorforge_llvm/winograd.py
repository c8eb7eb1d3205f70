"""Winograd F(2x2,3x3) / F(4x4,3x3) for the llvm target: the layout pass's choice of direct
or Winograd per convolution, the graph rewrite, and the schedule template.

Layout: NCHW[x]c, the layout of the rest of the CNN: the input transform is vectorized over
the x channels of a block, the GEMM over the y output channels of a weight panel, and the
output transform writes NCHW[y]c vectors with the epilogue (bias, BN scale/shift, relu,
residual add) fused, so no layout transform is added around a Winograd convolution.

The choice (``-winograd=`` target option, or ``TENSORFORGE_WINOGRAD``): ``off`` (direct
everywhere), ``2`` or ``4`` (that tile wherever it applies), ``auto`` (the default,
:func:`default_tile`: the rule measured on ResNet-18's 3x3 layers, see docs/performance.md).
Applies to 3x3, stride 1, dilation 1, groups 1 convolutions with constant weights.
"""

from __future__ import annotations

import os
from typing import Any

from tensorforge.te.tensor import ComputeOp, Tensor

from .strategies import (
    _cfg,
    _ext,
    _find,
    _lanes,
    _parallel,
    _pick_tile,
    _tile_candidates,
    register_file,
)

__all__ = ["choose_tile", "default_tile", "schedule_conv2d_winograd_nchwc", "winograd_rule"]


def default_tile(c: int, o: int, oh: int, ow: int, n: int = 1, cpu: str = "",
                 direct_rows: bool = False) -> int:
    """The measured default (0: direct), per CPU family (see docs/performance.md,
    "Winograd"); direct for fewer than 16 input or output channels (the transforms cost what
    the GEMM saves) on all.

    - AMD Zen (and an unknown CPU), from ResNet-18's 3x3 layers and small shapes: F(4,3)
      where it has at least 4 tiles; else F(2,3) where that has at least 4 tiles (the
      transformed weights, 16/9 or 36/9 the size of the originals, are streamed once per
      call: with fewer tiles the call is bound by them).
    - Intel (AVX-512 Xeons): F(4,3) from 36 tiles (28x28 and up), else F(2,3) from 16 tiles
      (7x7 and up), else direct: measured on issue 15's Xeon, F(4,3) at 14x14 and 7x7 ran
      1.2x F(2,3)'s time (its 36/9 weights per few tiles stream from memory). With
      `direct_rows` (the direct form's row tile and weight prefetch, `-conv-tile=auto`),
      F(2,3) from 17 tiles: on ResNet-50's 512-channel 7x7 layers (16 tiles) direct ran
      5.4 ms for two layers in the model, F(2,3) 6.8 (its 16/9-size weights stream from
      memory); at 14x14 (49 tiles) F(2,3) stays ahead (7.1 vs 8.3 ms for five)."""
    if c < 16 or o < 16:
        return 0
    intel = bool(cpu) and not cpu.startswith(("znver", "generic"))
    need = {4: 36, 2: 17 if direct_rows else 16} if intel else {4: 4, 2: 4}
    for m in (4, 2):
        th, tw = -(-oh // m), -(-ow // m)
        if n * th * tw >= need[m]:
            return m
    return 0


def choose_tile(policy: str, c: int, o: int, oh: int, ow: int, n: int = 1,
                cpu: str = "", direct_rows: bool = False) -> int:
    """Tile size m (2 or 4) or 0 (direct) for one convolution under `policy`."""
    policy = (policy or "auto").lower()
    if policy in ("off", "0", "direct", "none"):
        return 0
    if policy in ("2", "4"):
        return int(policy)
    return default_tile(c, o, oh, ow, n, cpu, direct_rows)


def _policy(target: Any) -> str:
    env = os.environ.get("TENSORFORGE_WINOGRAD")
    if env:
        from tensorforge.errors import TargetError

        from .plugin import WINOGRAD_CHOICES

        if env.lower() not in (*WINOGRAD_CHOICES, "0", "direct", "none"):
            raise TargetError(f"TENSORFORGE_WINOGRAD={env!r} is not a Winograd policy; use "
                              f"one of {', '.join(WINOGRAD_CHOICES)} (or unset it).")
        return env
    opts = getattr(target, "options", {}) or {}
    return str(opts.get("winograd", "auto") or "auto")


def winograd_rule(target: Any = None, policy: str | None = None) -> Any:
    """The `winograd` callback of `convert_layout_nchwc` for `target` (or an explicit policy)."""
    pol = policy if policy is not None else _policy(target)
    opts = getattr(target, "options", {}) or {}
    cpu = "" if opts.get("mtriple") and "x86_64" not in str(opts.get("mtriple")) else str(
        opts.get("mcpu", "") or "")
    rows = str(opts.get("conv-tile", "auto") or "auto") == "auto"

    def rule(node: Any, x_shape: Any, w_shape: Any, attrs: dict[str, Any], ib: int, ob: int,
             lanes: int) -> Any:
        o, cg, kh, kw = w_shape
        if (kh, kw) != (3, 3) or tuple(attrs["strides"]) != (1, 1) or tuple(
                attrs["dilations"]) != (1, 1) or node.attrs.get("groups", 1) != 1:
            return None
        pt, pl, pb, pr = attrs["pads"]
        oh, ow = x_shape[2] + pt + pb - 2, x_shape[3] + pl + pr - 2
        if oh < 1 or ow < 1:
            return None
        m = choose_tile(pol, cg, o, oh, ow, x_shape[0], cpu, rows)
        if not m:
            return None
        return lambda g, n, xb, ib_, ob_: _emit_winograd(g, n, xb, ob_, m, attrs["pads"])

    return rule


def _emit_winograd(g: Any, n: Any, xb: Any, ob: int, m: int, pads: Any) -> Any:
    from tensorforge.graph.passes.subpixel import _emit
    from tensorforge.ops.winograd import winograd_weight_transform

    w = n.inputs[1]
    u = g.add_const(f"{w.name}_winograd{m}", winograd_weight_transform(w.const, m, ob))
    u.origin = ("winograd_weight_transform", {"m": m, "ob": ob}, w)  # redone at load
    return _emit(g, "conv2d_winograd_nchwc", [xb, u, *n.inputs[2:]],
                 {"m": m, "pads": tuple(pads)}, n.name)


# the schedule ------------------------------------------------------------------------------

def _stage(s: Any, tag: str) -> Any:
    return _find(s, tag)


def schedule_conv2d_winograd_nchwc(outs: list[Tensor] | Tensor, target: Any = None,
                                   cfg: Any = None) -> Any:
    """Input transform (per tile and channel block, positions unrolled, channels vectorized),
    batched GEMM register-tiled ``tile_p`` tiles x y channels, output transform + epilogue in
    the output stage (tile positions unrolled)."""
    from tensorforge import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    out = s[outs[0]]
    wino = _stage(s, "conv2d_winograd_nchwc")
    vst, gst = _stage(s, "winograd_input"), _stage(s, "winograd_gemm")
    lanes, par = _lanes(target), _parallel(target)
    a, _, oo, ntiles, ob = (_ext(x) for x in gst.op.axis)
    m = a - 2
    vecs = max(1, ob // lanes)
    tp = _pick_tile(ntiles, max(1, min(16, (register_file(target) - 4) // vecs)))
    cfg.define_split("tile_p", ntiles, 2, policy="candidate",
                     candidates=_tile_candidates(ntiles, tp, 16), default=(-1, tp))
    cfg.define_knob("m", [m], default=m)
    red = gst.op.reduce_axis
    cfg.add_flop(2.0 * a * a * oo * ntiles * ob * _ext(red[0]) * _ext(red[1]))

    rows, orows = _stage(s, "wino_in_rows"), _stage(s, "wino_out_rows")
    keep = {out.op, wino.op, vst.op, gst.op, rows.op, orows.op}
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op not in keep and not st.op.reduce_axis:
            if "pad" in str(getattr(st.op, "tag", "")):
                axes = list(st.op.axis)
                st.vectorize(axes[-1])
                outer = st.fuse(*axes[:3])
                if par:
                    st.parallel(outer)
            else:
                st.compute_inline()
    # input transform: per (channel block, tile), the a x a positions unrolled (rows, then
    # columns from the row buffer in registers), channels vectorized
    e, u, cb, p, ci = vst.op.axis
    vst.reorder(cb, p, e, u, ci)
    vst.unroll(e)
    vst.unroll(u)
    vst.vectorize(ci)
    outer = vst.fuse(cb, p)
    if par:
        vst.parallel(outer)
    rows.compute_at(vst, outer)
    _, _, re_, rj, rci_ = rows.op.axis
    rows.unroll(re_)
    rows.unroll(rj)
    rows.vectorize(rci_)
    # GEMM: a tile_p x y accumulator tile over the whole C
    local = s[s.cache_write(gst.op.output(0), "local")]
    e, u, o, p, k = gst.op.axis
    po, pi = cfg["tile_p"].apply(s, gst, p)
    gst.reorder(e, u, o, po, pi, k)
    gst.vectorize(k)
    outer = gst.fuse(e, u, o, po)
    if par:
        gst.parallel(outer)
    local.compute_at(gst, outer)
    lp, lk = local.op.axis[3], local.op.axis[4]
    rcb, rci = local.op.reduce_axis
    local.reorder(rcb, rci, lp, lk)
    local.unroll(lp)
    local.vectorize(lk)
    # output transform + epilogue: per tile, A^T M rows into registers, then the m x m
    # outputs (columns) with the epilogue, y channels vectorized
    if wino.op is not out.op:
        wino.compute_inline()
    b, o, y, x, k = out.op.axis
    yo, yi = out.split(y, factor=m)
    xo, xi = out.split(x, factor=m)
    out.reorder(b, o, yo, xo, yi, xi, k)
    out.unroll(yi)
    out.unroll(xi)
    out.vectorize(k)
    rows_ = out.fuse(b, o, yo)
    if par:
        out.parallel(rows_)
    orows.compute_at(out, xo)
    *_, oyi, oj, ok = orows.op.axis
    orows.unroll(oyi)
    orows.unroll(oj)
    orows.vectorize(ok)
    return s
