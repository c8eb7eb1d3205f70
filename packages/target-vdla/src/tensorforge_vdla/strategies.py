"""Convolution on VDLA: int8 NCHW{bi}c data and OIHW{bi}i{bo}o weights into int32, tiled to the
on-chip buffers, with the GEMM tensorized and the copies turned into DMA.

A tile is (rows, cols, output-channel blocks, input-channel blocks) of the output; the knob
`n_vthreads` (1 or 2) binds an outer tile axis to `cthread`, so one virtual thread's loads
overlap the other's GEMMs. Tiles are chosen from those that fit the buffers with two virtual
threads (`fitting_tiles`, the config-space filter); a tile given by hand that does not fit is
a `VDLABufferOverflowError` naming the buffer, the bytes and the split to shrink. Element-wise
stages after the convolution (bias, relu, requantization) run on the ALU in the accumulators.

    s, args = conv2d_schedule(data, kernel, stride, padding, target)      # TE + schedule
    tforge tune: the template "conv2d_nchwc_int8.vdla" (knobs "tile", "n_vthreads")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tensorforge import te
from tensorforge.autotune import template
from tensorforge.ops.nn_nchwc import conv2d_nchwc

from .config import VDLAConfig
from .errors import VDLABufferOverflowError, VDLACompileError


@dataclass(frozen=True)
class ConvShape:
    """A convolution in VDLA's blocked layout (channels in blocks of the GEMM core)."""

    h: int
    w: int
    icb: int  # input-channel blocks
    ocb: int  # output-channel blocks
    kh: int
    kw: int
    stride: int
    pad: int

    @property
    def oh(self) -> int:
        return (self.h + 2 * self.pad - self.kh) // self.stride + 1

    @property
    def ow(self) -> int:
        return (self.w + 2 * self.pad - self.kw) // self.stride + 1

    def macs(self, config: VDLAConfig) -> int:
        return (self.oh * self.ow * self.ocb * self.icb * self.kh * self.kw
                * config.block_in * config.block_out)


@dataclass(frozen=True)
class Epilogue:
    """Element-wise work after the convolution: whether there is any (one more accumulator
    tile per output tile) and how many per-channel operands (a bias) it loads."""

    stages: int = 0
    channel_operands: int = 0


@dataclass(frozen=True)
class Tile:
    """Output rows, output columns, output-channel blocks per tile; input-channel blocks per
    load."""

    th: int
    tw: int
    toc: int
    tic: int

    def as_tuple(self) -> tuple[int, int, int, int]:
        return (self.th, self.tw, self.toc, self.tic)


def buffer_needs(shape: ConvShape, tile: Tile, n_vthreads: int, config: VDLAConfig,
                 epilogue: Epilogue | None = None) -> dict[str, int]:
    """Tiles of each SRAM one tile of the convolution needs (all virtual threads)."""
    rows = (tile.th - 1) * shape.stride + shape.kh
    cols = (tile.tw - 1) * shape.stride + shape.kw
    acc = tile.toc * tile.th * tile.tw
    if epilogue is not None and epilogue.stages:
        acc += acc + epilogue.channel_operands * tile.toc
    return {"inp": n_vthreads * tile.tic * rows * cols,
            "wgt": n_vthreads * tile.toc * tile.tic * shape.kh * shape.kw,
            "acc": n_vthreads * acc}


