"""Dense on VDLA: int8 data (batch 1, K) times weights packed (N/bo, K, bo) into int32, tiled
over output-channel blocks (`toc`) and input blocks per load (`tic`), GEMM tensorized, the same
virtual-thread knob and epilogue handling as the convolution (strategies.py).

    s, args = dense_schedule(DenseShape(k=512, n=1008), target)
    tforge tune: the template "dense_packed_int8.vdla" (knobs "tile", "n_vthreads")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tensorforge import te
from tensorforge.autotune import template

from .config import VDLAConfig
from .errors import VDLABufferOverflowError, VDLACompileError
from .strategies import _between, _divisors, _find, attach_epilogue

TAG = "dense_vdla"


@dataclass(frozen=True)
class DenseShape:
    """One row of `k` inputs into `n` outputs (both multiples of the core's blocks)."""

    k: int
    n: int


def dense_te(shape: DenseShape, config: VDLAConfig) -> tuple[te.Tensor, te.Tensor, te.Tensor]:
    """Placeholders (data (1, K), weight (N/bo, K, bo)) and the int32 product (1, N)."""
    bi, bo = config.block_in, config.block_out
    if shape.k % bi or shape.n % bo:
        raise VDLACompileError(f"dense on VDLA needs K a multiple of {bi} and N of {bo}; got "
                               f"{shape}: pad the channels")
    data = te.placeholder((1, shape.k), "int8", name="data")
    weight = te.placeholder((shape.n // bo, shape.k, bo), "int8", name="weight")
    r = te.reduce_axis((0, shape.k), name="k")
    out = te.compute(
        (1, shape.n),
        lambda i, j: te.sum(data[i, r].astype("int32")
                            * weight[j // bo, r, j % bo].astype("int32"), axis=r),
        name="dense", tag=TAG)
    return data, weight, out


def buffer_needs(shape: DenseShape, toc: int, tic: int, n_vthreads: int, config: VDLAConfig,
                 epilogue: bool) -> dict[str, int]:
    acc = toc * (2 if epilogue else 1)
    return {"inp": n_vthreads * tic, "wgt": n_vthreads * toc * tic, "acc": n_vthreads * acc}


def fitting_tiles(shape: DenseShape, config: VDLAConfig, epilogue: bool = False,
                  n_vthreads: int = 2) -> list[tuple[int, int]]:
    """(toc, tic) pairs that fit the buffers with `n_vthreads` threads (two threads need an
    even number of output tiles)."""
    nb, kb = shape.n // config.block_out, shape.k // config.block_in
    out = [(toc, tic) for toc in _divisors(nb) for tic in _divisors(kb)
           if (n_vthreads == 1 or (nb // toc) % 2 == 0) and all(
               v <= config.depth(m)
               for m, v in buffer_needs(shape, toc, tic, n_vthreads, config, epilogue).items())]
    if not out:
        raise VDLACompileError(
            f"dense {shape}: no tile fits {config.describe()} with {n_vthreads} virtual "
            f"thread(s){'; two need an even number of output tiles' if n_vthreads == 2 else ''}"
        )
    return out


def default_tile(shape: DenseShape, config: VDLAConfig, epilogue: bool = False,
                 n_vthreads: int = 2) -> tuple[int, int]:
    """Fewest instructions: the largest tiles (each weight is used once, so DRAM traffic is
    the same for every tile)."""
    return max(fitting_tiles(shape, config, epilogue, n_vthreads),
               key=lambda t: (t[0] * t[1], t[1]))


def _find_dense(out: te.Tensor) -> te.Tensor:
    """The product: this module's TE, or the graph's `dense_packed` (with out_dtype int32)."""
    try:
        return _find(out, TAG)
    except VDLACompileError:
        return _find(out, "dense_packed")


def schedule_dense(outs: Sequence[te.Tensor], target: Any, tile: tuple[int, int] | None = None,
                   n_vthreads: int | None = None) -> Any:
    """`n_vthreads` None: two virtual threads when the output blocks split evenly, else one
    (a classifier of 1000 padded to 63 blocks)."""
    config = VDLAConfig.from_target(target)
    out = outs[0]
    dense = _find_dense(out)
    data, weight = dense.op.input_tensors
    shape = DenseShape(int(data.shape[1].value), int(dense.shape[1].value))
    stages = _between(out, dense) if out is not dense else []
    if n_vthreads is None:
        try:
            fitting_tiles(shape, config, bool(stages), 2)
            n_vthreads = 2
        except VDLACompileError:
            n_vthreads = 1
    toc, tic = tile or default_tile(shape, config, bool(stages), n_vthreads)
    if n_vthreads == 2 and (shape.n // config.block_out // toc) % 2:
        raise VDLACompileError(f"dense {shape}: two virtual threads need an even number of "
                               f"output tiles of {toc} blocks; pad N or use one thread")
    for mem, tiles in buffer_needs(shape, toc, tic, n_vthreads, config, bool(stages)).items():
        if tiles > config.depth(mem):
            raise VDLABufferOverflowError(
                f"dense {shape}: tile of {toc} output and {tic} input blocks with "
                f"{n_vthreads} virtual thread(s) needs {tiles * config.tile_bytes(mem)} bytes "
                f"of {mem}_buffer but the design has {config.buffer_bytes(mem)}; shrink the "
                "split of the output channels or of the reduction")
    s = te.create_schedule(out.op)
    if out is dense:
        res = s.cache_write(dense, "acc_buffer")
    else:
        res = dense
        s[dense].set_scope("acc_buffer")
    cdata = s.cache_read(data, "inp_buffer", [res])
    cw = s.cache_read(weight, "wgt_buffer", [res])
    i, j = s[out].op.axis
    jo, ji = s[out].split(j, factor=config.block_out)
    joo, joi = s[out].split(jo, factor=toc)
    s[out].reorder(i, joo, joi, ji)
    tile_axis = joo
    if n_vthreads == 2:
        _, tile_axis = s[out].split(joo, factor=2)
        s[out].bind(tile_axis, te.thread_axis("cthread"))
    attach_epilogue(s, out, dense, res, stages, tile_axis, config.block_out)
    ri, rj = s[res].op.axis
    (rk,) = s[res].op.reduce_axis
    rjo, rji = s[res].split(rj, factor=config.block_out)
    rko, rki = s[res].split(rk, factor=config.block_in)
    rkoo, rkoi = s[res].split(rko, factor=tic)
    s[res].reorder(rkoo, ri, rjo, rkoi, rji, rki)
    s[cdata].compute_at(s[res], rkoo)
    s[cw].compute_at(s[res], rkoo)
    s[cdata].pragma(s[cdata].op.axis[0], "dma_copy")
    s[cw].pragma(s[cw].op.axis[0], "dma_copy")
    s[out].pragma(joi, "dma_copy")
    s[res].tensorize(rji, te.get_intrin(config.gemm_name, target))
    return s


def dense_schedule(shape: DenseShape, target: Any, tile: tuple[int, int] | None = None,
                   n_vthreads: int | None = 2) -> tuple[Any, list[te.Tensor]]:
    data, weight, out = dense_te(shape, VDLAConfig.from_target(target))
    return schedule_dense([out], target, tile, n_vthreads), [data, weight, out]


@template("dense_packed_int8.vdla")
def dense_template(cfg: Any, k: int, n: int) -> tuple[Any, list[te.Tensor]]:
    config = VDLAConfig.from_target(cfg.target)
    shape = DenseShape(k, n)
    try:
        tiles, threads = fitting_tiles(shape, config), [1, 2]
    except VDLACompileError:  # no even split: one thread only
        tiles, threads = fitting_tiles(shape, config, n_vthreads=1), [1]
    cfg.define_knob("tile", tiles, default=max(tiles, key=lambda t: (t[0] * t[1], t[1])))
    cfg.define_knob("n_vthreads", threads, default=threads[-1])
    cfg.add_flop(2.0 * k * n)
    return dense_schedule(shape, cfg.target, tuple(cfg["tile"].val), int(cfg["n_vthreads"].val))


__all__ = ["DenseShape", "dense_schedule", "dense_te", "schedule_dense"]
