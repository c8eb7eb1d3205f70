"""Schedule templates of the llvm target (registered as strategies in `plugin.py`).

Each ``schedule_*(outs, target, cfg=None) -> Schedule`` takes the output tensors of one fused
group (the master op and its elementwise epilogue) and declares its knobs on ``cfg`` (an
``autotune.space`` ConfigSpace/ConfigEntity; a fresh FallbackConfig when None, whose defaults
are chosen from the shape, the target's float32 lanes and its register file). Knobs:

=====================  ==========================================================  ========
template               knobs                                                       default
=====================  ==========================================================  ========
conv2d_nchwc direct    tile_ow (pixels per register tile), tile_oh (rows per tile), shape
                       reduce_order, unroll_kw, block (ic_bn/oc_bn, fixed by the
                       layout pass);
                       1x1 convs also form (direct/gemm), gemm_tile_ow/_oh,        rule
                       tile_oc, oc_outer, gemm_unroll_ic (the GEMM form,
                       conv1x1.py)
depthwise NCHWc        tile_ow, unroll_taps, inline_pad                            shape
dense_packed           tile_m (rows), tile_panels (panels per tile), tile_k,      shape
                       block (fixed by the layout pass)
winograd NCHWc         tile_p (tiles per register block), m (2 or 4, fixed by the  shape
                       layout pass)
=====================  ==========================================================  ========

The register tile (``cache_write(..., "local")`` computed at the output's tile) holds
``tile_ow x oc_bn`` accumulators; the epilogue (bias, BN scale/shift, relu/clip, residual add)
is inlined into the output stage, which reads the finished tile while it is in registers.
The outer data-parallel loops are fused into one loop, parallel over the OpenMP runtime when
the target has more than one thread.
"""

from __future__ import annotations

from typing import Any

from tensorforge.te.tensor import ComputeOp, Tensor

from .conv1x1 import define_gemm_knobs, is_pointwise, schedule_conv1x1_gemm

__all__ = ["KNOBS", "register_file", "schedule_conv2d_nchwc", "schedule_dense_packed",
           "schedule_depthwise_nchwc"]

KNOBS = {
    "conv2d_nchwc/direct": ("tile_ow", "tile_oh", "reduce_order", "unroll_kw", "block",
                            "prefetch",
                            # 1x1 convs only (conv1x1.py): the GEMM form and its tile
                            "form", "gemm_tile_ow", "gemm_tile_oh", "tile_oc", "oc_outer",
                            "gemm_unroll_ic"),
    "depthwise_conv2d_nchwc/direct": ("tile_ow", "unroll_taps", "inline_pad"),
    "dense_packed/packed": ("tile_m", "tile_k", "tile_panels", "block"),
    "conv2d_winograd_nchwc/winograd": ("tile_p", "m"),
    "attention/blocked": ("tile_q",),
    "qconv2d_nchwc/dot4": ("tile_ow", "unroll_kw", "tile_oc"),
    "channel_shuffle/lanes": ("unroll_blocks",),
}


DENSE_PARALLEL_MIN_MACS = 1 << 20  # smaller dense products run serially (see below)


def _cfg(cfg: Any, target: Any) -> Any:
    if cfg is None:
        from tensorforge.autotune.space import FallbackConfig

        cfg = FallbackConfig(target)
    return cfg


def _lanes(target: Any) -> int:
    from tensorforge.ops.schedule_generic import vector_lanes

    return vector_lanes(target, "float32")


def register_file(target: Any) -> int:
    """Vector registers of the target: 32 with AVX-512 or on AArch64, else 16."""
    opts = getattr(target, "options", {}) or {}
    if "aarch64" in str(opts.get("mtriple", "")) or _lanes(target) >= 16:
        return 32
    return 16


def _parallel(target: Any) -> bool:
    opts = getattr(target, "options", {}) or {}
    return int(opts.get("num-threads", 1) or 0) != 1


def _ext(iv: Any) -> int:
    return int(iv.dom.extent.value)