def check_fits(shape: ConvShape, tile: Tile, n_vthreads: int, config: VDLAConfig,
               epilogue: Epilogue | None = None) -> None:
    """Raise `VDLABufferOverflowError` naming the first buffer the tile overflows."""
    shrink = {"inp": "tile rows/cols (the split of the output height and width) or the "
                     "input-channel blocks per load",
              "wgt": "the output-channel blocks per tile or the input-channel blocks per load",
              "acc": "tile rows/cols or output-channel blocks (the output splits)"}
    for mem, tiles in buffer_needs(shape, tile, n_vthreads, config, epilogue).items():
        if tiles > config.depth(mem):
            tb = config.tile_bytes(mem)
            raise VDLABufferOverflowError(
                f"conv2d {shape}: tile {tile.as_tuple()} (rows, cols, oc blocks, ic blocks) "
                f"with {n_vthreads} virtual thread(s) needs {tiles * tb} bytes of "
                f"{mem}_buffer but the design has {config.buffer_bytes(mem)}; shrink "
                f"{shrink[mem]}")


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _vthread_axis(shape: ConvShape, tile: Tile) -> str | None:
    """Which tile axis two virtual threads split: output channels, else rows."""
    if (shape.ocb // tile.toc) % 2 == 0:
        return "oc"
    if (shape.oh // tile.th) % 2 == 0:
        return "h"
    return None


def fitting_tiles(shape: ConvShape, config: VDLAConfig, epilogue: Epilogue | None = None
                  ) -> list[Tile]:
    """Tiles that fit the buffers with two virtual threads and leave two tiles to split."""
    out = []
    for th in _divisors(shape.oh):
        for tw in _divisors(shape.ow):
            for toc in _divisors(shape.ocb):
                for tic in _divisors(shape.icb):
                    t = Tile(th, tw, toc, tic)
                    needs = buffer_needs(shape, t, 2, config, epilogue)
                    if all(v <= config.depth(m) for m, v in needs.items()) and \
                            _vthread_axis(shape, t) is not None:
                        out.append(t)
    if not out:
        raise VDLACompileError(f"conv2d {shape}: no tile fits the buffers of "
                               f"{config.describe()}")
    return out


def estimate_cycles(shape: ConvShape, tile: Tile, config: VDLAConfig) -> float:
    """A first-order cost with loads overlapped by GEMMs (two virtual threads): used to pick
    the default tile, not to report anything."""
    rows = (tile.th - 1) * shape.stride + shape.kh
    cols = (tile.tw - 1) * shape.stride + shape.kw
    n_tiles = (shape.oh // tile.th) * (shape.ow // tile.tw) * (shape.ocb // tile.toc)
    steps = shape.icb // tile.tic
    gemm = tile.toc * tile.th * tile.tw * tile.tic * shape.kh * shape.kw
    load_bytes = (tile.tic * rows * cols * config.tile_bytes("inp")
                  + tile.toc * tile.tic * shape.kh * shape.kw * config.tile_bytes("wgt"))
    load = 2 * config.dram_latency + load_bytes / config.dram_bytes_per_cycle
    store = config.dram_latency + tile.toc * tile.th * tile.tw * config.tile_bytes("acc") / \
        config.dram_bytes_per_cycle
    return n_tiles * (steps * max(gemm, load) + store / 2)


def default_tile(shape: ConvShape, config: VDLAConfig, epilogue: Epilogue | None = None
                 ) -> Tile:
    return min(fitting_tiles(shape, config, epilogue),
               key=lambda t: (estimate_cycles(shape, t, config), -t.th * t.tw))


# ---- TE and schedule -----------------------------------------------------------------------

def conv2d_te(shape: ConvShape, config: VDLAConfig, out_dtype: str = "int32"
              ) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """Placeholders (data, kernel) and the int32 convolution, in VDLA's layout (batch 1)."""
    bi, bo = config.block_in, config.block_out
    data = te.placeholder((1, shape.icb, shape.h, shape.w, bi), "int8", name="data")
    kernel = te.placeholder((shape.ocb, shape.icb, shape.kh, shape.kw, bi, bo), "int8",
                            name="kernel")
    conv = conv2d_nchwc(data, kernel, shape.stride, shape.pad, out_dtype=out_dtype)
    return data, kernel, conv


def _find(t: te.Tensor, tag: str) -> te.Tensor:
    stack, seen = [t], set()
    while stack:
        x = stack.pop()
        if id(x.op) in seen:
            continue
        seen.add(id(x.op))
        if getattr(x.op, "tag", "") == tag:
            return x
        stack.extend(x.op.input_tensors)
    raise VDLACompileError(f"no {tag} stage under {t.name}")


def schedule_conv2d(outs: Sequence[te.Tensor], target: Any, tile: Tile | None = None,
                    n_vthreads: int = 2) -> Any:
    """The VDLA schedule of a convolution (plus element-wise stages) ending in `outs[0]`."""
    config = VDLAConfig.from_target(target)
    out = outs[0]
    conv = _find(out, "conv2d_nchwc")
    padded, kernel = conv.op.input_tensors
    data = padded.op.input_tensors[0] if "pad" in getattr(padded.op, "tag", "") else padded
    shape = _conv_shape(conv, padded, data, kernel)
    epilogue = Epilogue(len(_between(out, conv)), len(_operands(out, conv)))
    tile = tile or default_tile(shape, config, epilogue)
    if n_vthreads not in (1, 2):
        raise VDLACompileError(f"n_vthreads must be 1 or 2, got {n_vthreads}")
    check_fits(shape, tile, n_vthreads, config, epilogue)
    for name, n, t in (("rows", shape.oh, tile.th), ("cols", shape.ow, tile.tw),
                       ("oc blocks", shape.ocb, tile.toc), ("ic blocks", shape.icb, tile.tic)):
        if n % t:
            raise VDLACompileError(f"conv2d {shape}: tile {name} {t} must divide {n}")
    s = te.create_schedule(out.op)
    if padded is not data:
        s[padded].compute_inline()
    if out is conv:
        res = s.cache_write(conv, "acc_buffer")
        stages: list[te.Tensor] = []
    else:
        res = conv
        s[conv].set_scope("acc_buffer")
        stages = _between(out, conv)
    cdata = s.cache_read(padded, "inp_buffer", [res])
    ckern = s.cache_read(kernel, "wgt_buffer", [res])
    n_, oc, y, x, ob = s[out].op.axis
    oco, oci = s[out].split(oc, factor=tile.toc)
    yo, yi = s[out].split(y, factor=tile.th)
    xo, xi = s[out].split(x, factor=tile.tw)
    s[out].reorder(n_, oco, yo, xo, oci, yi, xi, ob)
    if n_vthreads == 2:
        axis = _vthread_axis(shape, tile)
        if axis is None:
            raise VDLACompileError(f"conv2d {shape}: tile {tile.as_tuple()} leaves one tile; "
                                   "two virtual threads need two")
        outer = oco if axis == "oc" else yo
        _, vt = s[out].split(outer, factor=2)
        s[out].bind(vt, te.thread_axis("cthread"))
    attach_epilogue(s, out, conv, res, stages, xo, config.block_out)
    rn, roc, ry, rx, rob = s[res].op.axis
    ico, ky, kx, ici = s[res].op.reduce_axis
    ico_o, ico_i = s[res].split(ico, factor=tile.tic)
    s[res].reorder(ico_o, rn, roc, ry, rx, ico_i, ky, kx, rob, ici)
    s[cdata].compute_at(s[res], ico_o)
    s[ckern].compute_at(s[res], ico_o)
    s[cdata].pragma(s[cdata].op.axis[0], "dma_copy")
    s[ckern].pragma(s[ckern].op.axis[0], "dma_copy")
    s[out].pragma(oci, "dma_copy")
    s[res].tensorize(rob, te.get_intrin(config.gemm_name, target))
    return s


def attach_epilogue(s: Any, out: te.Tensor, master: te.Tensor, res: te.Tensor,
                    stages: list[te.Tensor], axis: Any, lanes: int) -> None:
    """Attach the accumulator stage `res` (and the element-wise `stages` after `master`, as one
    ALU stage) to `out`'s tile loop `axis`; operands such as a bias are loaded into the
    accumulators next to it."""
    if not stages:
        s[res].compute_at(s[out], axis)
        return
    for t in stages[:-1]:
        s[t].compute_inline()
    last = stages[-1]
    s[last].set_scope("acc_buffer")
    s[last].compute_at(s[out], axis)
    # the GEMM nest and the operand loads go inside the ALU stage's unit batch loop, before
    # its channel loop (they are read through the inlined stages)
    s[res].compute_at(s[last], s[last].op.axis[0])
    for t in _operands(out, master):
        readers = [x for x in [*stages, out] if t in x.op.input_tensors]
        cached = s.cache_read(t, "acc_buffer", readers)
        s[cached].compute_at(s[last], s[last].op.axis[0])
        s[cached].pragma(s[cached].op.axis[0], "dma_copy")
    s[last].split(s[last].op.axis[-1], factor=lanes)  # the innermost loop walks one tile
    s[last].pragma(s[last].leaf_iter_vars[1], "alu")


def _operands(out: te.Tensor, conv: te.Tensor) -> list[te.Tensor]:
    """Placeholders the element-wise stages after `conv` read (a bias, a residual)."""
    from tensorforge.te import PlaceholderOp

    found: list[te.Tensor] = []
    for t in [*_between(out, conv), out]:
        for x in t.op.input_tensors:
            if isinstance(x.op, PlaceholderOp) and all(x is not f for f in found):
                found.append(x)
    return found


def _conv_shape(conv: te.Tensor, padded: te.Tensor, data: te.Tensor, kernel: te.Tensor
                ) -> ConvShape:
    """The ConvShape of a `conv2d_nchwc` stage (stride read off its input index)."""
    from tensorforge.arith import detect_linear_equation
    from tensorforge.expr import ProducerLoad, post_order_collect

    _, icb, h, w, _ = (int(x.value) for x in data.shape)
    ocb, _, kh, kw, _, _ = (int(x.value) for x in kernel.shape)
    ph, pw = int(padded.shape[2].value) - h, int(padded.shape[3].value) - w
    if ph != pw or ph % 2:
        raise VDLACompileError(f"conv2d on VDLA pads all sides alike; got {ph} rows and {pw} "
                               "columns in total")
    body = conv.op.body[0]
    reads = post_order_collect(body, lambda e: isinstance(e, ProducerLoad)
                               and e.producer is padded)
    yy, xx = conv.op.axis[2].var, conv.op.axis[3].var
    sy = detect_linear_equation(reads[0].indices[2], [yy])
    sx = detect_linear_equation(reads[0].indices[3], [xx])
    strides = {getattr(e[0], "value", None) if e is not None else None for e in (sy, sx)}
    if len(strides) != 1 or None in strides:
        raise VDLACompileError("conv2d on VDLA needs one constant stride for rows and columns")
    return ConvShape(h, w, icb, ocb, kh, kw, strides.pop(), ph // 2)


def _between(out: te.Tensor, conv: te.Tensor) -> list[te.Tensor]:
    """Compute stages strictly between `conv` and `out`, producers first."""
    order: list[te.Tensor] = []
    seen: set[int] = set()

    def visit(t: te.Tensor) -> bool:
        if t.op is conv.op:
            return True
        hit = False
        for x in getattr(t.op, "input_tensors", []):
            hit |= visit(x)
        if hit and t is not out and id(t.op) not in seen:
            seen.add(id(t.op))
            order.append(t)
        return hit

    visit(out)
    return order


def conv2d_schedule(shape: ConvShape, target: Any, tile: Tile | None = None,
                    n_vthreads: int = 2) -> tuple[Any, list[te.Tensor]]:
    """(schedule, [data, kernel, out]) of one int8 convolution producing int32."""
    config = VDLAConfig.from_target(target)
    data, kernel, conv = conv2d_te(shape, config)
    return schedule_conv2d([conv], target, tile, n_vthreads), [data, kernel, conv]


@template("conv2d_nchwc_int8.vdla")
def conv2d_template(cfg: Any, h: int, w: int, icb: int, ocb: int, kh: int, kw: int, stride: int,
                    pad: int) -> tuple[Any, list[te.Tensor]]:
    """The tunable convolution: knob "tile" over the tiles that fit, "n_vthreads" in {1, 2}."""
    target = cfg.target
    config = VDLAConfig.from_target(target)
    shape = ConvShape(h, w, icb, ocb, kh, kw, stride, pad)
    tiles = fitting_tiles(shape, config)
    best = default_tile(shape, config)
    cfg.define_knob("tile", [t.as_tuple() for t in tiles], default=best.as_tuple())
    cfg.define_knob("n_vthreads", [1, 2], default=2)
    cfg.add_flop(2.0 * shape.macs(config))
    tile = Tile(*cfg["tile"].val)
    return conv2d_schedule(shape, target, tile, int(cfg["n_vthreads"].val))
