"""1x1 convolutions in NCHW[x]c as GEMMs (issue 15).

A 1x1 convolution of stride s is a matrix product: the output pixels (rows, read from the
input at stride s) x the input channels -> the output channels. The direct NCHW[x]c schedule
(`strategies.schedule_conv2d_nchwc`) holds a tile of `tile_ow` pixels x ONE output block:
with 16-channel blocks (one vector) every FMA reads its own broadcast input value (16
broadcasts + 1 weight vector per 16 FMAs), so the load ports, not the FMA units, set its
pace (~100-125 GFLOP/s on this AVX-512 Xeon). The GEMM form keeps `gemm_tile_ow` pixels x
`tile_oc` output blocks of accumulators: each input value is broadcast once and feeds
`tile_oc x vectors` FMAs, each weight vector feeds `gemm_tile_ow` FMAs, as in MLAS's
pointwise kernel (6 pixels x 4 filter blocks); 14 x 2 blocks of 16 measured 140-180.

The weights are the layout pass's OIHW[x]i[y]o packing, folded at compile time: for one
output block the (input channel, output lane) panel is one contiguous stream, so the
micro-kernel streams `tile_oc` panels in step. The input is read in its blocked layout (a
pixel's 16 channels are one cache line), strided for stride 2. The epilogue (bias, BN,
relu/clip/silu, residual add) is inlined into the output stage, which reads the finished
tile from registers, as in the direct form.

The default form: the `-conv1x1=` target option (`auto`: `prefer_gemm`, `direct`, `gemm`).
Knobs (tunable by `tforge tune`, beside `form` among those of `conv2d_nchwc/direct`):
`gemm_tile_ow` (pixels per tile), `gemm_tile_oh` (rows per tile where a tile is a whole
row: the 7x7 layers' 7-pixel rows; `-conv-tile=narrow` keeps one), `tile_oc` (output blocks
per tile), `oc_outer` (loop
order: the output blocks outside the pixels, so a weight panel stays in L2 while the pixels
stream past it; or inside, so the input tile stays in L1 while the weight panels stream),
`gemm_unroll_ic` (the input block's channels unrolled).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FLAT_MAX_BLOCKS", "FLAT_MIN_GAIN", "GEMM_ONE_BLOCK_MAX_OW", "GEMM_ONE_BLOCK_MAX_OW_16",
           "L2_REREAD_BYTES", "ROWS_MAX_LOADS_PER_FMA", "default_gemm_tile", "define_gemm_knobs",
           "flat_tiles", "gemm_tile_rows", "is_flat", "is_pointwise", "oc_outer_default",
           "pixel_extents", "prefer_flat", "prefer_gemm", "schedule_conv1x1_gemm"]

def is_pointwise(conv_op: Any) -> bool:
    """A 1x1 convolution without padding (stride any), groups 1: the GEMM form applies."""
    kernel = conv_op.input_tensors[1]
    kh, kw = (int(kernel.shape[i].value) for i in (2, 3))
    data = conv_op.input_tensors[0]
    # a padded input is a compute stage in front of the conv (its tag says so)
    padded = "pad" in str(getattr(data.op, "tag", ""))
    groups_one = int(data.shape[1].value) == int(kernel.shape[1].value)
    return kh == kw == 1 and not padded and groups_one


def default_gemm_tile(ow: int, oc_chunks: int, vecs: int, regs: int,
                      max_blocks: int = 4) -> tuple[int, int]:
    """(tile_ow, tile_oc): the most useful accumulators that fit with `tile_oc * vecs` weight
    vectors and a broadcast in `regs` registers; at most 4 output blocks (divisors of the
    block count) and at least as many pixels as blocks. A pixel tile that does not divide the
    row computes padding pixels and keeps a guard (counted 0.8, as in `_dense_tile`); ties
    go to fewer loads per FMA ((tile_oc * vecs + tile_ow) / accumulators). `max_blocks` 5
    over a flat pixel axis (`is_flat`: RegNetX-400MF's 25 blocks of 16 on 49 pixels, 5 x 5
    of the tail-partitioned pixel loop). Measured on
    ResNet-50's 1x1 convs (AVX-512, 32 registers): 14 pixels x 2 blocks (28 accumulators)
    140-165 GFLOP/s, 8 x 2 120-140, 4 x 4 105-135, 2 x 8 75; 7 x 4 (33 registers) spills."""
    best, score = (1, 1), (0.0, 0.0)
    for to in (d for d in range(1, min(oc_chunks, max_blocks) + 1) if oc_chunks % d == 0):
        for tw in range(min(to, ow), min(ow, 16) + 1):
            acc = tw * to * vecs
            if acc + to * vecs + 1 > regs:
                continue
            padded = -(-ow // tw) * tw
            useful = acc * ow / padded * (1.0 if ow % tw == 0 else 0.8)
            sc = (round(useful, 6), -(to * vecs + tw) / acc)
            if sc > score:
                best, score = (tw, to), sc
    return best


#: the most broadcast + weight loads per FMA a row-spanning tile may take (the tiles the
#: rule picks without rows: 0.4-0.63; 28 pixels x one 16-lane vector, 1.04, is load-bound)
ROWS_MAX_LOADS_PER_FMA = 0.65


def gemm_tile_rows(oh: int, ow: int, tile_ow: int, tile_oc: int, vecs: int, regs: int,
                   policy: str = "auto") -> int:
    """Rows per GEMM-form tile: where the tile is a whole row (`tile_ow == ow`), as many rows
    as the register file holds (accumulators + `tile_oc * vecs` weights + a broadcast), at
    most `ROWS_MAX_LOADS_PER_FMA` loads per FMA; the last row tile may be guarded. 1 under
    `-conv-tile=narrow`. Measured (docs/performance.md, "A register tile over rows"): the
    7x7-pixel 1x1 convs of ResNet-50 / ResNeXt-50 / MobileNetV2 in NCHW32c, 7 pixels x 1
    block (14 accumulators) vs 2 rows x 7 (28)."""
    if policy == "narrow" or tile_ow != ow:
        return 1
    best = 1
    for th in range(2, oh + 1):
        acc = th * tile_ow * tile_oc * vecs
        if acc + tile_oc * vecs + 1 > regs or (
                tile_oc * vecs + th * tile_ow) / acc > ROWS_MAX_LOADS_PER_FMA:
            break
        best = th
    return best


def _policy(target: Any, name: str) -> str:
    return str((getattr(target, "options", {}) or {}).get(name, "auto") or "auto")


def prefer_gemm(ow: int, oc_chunks: int, oc_bn: int, lanes: int, regs: int,
                oh: int = 1, rows_policy: str = "narrow", max_blocks: int = 4) -> bool:
    """The measured rule (docs/performance.md, "1x1 convolutions as GEMMs"): the GEMM form
    when its tile holds more accumulators than the direct form's (`default_tile_ow` pixels
    x one output block), and, when it is one output block wide, only on rows of at most
    `GEMM_ONE_BLOCK_MAX_OW` pixels. On this Xeon (in-model, ResNet-50/MobileNetV2/RegNet):
    two or more 1-vector blocks per tile 95-143 GFLOP/s vs 67-121 direct; one 2-vector block
    x 14 pixels on 28- and 14-pixel rows 106-134 vs 99-128, but on 56-pixel rows 84-112 vs
    106-123; where the tiles tie (7-pixel rows) the forms measured the same. With 16
    registers (AVX2) one block of 2 vectors (6 pixels GEMM, guarded, vs 4 or fewer direct)
    only up to `GEMM_ONE_BLOCK_MAX_OW_16` pixels: on an AMD EPYC, ResNeXt-50's 28-pixel
    rows 29-34 GFLOP/s GEMM vs 49-63 direct (4 pixels); on 14- and 7-pixel rows, where the
    direct tile is 2 pixels or guarded, GEMM 7.1 vs 12.4 ms (1024->1024, 14x14) and 4.6 vs
    5.7 ms (7x7) in the model. One-vector blocks keep the 28: ResNeXt-50's 512->256 28x28
    in 8-channel blocks, GEMM 14 pixels 60 GFLOP/s vs direct 7 pixels 35."""
    from .strategies import default_tile_ow

    vecs = max(1, oc_bn // lanes)
    tw, to = default_gemm_tile(ow, oc_chunks, vecs, regs, max_blocks)
    max_ow = GEMM_ONE_BLOCK_MAX_OW if regs >= 32 or vecs == 1 else GEMM_ONE_BLOCK_MAX_OW_16
    if to == 1 and ow > max_ow and oh > 1:
        return False
    th = gemm_tile_rows(oh, ow, tw, to, vecs, regs, rows_policy)
    return th * tw * to > default_tile_ow(ow, oc_bn, lanes, regs)


#: output blocks per tile over a flat pixel axis (`default_gemm_tile`)
FLAT_MAX_BLOCKS = 5

#: one-block GEMM tiles only on rows up to this many pixels (see `prefer_gemm`)
GEMM_ONE_BLOCK_MAX_OW = 28
#: the same with 16 vector registers (AVX2)
GEMM_ONE_BLOCK_MAX_OW_16 = 14

#: bytes a re-read set may take and still count as an L2 hit (a quarter of a DRAM byte)
L2_REREAD_BYTES = 1 << 20


def oc_outer_default(conv: Any, ow: int, tile_ow: int, tile_oc: int, oc_chunks: int,
                     oh: int | None = None) -> bool:
    """Output panels outside when the weights exceed `L2_REREAD_BYTES`; else the loop
    order moving fewer bytes: output panels outside (the weights read once, the
    input once per panel: `oc_chunks / tile_oc` times) or pixel tiles outside (the input read
    once, the weights once per pixel tile); re-reads of a set up to `L2_REREAD_BYTES` count
    a quarter. (ResNet-50's 1024->2048 stride-2 conv: 8 MB of weights re-read per pixel row
    ran at 47 GFLOP/s, panel outside 71+.)"""
    data, kernel = conv.op.input_tensors[:2]
    in_bytes = 4 * _prod_shape(data.shape)
    w_bytes = 4 * _prod_shape(kernel.shape)
    oh = int(conv.op.output(0).shape[2].value) if oh is None else oh  # rows of the tiling
    pixel_tiles = oh * -(-ow // tile_ow)

    def reread(nbytes: int) -> float:
        return nbytes * (0.25 if nbytes <= L2_REREAD_BYTES else 1.0)

    if w_bytes > L2_REREAD_BYTES:  # weights that leave L2 between pixel tiles: read once
        return True
    oc_outer = w_bytes + (oc_chunks // tile_oc - 1) * reread(in_bytes) + in_bytes
    pixel_outer = in_bytes + (pixel_tiles - 1) * reread(w_bytes) + w_bytes
    return oc_outer < pixel_outer


def _prod_shape(shape: Any) -> int:
    p = 1
    for s in shape:
        p *= int(s.value)
    return p


def is_flat(out: Any, conv: Any) -> bool:
    """Whether `conv` computes over one row of all the pixels (`conv2d_nchwc(flat_pixels=)`)
    that the output stage `out` reads back as rows."""
    conv_shape = [int(x.value) for x in conv.op.output(0).shape]
    out_shape = [int(x.value) for x in out.op.output(0).shape]
    return conv_shape[2] == 1 and out_shape[2] > 1 and \
        out_shape[2] * out_shape[3] == conv_shape[3]


def prefer_flat(oh: int, ow: int, oc_chunks: int, vecs: int, regs: int,
                rows_policy: str = "auto") -> bool:
    """The measured rule for a flat conv (`is_flat`): tiles over the flat pixel axis when
    their useful accumulators (those not on padding pixels) exceed the row tiles' by
    `FLAT_MIN_GAIN`. In the models (docs/performance.md, "1x1 convs over a flat pixel
    axis"): RegNetX-400MF's 400->400 7x7 in 16-channel blocks, 7 pixels x 1 block on rows
    vs 5 x 5 flat, 106 -> 126 GFLOP/s; where the tiles tie (MobileNetV2's 576->160, 2 rows
    x 7 x 2 blocks vs 5 x 5; EfficientNet's 7x7 layers) flat measured 5-15% slower."""
    tw, to = default_gemm_tile(ow, oc_chunks, vecs, regs)
    th = gemm_tile_rows(oh, ow, tw, to, vecs, regs, rows_policy)
    rows = th * tw * to * oh / (-(-oh // th) * th) * ow / (-(-ow // tw) * tw)
    ftw, fto = default_gemm_tile(oh * ow, oc_chunks, vecs, regs, FLAT_MAX_BLOCKS)
    flat = ftw * fto * oh * ow / (-(-(oh * ow) // ftw) * ftw)
    return flat > FLAT_MIN_GAIN * rows


#: how many times the row tiles' useful accumulators flat tiles need (`prefer_flat`)
FLAT_MIN_GAIN = 1.1


def flat_tiles(out: Any, conv: Any, target: Any) -> bool:
    """Whether the GEMM form tiles a flat conv (`is_flat`) over its flat pixel axis:
    under `-conv1x1-flat=on` always, else where `prefer_flat` says. Otherwise it tiles the
    rows, reading the flat conv's `row * W + col` (the same tiles as an unflattened conv)."""
    from .strategies import _lanes, register_file

    if not is_flat(out, conv):
        return False
    if _policy(target, "conv1x1-flat") == "on":
        return True
    h, w = (int(out.op.output(0).shape[i].value) for i in (2, 3))
    kernel = conv.op.input_tensors[1]
    vecs = max(1, int(kernel.shape[5].value) // _lanes(target))
    return prefer_flat(h, w, int(kernel.shape[0].value), vecs, register_file(target),
                       _policy(target, "conv-tile"))


def pixel_extents(out: Any, conv: Any, target: Any) -> tuple[int, int]:
    """(rows, pixels per row) of the GEMM form's tile space: (1, H*W) where `flat_tiles`."""
    h, w = (int(out.op.output(0).shape[i].value) for i in (2, 3))
    return (1, h * w) if flat_tiles(out, conv, target) else (h, w)


def define_gemm_knobs(cfg: Any, out: Any, conv: Any, target: Any) -> None:
    """Declare `form` (direct or gemm), `gemm_tile_ow`, `tile_oc`, `oc_outer` and
    `gemm_unroll_ic` on `cfg` for a pointwise conv group (every config of the space has them,
    whatever its form)."""
    from .strategies import _lanes, _tile_candidates, register_file

    lanes = _lanes(target)
    oh, ow = pixel_extents(out, conv, target)
    kernel = conv.op.input_tensors[1]
    oc_chunks, oc_bn = int(kernel.shape[0].value), int(kernel.shape[5].value)
    regs, vecs = register_file(target), max(1, oc_bn // lanes)
    blocks = FLAT_MAX_BLOCKS if flat_tiles(out, conv, target) else 4
    tw, to = default_gemm_tile(ow, oc_chunks, vecs, regs, blocks)
    rows = _policy(target, "conv-tile")
    th = gemm_tile_rows(oh, ow, tw, to, vecs, regs, rows)
    policy = _policy(target, "conv1x1")
    gemm = prefer_gemm(ow, oc_chunks, oc_bn, lanes, regs, oh, rows, blocks) \
        if policy == "auto" \
        else policy == "gemm"
    cfg.define_knob("form", ["direct", "gemm"], default="gemm" if gemm else "direct")
    cfg.define_split("gemm_tile_ow", ow, 2, policy="candidate",
                     candidates=_tile_candidates(ow, tw, 16), default=(-1, tw))
    cfg.define_split("gemm_tile_oh", oh, 2, policy="candidate",
                     candidates=_tile_candidates(oh, th, 4), default=(-1, th))
    cfg.define_split("tile_oc", oc_chunks, 2, policy="candidate",
                     candidates=[(oc_chunks // d, d) for d in range(1, min(oc_chunks, 8) + 1)
                                 if oc_chunks % d == 0], default=(-1, to))
    cfg.define_knob("oc_outer", [False, True], default=oc_outer_default(
        conv, ow, tw, to, oc_chunks, oh))
    # the input block's channels unrolled: 7x7 layers 116-121 -> 134 GFLOP/s once, others
    # +-10% (one run): a tuning choice, off by default
    cfg.define_knob("gemm_unroll_ic", [False, True], default=False)


def schedule_conv1x1_gemm(s: Any, out: Any, conv: Any, cfg: Any, target: Any) -> Any:
    """Schedule the group `s` (output stage `out`, conv stage `conv`) in the GEMM form with
    the knobs of `define_gemm_knobs`."""
    from .strategies import _ext, _inline_rest, _parallel

    n, oc, oh, ow, ob = out.op.axis
    kernel = conv.op.input_tensors[1]
    flat = flat_tiles(out, conv, target)
    _inline_rest(s, {out.op, conv.op})  # no padding stage: a pointwise conv reads in place
    local = s[s.cache_write(conv.op.output(0), "local")]
    if conv.op is not out.op:
        conv.compute_inline()
    if flat:  # one row of H*W pixels: the tile spans image rows (`flat_tiles`)
        ow = out.fuse(oh, ow)
        oh = None
    owo, owi = cfg["gemm_tile_ow"].apply(s, out, ow)
    oco, oci = cfg["tile_oc"].apply(s, out, oc)
    ohi = None
    if cfg["gemm_tile_oh"].size[1] > 1 and not flat:  # a tile over rows (a whole row per `owo`)
        oh, ohi = cfg["gemm_tile_oh"].apply(s, out, oh)
    inner = [oci] + ([ohi] if ohi is not None else []) + [owi, ob]
    rows_axes = [oh] if oh is not None else []
    outer = [n, oco, *rows_axes, owo] if cfg["oc_outer"].val else [n, *rows_axes, owo, oco]
    out.reorder(*outer, *inner)
    pixels = _ext(out.op.axis[3]) * (_ext(out.op.axis[2]) if flat else 1)
    # a tile that does not divide the pixels (flat, or a row: AVX2's 6 pixels x 2 vectors on
    # 28-pixel rows): the pixel-tile loop stays a loop and loop_partition peels its guarded
    # last tile. Fused with the outer loops, every tile kept the guard: 7.1 vs 6.1 ms on
    # ResNeXt-50's 256->512 28x28 conv (AMD EPYC, AVX2).
    tail = ohi is None and pixels % cfg["gemm_tile_ow"].size[1] != 0
    if tail:
        i = outer.index(owo)
        rows, at = out.fuse(*outer[:i]), outer[-1]
    else:
        rows = at = out.fuse(*outer)
    out.vectorize(ob)
    for ax in inner[:-1]:
        out.unroll(ax)
    if _parallel(target):
        out.parallel(rows)
    local.compute_at(out, at)
    _, lo, lh, lw, lb = local.op.axis
    ico, ry, rx, ici = local.op.reduce_axis
    tile = ([lh] if ohi is not None else []) + [lw, lo]
    local.reorder(ico, ry, rx, ici, *tile, lb)
    local.vectorize(lb)
    for ax in tile:
        local.unroll(ax)
    if cfg["prefetch"].val:  # the next `tile_oc` panels' weights, while these run
        from .strategies import weight_panel

        local.pragma(ici, "prefetch", cfg["tile_oc"].size[1] * weight_panel(kernel))
    if cfg["gemm_unroll_ic"].val:
        local.unroll(ici)
    return s