def _find(s: Any, tag: str) -> Any:
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and tag in str(getattr(st.op, "tag", "")):
            return st
    raise ValueError(f"no stage tagged {tag!r}")


def _inline_rest(s: Any, keep: set[Any]) -> list[Any]:
    """Inline every injective stage not in `keep`; return the padding stages (kept)."""
    pads = []
    for st in s.stages:
        if not isinstance(st.op, ComputeOp) or st.op in keep or st.op.reduce_axis:
            continue
        if "pad" in str(getattr(st.op, "tag", "")):
            pads.append(st)
        else:
            st.compute_inline()
    return pads


def _root_parallel(st: Any, par: bool) -> None:
    """A stage at root (padding): all but the last axis fused (parallel), last vectorized."""
    axes = list(st.op.axis)
    if len(axes) > 1 and _ext(axes[-1]) > 1:
        st.vectorize(axes[-1])
    outer = st.fuse(*axes[:-2]) if len(axes) > 3 else axes[0]
    if par:
        st.parallel(outer)


def _pick_tile(extent: int, max_tile: int) -> int:
    """The largest divisor of `extent` up to `max_tile` if it is at least half of it, else
    `max_tile` (a guarded last tile)."""
    if extent <= max_tile:
        return extent
    best = max(d for d in range(1, max_tile + 1) if extent % d == 0)
    return best if 2 * best >= max_tile else max_tile


def _tile_candidates(extent: int, default: int, cap: int = 32) -> list[tuple[int, int]]:
    sizes = {d for d in range(1, min(extent, cap) + 1) if extent % d == 0} | {default}
    return [(-(-extent // f), f) for f in sorted(sizes)]


def default_tile_ow(ow: int, oc_bn: int, lanes: int, regs: int) -> int:
    """Output pixels per register tile: `tile_ow * oc_bn / lanes` accumulators, about half the
    register file (the rest hold the weight vectors and the broadcast input)."""
    vecs = max(1, oc_bn // lanes)
    return _pick_tile(ow, max(1, min(16, (regs // 2) // vecs)))


def default_conv_tile(oh: int, ow: int, kw: int, ic_bn: int, oc_bn: int, lanes: int,
                      regs: int, policy: str = "auto") -> tuple[int, int]:
    """(tile_oh, tile_ow) of the direct form's register tile (`tile_oh x tile_ow` pixels x one
    output block) under the `-conv-tile=` policy (`auto`: this rule; `narrow`: one row, half
    the registers, `default_tile_ow`). Where a block is 2+ vectors and the kernel at most 3
    wide, the tile fills the register file but the block's weight vectors, the broadcast and
    one spare (14 pixels x 2 vectors = 28 accumulators on AVX-512), spanning 2+ rows where a row is
    shorter (7-pixel rows: 2 rows, the last row tile guarded). Measured on this Xeon
    (docs/performance.md, "Direct convolutions: a register tile over two rows"), ResNet-50's
    3x3 stride-2 and 7x7-row layers in NCHW32c: 7-8 pixels x 1 row (the `narrow` tile,
    14-16 accumulators) 105-122 GFLOP/s, 14 x 1 or 7 x 2 126-146; 7 x 2 blocks (33 registers:
    a spill) 116-121. Else the narrow tile: 1-vector blocks (more pixels only add broadcast
    loads), wider kernels (ResNet's 7x7 stem: 123 -> 75 with 14 pixels) and input blocks of
    fewer than 8 channels (MobileNetV2's 3-channel stem: 85 -> 74)."""
    vecs = max(1, oc_bn // lanes)
    narrow = (1, default_tile_ow(ow, oc_bn, lanes, regs))
    if policy == "narrow" or vecs < 2 or kw > 3 or ic_bn < 8:
        return narrow
    pixels = max(1, (regs - vecs - 2) // vecs)
    tw = _pick_tile(ow, pixels)
    th = max(1, min(oh, pixels // tw)) if tw == ow else 1
    return (th, tw) if th * tw > narrow[0] * narrow[1] else narrow


def weight_panel(kernel: Tensor) -> int:
    """Elements of one output block's weights (OIHW[x]i[y]o: contiguous)."""
    return _prod_shape(kernel.shape) // int(kernel.shape[0].value)


def _prod_shape(shape: Any) -> int:
    p = 1
    for e in shape:
        p *= int(e.value)
    return p


#: weights above this many bytes (this Xeon's L2 per core) are prefetched (`prefetch_default`)
PREFETCH_MIN_BYTES = 2 << 20


def prefetch_default(kernel: Tensor, target: Any) -> bool:
    """Prefetch the next output block's weight panel (`pragma_prefetch`: codegen's
    `llvm.prefetch` into L2, one panel ahead of every weight vector the tile loads) where the
    weights exceed `PREFETCH_MIN_BYTES`, unless `-conv-prefetch=off`. In a model each layer's
    weights come from memory (a run streams all of them, ResNet-50's 100 MB, through a 2 MB
    L2), and the first pass over a panel waits on them: isolated with a 64 MB cache flush
    between calls, ResNet-50's 4-9 MB layers ran 83-91 GFLOP/s without, 98-107 with; warm
    (weights in L3) 0.94-1.0x. Measured in ResNet-50 (docs/performance.md): its 1 MB 1x1s
    gained nothing and the 3x3 Winograd layers after them lost 10%, hence the L2 bound."""
    opts = getattr(target, "options", {}) or {}
    if str(opts.get("conv-prefetch", "auto") or "auto") == "off":
        return False
    return 4 * _prod_shape(kernel.shape) > PREFETCH_MIN_BYTES


_REDUCE_ORDERS = [(0, 1, 2, 3), (1, 2, 0, 3), (0, 3, 1, 2)]


def default_reduce_order(ic_bn: int, policy: str = "auto") -> tuple[int, ...]:
    """The reduction loops' order (input block, kernel row, kernel column, channel in the
    block): the block's channels innermost, except for input blocks of fewer than 8 channels
    under `-conv-tile=auto` (a CNN's 3-channel stem), where they go outside the taps so the
    innermost loop is the unrolled kernel row, not a 3-iteration loop around each tap.
    Measured (docs/performance.md): ResNet-50's 7x7 stem 110 -> 159 GFLOP/s warm, 96 -> 140
    with the input from memory; MobileNetV2's 3x3 stem 64-70 -> 83-85 (NCHW32c)."""
    return _REDUCE_ORDERS[2] if ic_bn < 8 and policy == "auto" else _REDUCE_ORDERS[0]


def single_output_schedule(outs: list[Tensor] | Tensor, target: Any, cfg: Any, who: str
                           ) -> tuple[Any, Any, Any]:
    """(schedule, its one output stage, config) for a one-output group; ``who`` names the
    schedule in the error."""
    from tensorforge import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    if len(outs) != 1:
        raise ValueError(f"{who}: one output expected")
    s = te.create_schedule([o.op for o in outs])
    return s, s[outs[0]], _cfg(cfg, target)


def schedule_conv2d_nchwc(outs: list[Tensor] | Tensor, target: Any = None,
                          cfg: Any = None) -> Any:
    """Direct NCHW[x]c convolution, register-tiled along output width and channels."""
    s, out, cfg = single_output_schedule(outs, target, cfg, "schedule_conv2d_nchwc")
    conv = _find(s, "conv2d_nchwc")
    lanes, par = _lanes(target), _parallel(target)
    n, oc, oh, ow, ob = out.op.axis
    kernel = conv.op.input_tensors[1]
    ic_bn, oc_bn = int(kernel.shape[4].value), int(kernel.shape[5].value)
    kw = int(kernel.shape[3].value)
    owx, ohx = _ext(ow), _ext(oh)
    policy = str((getattr(target, "options", {}) or {}).get("conv-tile", "auto") or "auto")
    if is_pointwise(conv.op):  # 1x1: the forms and tiles of conv1x1.py's measured rule
        policy = "narrow"
    th, tile = default_conv_tile(ohx, owx, kw, ic_bn, oc_bn, lanes, register_file(target),
                                 policy)
    cfg.define_split("tile_ow", owx, 2, policy="candidate",
                     candidates=_tile_candidates(owx, tile), default=(-1, tile))
    cfg.define_split("tile_oh", ohx, 2, policy="candidate",
                     candidates=_tile_candidates(ohx, th, 4), default=(-1, th))
    cfg.define_reorder("reduce_order", 4, policy="candidate", candidates=_REDUCE_ORDERS,
                       default=default_reduce_order(ic_bn, policy))
    cfg.define_knob("unroll_kw", [False, True], default=kw <= 3 or ic_bn < 8)
    cfg.define_knob("block", [(ic_bn, oc_bn)], default=(ic_bn, oc_bn))
    cfg.define_knob("prefetch", [False, True], default=prefetch_default(kernel, target))
    red = conv.op.reduce_axis
    cfg.add_flop(2.0 * _prod(conv.op.axis) * _prod(red))
    if is_pointwise(conv.op):  # 1x1: the GEMM form (conv1x1.py) where the rule or tuner says
        define_gemm_knobs(cfg, out, conv, target)
        if cfg["form"].val == "gemm":
            return schedule_conv1x1_gemm(s, out, conv, cfg, target)

    for st in _inline_rest(s, {out.op, conv.op}):
        _root_parallel(st, par)  # the padding: one pass over the input
    local = s[s.cache_write(conv.op.output(0), "local")]
    if conv.op is not out.op:
        conv.compute_inline()
    owo, owi = cfg["tile_ow"].apply(s, out, ow)
    _, cw, cb = local.op.axis[2:]
    if cfg["tile_oh"].size[1] > 1:  # a tile over rows: `tile_oh` rows of `tile_ow` pixels
        oho, ohi = cfg["tile_oh"].apply(s, out, oh)
        out.reorder(n, oc, oho, owo, ohi, owi, ob)
        out.unroll(ohi)
        out.unroll(owi)
        rows = out.fuse(n, oc, oho)
        inner = [local.op.axis[2], cw, cb]
    else:
        out.reorder(n, oc, oh, owo, owi, ob)
        rows = out.fuse(n, oc, oh)
        inner = [cw, cb]
    out.vectorize(ob)
    if par:
        out.parallel(rows)
    local.compute_at(out, owo)
    ico, ry, rx, ici = cfg["reduce_order"].apply(s, local, list(local.op.reduce_axis))
    local.reorder(ico, ry, rx, ici, *inner)
    local.vectorize(cb)
    for ax in inner[:-1]:
        local.unroll(ax)
    if cfg["prefetch"].val:  # the next output block's weight panel, while this one runs
        local.pragma(ici, "prefetch", weight_panel(kernel))
    if cfg["unroll_kw"].val:
        local.unroll(local.op.reduce_axis[2])
    return s


def _prod(axes: Any) -> int:
    p = 1
    for a in axes:
        p *= _ext(a)
    return p


def schedule_depthwise_nchwc(outs: list[Tensor] | Tensor, target: Any = None,
                             cfg: Any = None) -> Any:
    """Depthwise NCHW[x]c: a tile of `tile_ow` pixels x one channel block, the taps unrolled;
    every step is an elementwise vector FMA (input vector x weight vector).

    The zero padding is read inline by default (`inline_pad`: each tap's load guarded by its
    row and column test): a depthwise conv does 9 or 25 FMAs per input vector, so the padded
    copy a dense conv affords (one more pass over the input, written and read back; 5 MB for
    MobileNetV2's 112x112x96 layer, beyond L2) cost as much as the convolution itself:
    that layer 0.62 -> 0.28 ms, 56x56x144 stride 2 0.24 -> 0.09 ms (docs/performance.md).
    `-depthwise-pad=copy` makes the copy the knob's default."""
    from tensorforge import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    out = s[outs[0]]
    conv = _find(s, "depthwise_conv2d_nchwc")
    lanes, par = _lanes(target), _parallel(target)
    n, c, oh, ow, ob = out.op.axis
    owx = _ext(ow)
    tile = default_tile_ow(owx, _ext(ob), lanes, register_file(target))
    cfg.define_split("tile_ow", owx, 2, policy="candidate",
                     candidates=_tile_candidates(owx, tile), default=(-1, tile))
    cfg.define_knob("unroll_taps", [False, True], default=True)
    cfg.define_knob("inline_pad", [True, False], default=_option(target, "depthwise-pad",
                                                                 "inline") == "inline")
    cfg.add_flop(2.0 * _prod(conv.op.axis) * _prod(conv.op.reduce_axis))
    for st in _inline_rest(s, {out.op, conv.op}):
        if cfg["inline_pad"].val:
            st.compute_inline()
        else:
            _root_parallel(st, par)
    local = s[s.cache_write(conv.op.output(0), "local")]
    if conv.op is not out.op:
        conv.compute_inline()
    owo, owi = cfg["tile_ow"].apply(s, out, ow)
    out.reorder(n, c, oh, owo, owi, ob)
    out.vectorize(ob)
    rows = out.fuse(n, c, oh)
    if par:
        out.parallel(rows)
    local.compute_at(out, owo)
    _, _, _, cw, cb = local.op.axis
    ry, rx = local.op.reduce_axis
    local.reorder(ry, rx, cw, cb)
    local.vectorize(cb)
    local.unroll(cw)
    if cfg["unroll_taps"].val:
        local.unroll(rx)
    return s


def _option(target: Any, name: str, default: str) -> str:
    """The string target option `name` (its default when the target has none)."""
    return str((getattr(target, "options", {}) or {}).get(name, default) or default)


#: the row count dense tiles are chosen for when the rows are a symbolic size
SYMBOLIC_ROWS = 128


def schedule_dense_packed(outs: list[Tensor] | Tensor, target: Any = None,
                          cfg: Any = None) -> Any:
    """Dense with weights packed NK[y]n at compile time: a `tile_m x y` accumulator tile over
    the whole K (split by `tile_k`, unrolled); panels of y columns are the outer (parallel)
    loop so one panel stays in cache while the rows stream past it."""
    from tensorforge import te

    outs = [outs] if isinstance(outs, Tensor) else list(outs)
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    out = s[outs[0]]
    mm = _find(s, "dense_packed")
    if len(outs) > 1 or tuple(outs[0].shape) != tuple(mm.op.output(0).shape):
        # a multi-output epilogue (an LSTM cell): the product at root, in the kernel; the
        # injective rest inlined into the outputs, each one vectorized loop
        _schedule_rest(s, outs, mm, target)
        out = mm
    par = _parallel(target)
    weight = mm.op.input_tensors[1]
    bn = int(weight.shape[2].value)
    lanes = _lanes(target)
    # rows may be a symbolic size (compiler.symbolic): tiles are chosen for SYMBOLIC_ROWS and
    # the last row tile is guarded (loop partition peels it)
    m_sym = not hasattr(out.op.axis[0].dom.extent, "value")
    m_ext, k_ext = SYMBOLIC_ROWS if m_sym else _ext(out.op.axis[0]), _ext(mm.op.reduce_axis[0])
    vecs = max(1, bn // lanes)
    # the weight's panels (the last zero-padded when N % bn; a wide one padded to a panel
    # count that tiles, `layout_nchwc.RAGGED_PANEL_ROUND`): a tile of panels never reads
    # past them, and the columns past N are computed but not stored
    panels = int(weight.shape[0].value)
    mr, nt = _dense_tile(m_ext, panels, vecs, register_file(target))
    # the row tiles: divisors, the default, and beyond 16 rows every count of
    # DENSE_TILE_ROWS (a short last tile is peeled, below)
    rows = _tile_candidates(m_ext, mr, 16)
    if m_ext > 16:
        sizes = {f for _, f in rows} | set(range(DENSE_TILE_ROWS[0], DENSE_TILE_ROWS[1] + 1))
        rows = [(-(-m_ext // f), f) for f in sorted(sizes)]
    cfg.define_split("tile_m", m_ext, 2, policy="candidate", candidates=rows,
                     default=(-1, mr))
    ku = max(d for d in (4, 2, 1) if k_ext % d == 0)
    cfg.define_split("tile_k", k_ext, 2, policy="candidate",
                     candidates=[(-1, 1), (-1, 2), (-1, 4), (-1, 8)], default=(-1, ku))
    # few rows (a GEMV): several panels per tile, so the FMA chains are independent
    if cfg["tile_m"].size[1] != mr:
        nt = _dense_panels(panels, cfg["tile_m"].size[1], vecs, register_file(target) // 2)
    cfg.define_split("tile_panels", panels, 2, policy="candidate",
                     candidates=_tile_candidates(panels, nt, 8), default=(-1, nt))
    cfg.define_knob("block", [bn], default=bn)
    cfg.add_flop(2.0 * m_ext * _ext(out.op.axis[1]) * k_ext)
    if m_ext * _ext(out.op.axis[1]) * k_ext < DENSE_PARALLEL_MIN_MACS:
        # a GEMV (an LSTM step: 160K MACs over its 640 KB weights, 6-7 us) stays serial:
        # its weights stay in one core's L2 across steps, and 68 per-step regions would each
        # wait for a worker the OS may have descheduled (LSTM LM at 2 threads under load:
        # 120-150 ms with the regions, 8-16 ms without)
        par = False
    if out is not mm:
        _inline_rest(s, {out.op, mm.op})
    local = s[s.cache_write(mm.op.output(0), "local")]
    if mm.op is not out.op:
        mm.compute_inline()
    i, j = out.op.axis
    mo, mi = cfg["tile_m"].apply(s, out, i)
    no, ni = out.split(j, factor=bn)
    noo, noi = cfg["tile_panels"].apply(s, out, no)
    out.reorder(noo, mo, mi, noi, ni)
    out.vectorize(ni)
    if m_sym or m_ext % cfg["tile_m"].size[1] or _ext(out.op.axis[1]) % bn:
        # a guarded last row tile or a zero-padded last panel: the row tiles stay a loop of
        # their own, so loop partition peels the tail and the main tiles run without a test
        # (fused with the panels, the guard would sit in every tile: GPT-2's LM head, 50257
        # columns, ran 6x slower)
        outer = noo
        local.compute_at(out, mo)
    else:
        outer = out.fuse(noo, mo)
        local.compute_at(out, outer)
    if par:
        out.parallel(outer)
    mc, nc = local.op.axis
    nco, nci = local.split(nc, factor=bn)
    ko, ki = cfg["tile_k"].apply(s, local, local.op.reduce_axis[0])
    local.reorder(ko, ki, mc, nco, nci)
    local.vectorize(nci)
    local.unroll(mc)
    local.unroll(nco)
    local.unroll(ki)
    return s


def _dense_panels(panels: int, rows: int, vecs: int, acc: int) -> int:
    """Panels per register tile: a divisor of `panels` (no guard) up to 8 that fills about
    `acc` accumulators with `rows` rows of `vecs` vectors each."""
    want = max(1, acc // (rows * vecs))
    return max(d for d in range(1, min(panels, want, 8) + 1) if panels % d == 0)


def _dense_tile(m: int, panels: int, vecs: int, regs: int) -> tuple[int, int]:
    """(rows, panels) of the register tile: the most useful FMAs per padded one, with about
    `regs // 2` accumulators and all of them, the weight vectors and a broadcast in
    registers. A guarded last row tile computes padding rows and keeps `if likely` tests in
    the reduction loop (35 rows in tiles of 16: 48 computed, a branch per FMA), so divisors
    win: the LSTM LM decoder (35 x 625 panels of 16) takes 5 rows x 5 panels. Beyond 16 rows
    `_dense_row_tile`; where none of its tiles fits the registers, at least 4 rows, so a
    weight panel is reused from registers across rows (ViT's 197 rows, a prime, took 1 row
    x 8 panels: the panels streamed from memory once per row, 7.8 GFLOP/s)."""
    if m > 16:
        best = _best_dense_tile(m, panels, vecs, regs, DENSE_TILE_ROWS, regs * 3 // 4, 1.0)
        if best is not None:
            return best
    rows = (4 if m > 16 else 1, min(m, 16))
    return _best_dense_tile(m, panels, vecs, regs, rows, regs // 2, 0.8) or (1, 1)


#: rows of a dense register tile once there are more than 16 rows: a weight vector reused
#: from a register by 5-8 rows, a broadcast by the tile's panel vectors, about 3/4 of the
#: register file in accumulators. The row tiles are a loop of their own
#: (`schedule_dense_packed`), so loop partition peels a short last one: rows need not
#: divide the row count. Measured on the AVX-512 Xeon, 1 thread, SCHED_FIFO, isolated
#: kernels (docs/performance.md, "Transformers"): 128 rows x 768 -> 768/2304/3072 and
#: 3072 -> 768 in panels of 2 vectors, 6 rows x 2 panels (24 accumulators) 129-137 GFLOP/s
#: against 4 x 3 (the rule before: row divisors first, 16 accumulators) 118-128, 12-14 rows
#: x 1 panel 119-125, 3 x 4 91-93; GPT-2's LM head (50257 columns, panels of 1 vector)
#: 8 x 3 131, 6 x 4 129, 14 x 2 124 against 4 x 6 116.
DENSE_TILE_ROWS = (5, 8)


def _best_dense_tile(m: int, panels: int, vecs: int, regs: int, rows: tuple[int, int],
                     want: int, guard: float) -> tuple[int, int] | None:
    """The (rows, panels) tile with rows in `rows` (inclusive) and panels a divisor of
    `panels` up to 8 whose accumulators, reused operand (the rows' broadcasts or the panel
    vectors) and a broadcast fit `regs`: the most useful accumulators (up to `want`) per
    computed row (a row count the tile does not divide weighs `guard`), then the fewest
    loads per FMA. None when none fits (a 1 x 1 tile always does when `rows` starts at 1)."""
    best, score = None, (-1.0, 0.0)
    for t in range(min(rows[0], m), min(rows[1], m) + 1):
        padded = -(-m // t) * t
        for nt in (d for d in range(1, min(panels, 8) + 1) if panels % d == 0):
            acc = t * vecs * nt
            if acc + min(t, vecs * nt) + 1 > regs and (t, nt) != (1, 1):
                continue
            useful = min(acc, want) / want * m / padded * (1.0 if m % t == 0 else guard)
            sc = (round(useful, 6), acc / (t + vecs * nt))
            if sc > score:
                best, score = (t, nt), sc
    return best


def _schedule_rest(s: Any, outs: list[Tensor], mm: Any, target: Any) -> None:
    """Stages of a group around a materialized master `mm`: injective intermediates inlined,
    each output one loop vectorized over its last axis (serial: a cell's few hundred
    values are not worth a parallel region)."""
    out_ops = {o.op for o in outs}
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op not in out_ops and st.op is not mm.op \
                and not st.op.reduce_axis:
            st.compute_inline()
    lanes = _lanes(target)
    for o in outs:
        st = s[o]
        axes = list(st.op.axis)
        inner = axes[-1]
        if len(axes) > 1:
            st.fuse(*axes[:-1])
        if _ext(inner) >= lanes:
            _, vi = st.split(inner, factor=lanes)
            st.vectorize(vi)
