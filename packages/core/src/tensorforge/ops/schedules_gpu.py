"""GPU schedule templates: each `schedule_*(outs, target, cfg=None) -> Schedule` takes the
outputs of one fused group (master op + epilogue), declares its knobs on `cfg` (an autotune
ConfigSpace/ConfigEntity, or a FallbackConfig whose defaults come from the shape) and binds
every stage to threads. A group the template does not cover (another layout, a multi-output
epilogue) gets the generic GPU schedule.

=====================  =================================================================
template               knobs
=====================  =================================================================
dense / matmul         tile_y, tile_x (block x vthread x thread x per-thread rows/cols),
(tiled)                tile_k (k-step of the shared tiles), double_buffer, storage_align
                       (pad shared rows), unroll, shared (tiles in shared memory, or read
                       from global: a CPU's caches do that job); small M: rows_per_block,
                       threads_k (a cross-thread reduction per output element)
conv2d (direct)        tile_f, tile_y, tile_x (block x vthread x thread x per-thread),
                       tile_rc, tile_ry, tile_rx (reduction steps of the shared tiles),
                       unroll, shared
depthwise conv2d       tile_y, tile_x (block x thread x per-thread)
pools                  threads
softmax, layer norm    threads (one block per row; max, sum, mean and variance reduced
                       across the block's threads)
=====================  =================================================================

Tiles follow the paper: the threads of a block fetch the input and weight tiles into shared
memory together (`cache_read(..., "shared")`, the fetch loops bound to the block's threads),
synchronize, and each thread accumulates a register tile (`cache_write(..., "local")`);
virtual threads stride each thread's tile so neighbouring threads read neighbouring columns.
"""

from __future__ import annotations

from typing import Any

from .. import te
from ..te.tensor import ComputeOp, Tensor
from .schedule_gpu import gpu_threads, schedule_gpu_generic

__all__ = ["GPU_STRATEGIES", "KNOBS", "register_gpu_strategies", "schedule_conv2d_gpu",
           "schedule_dense_gpu", "schedule_depthwise_gpu", "schedule_pool_gpu",
           "schedule_row_reduce_gpu"]

KNOBS = {
    "dense/gpu": ("tile_y", "tile_x", "tile_k", "double_buffer", "storage_align", "unroll",
                  "shared"),
    "conv2d/gpu": ("tile_f", "tile_y", "tile_x", "tile_rc", "tile_ry", "tile_rx", "unroll",
                   "shared"),
}


def _cfg(cfg: Any, target: Any) -> Any:
    if cfg is None:
        from ..autotune.space import FallbackConfig

        cfg = FallbackConfig(target)
    return cfg


def _ext(iv: Any) -> int:
    return int(iv.dom.extent.value)


def _tag(op: Any) -> str:
    return str(getattr(op, "tag", "") or "")


def _find(s: Any, tags: tuple[str, ...]) -> Any:
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and any(t in _tag(st.op) for t in tags):
            return st
    return None


def _inline_others(s: Any, keep: set[Any]) -> None:
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and st.op not in keep and not st.op.reduce_axis:
            st.compute_inline()


def _divisors(n: int, cap: int) -> list[int]:
    return [d for d in range(1, min(n, cap) + 1) if n % d == 0]


def _pick(n: int, want: int) -> int:
    """The largest divisor of `n` up to `want`."""
    return max(_divisors(n, want))


def _splits4(n: int, threads: tuple[int, ...], inner: tuple[int, ...],
             vthreads: tuple[int, ...] = (1, 2)) -> list[tuple[int, int, int, int]]:
    """(blocks, vthreads, threads, per-thread) splits of `n` whose inner three divide it."""
    out = []
    for v in vthreads:
        for t in threads:
            for i in inner:
                if n % (v * t * i) == 0:
                    out.append((n // (v * t * i), v, t, i))
    return out or [(n, 1, 1, 1)]


def _closest(cands: list[tuple[int, ...]], want: tuple[int, ...]) -> tuple[int, ...]:
    """The candidate nearest `want` (log distance of the inner parts)."""
    import math

    def dist(c: tuple[int, ...]) -> float:
        return sum(abs(math.log2(a) - math.log2(b)) for a, b in zip(c[1:], want[1:]))

    return min(cands, key=dist)


def _register_tile(s: Any, master: Any, out: Any) -> Any:
    """The stage accumulating the master op in registers: a `local` cache of the output, or
    the master itself made `local` when an epilogue stage writes the output."""
    if master is out:
        return s[s.cache_write(master.op.output(0), "local")]
    master.set_scope("local")
    return master


def _bind(stage: Any, axis: Any, tag: str) -> None:
    stage.bind(axis, te.thread_axis(tag))


def cooperative_fetch(stage: Any, threads: list[tuple[str, int]], vector: int = 1) -> None:
    """Bind the fetch of a shared tile to the block's threads: its axes fused, split into
    rounds of `prod(threads)` elements (the innermost `vector` elements per thread)."""
    fused = stage.fuse(*stage.op.axis) if len(stage.op.axis) > 1 else stage.op.axis[0]
    if vector > 1:
        fused, vi = stage.split(fused, factor=vector)
        stage.vectorize(vi)
    for tag, n in reversed(threads):
        fused, inner = stage.split(fused, factor=n)
        _bind(stage, inner, tag)


# ------------------------------------------------------------------------------ dense
def schedule_dense_gpu(outs: list[Tensor], target: Any, cfg: Any = None) -> Any:
    """dense / matmul (2-d) with shared tiles and a register tile per thread; a product with
    few rows (a GEMV) reduces each output across a block's threads instead."""
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    master = _find(s, ("dense", "matmul"))
    if (master is None or len(outs) != 1 or len(master.op.axis) != 2
            or len(master.op.reduce_axis) != 1):
        return schedule_gpu_generic(outs, target)
    out = s[outs[0]]
    _inline_others(s, {master.op, out.op})
    m, n = (_ext(a) for a in master.op.axis)
    k = _ext(master.op.reduce_axis[0])
    cfg.add_flop(2.0 * m * n * k)
    limit = gpu_threads(target, 1024)
    if m < 8:
        return _dense_gemv(s, master, out, cfg, limit)
    ys = _splits4(m, (1, 2, 4, 8, 16), (1, 2, 4, 8))
    xs = _splits4(n, (1, 2, 4, 8, 16, 32), (1, 2, 4, 8))
    # defaults: 16 x 16 threads, 4 columns each, k-steps of 16 (measured best of a few on
    # pocl; a tuned config replaces them)
    cfg.define_split("tile_y", m, 4, policy="candidate", candidates=ys,
                     default=_closest(ys, (0, 1, 16, 1)))
    cfg.define_split("tile_x", n, 4, policy="candidate", candidates=xs,
                     default=_closest(xs, (0, 1, 16, 4)))
    kc = [(k // d, d) for d in _divisors(k, 32)]
    cfg.define_split("tile_k", k, 2, policy="candidate", candidates=kc,
                     default=_closest(kc, (0, 16)))
    cfg.define_knob("double_buffer", [False, True], default=False)
    cfg.define_knob("storage_align", [False, True], default=False)
    cfg.define_knob("unroll", [False, True], default=True)
    cfg.define_knob("shared", [True, False], default=True)

    a_t, b_t = master.op.input_tensors
    local = _register_tile(s, master, out)
    tiles = [s[s.cache_read(t, "shared", [local])] for t in (a_t, b_t)] \
        if cfg["shared"].val else []
    i, j = out.op.axis
    by, vy, ty, yi = cfg["tile_y"].apply(s, out, i)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, out, j)
    out.reorder(by, bx, vy, vx, ty, tx, yi, xi)
    _bind(out, by, "blockIdx.y")
    _bind(out, bx, "blockIdx.x")
    _bind(out, vy, "vthread")
    _bind(out, vx, "vthread")
    _bind(out, ty, "threadIdx.y")
    _bind(out, tx, "threadIdx.x")
    local.compute_at(out, tx)
    ci, cj = local.op.axis
    ko, ki = cfg["tile_k"].apply(s, local, local.op.reduce_axis[0])
    local.reorder(ko, ki, ci, cj)
    if cfg["unroll"].val:
        local.unroll(ki)
        local.unroll(ci)
    nty, ntx = cfg["tile_y"].size[2], cfg["tile_x"].size[2]
    threads = [("threadIdx.y", nty), ("threadIdx.x", ntx)]
    for t in tiles:
        t.compute_at(local, ko)
        if cfg["double_buffer"].val:
            t.double_buffer()
        if cfg["storage_align"].val:
            t.storage_align(t.op.axis[0], cfg["tile_k"].size[1], 1)
        cooperative_fetch(t, threads)
    if nty * ntx > limit:
        from ..schedule import ScheduleError

        raise ScheduleError(f"dense/gpu: {nty} x {ntx} threads exceed the target's "
                            f"max-threads-per-block {limit}")
    return s


def _dense_gemv(s: Any, master: Any, out: Any, cfg: Any, limit: int) -> Any:
    """Each output element of a few-row product: one group of threads splits its k."""
    n = _ext(out.op.axis[1])
    rows = [r for r in (1, 2, 4, 8) if n % r == 0]
    cfg.define_knob("rows_per_block", rows, default=rows[-1] if rows[-1] <= 4 else 4)
    ks = [t for t in (16, 32, 64, 128) if t <= limit]
    cfg.define_knob("threads_k", ks, default=32 if 32 in ks else ks[-1])
    r, t = cfg["rows_per_block"].val, cfg["threads_k"].val
    local = _register_tile(s, master, out)
    i, j = out.op.axis
    bj, tj = out.split(j, factor=r)
    out.reorder(i, bj, tj)
    _bind(out, bj, "blockIdx.x")
    _bind(out, i, "blockIdx.y")
    _bind(out, tj, "threadIdx.y")
    local.compute_at(out, tj)
    ko, ki = local.split(local.op.reduce_axis[0], factor=t)
    _bind(local, ki, "threadIdx.x")
    return s


# ------------------------------------------------------------------------------ conv2d
def _conv_parts(s: Any, outs: list[Tensor]) -> tuple[Any, Any, Any, Any] | None:
    """(master conv stage, output stage, padded input tensor or input, weight tensor)."""
    master = _find(s, ("conv2d_nchw",))
    if master is None or len(outs) != 1 or len(master.op.axis) != 4:
        return None
    data, weight = master.op.input_tensors
    return master, s[outs[0]], data, weight


def schedule_conv2d_gpu(outs: list[Tensor], target: Any, cfg: Any = None) -> Any:
    """NCHW conv2d: blocks of (filters x rows x columns), a register tile per thread, the
    padded input and weight tiles fetched into shared memory per reduction step. Depthwise
    convs go to `schedule_depthwise_gpu`."""
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    if _find(s, ("depthwise_conv2d_nchw",)) is not None:
        return schedule_depthwise_gpu(outs, target, cfg)
    parts = _conv_parts(s, outs)
    if parts is None:
        return schedule_gpu_generic(outs, target)
    master, out, data, weight = parts
    limit = gpu_threads(target, 1024)
    nb, f, oh, ow = (_ext(a) for a in master.op.axis)
    rc, ry, rx = master.op.reduce_axis
    c, kh, kw = _ext(rc), _ext(ry), _ext(rx)
    cfg.add_flop(2.0 * nb * f * oh * ow * c * kh * kw)
    fs = _splits4(f, (1, 2, 4, 8, 16), (1, 2, 4))
    ys = _splits4(oh, (1, 2, 4, 8), (1, 2), (1,))
    xs = _splits4(ow, (1, 2, 4, 8, 16), (1, 2, 4), (1,))
    cfg.define_split("tile_f", f, 4, policy="candidate", candidates=fs,
                     default=_closest(fs, (0, 1, 8, 2)))
    cfg.define_split("tile_y", oh, 4, policy="candidate", candidates=ys,
                     default=_closest(ys, (0, 1, 2, 1)))
    cfg.define_split("tile_x", ow, 4, policy="candidate", candidates=xs,
                     default=_closest(xs, (0, 1, 8, 2)))
    rcs = [(c // d, d) for d in _divisors(c, 16)]
    cfg.define_split("tile_rc", c, 2, policy="candidate", candidates=rcs,
                     default=_closest(rcs, (0, 4)))
    cfg.define_split("tile_ry", kh, 2, policy="candidate", candidates=[(kh, 1), (1, kh)],
                     default=(1, kh))
    cfg.define_split("tile_rx", kw, 2, policy="candidate", candidates=[(kw, 1), (1, kw)],
                     default=(1, kw))
    cfg.define_knob("unroll", [False, True], default=True)
    cfg.define_knob("shared", [True, False], default=True)

    _inline_others(s, {master.op, out.op})
    local = _register_tile(s, master, out)
    tiles = [s[s.cache_read(t, "shared", [local])] for t in (data, weight)] \
        if cfg["shared"].val else []
    n_, f_, y_, x_ = out.op.axis
    bf, vf, tf, fi = cfg["tile_f"].apply(s, out, f_)
    by, vy, ty, yi = cfg["tile_y"].apply(s, out, y_)
    bx, vx, tx, xi = cfg["tile_x"].apply(s, out, x_)
    out.reorder(n_, bf, by, bx, vf, vy, vx, tf, ty, tx, fi, yi, xi)
    bz = out.fuse(n_, bf)
    _bind(out, bz, "blockIdx.z")
    _bind(out, by, "blockIdx.y")
    _bind(out, bx, "blockIdx.x")
    for v in (vf, vy, vx):
        _bind(out, v, "vthread")
    _bind(out, tf, "threadIdx.z")
    _bind(out, ty, "threadIdx.y")
    _bind(out, tx, "threadIdx.x")
    local.compute_at(out, tx)
    ln, lf, ly, lx = local.op.axis
    lrc, lry, lrx = local.op.reduce_axis
    rco, rci = cfg["tile_rc"].apply(s, local, lrc)
    ryo, ryi = cfg["tile_ry"].apply(s, local, lry)
    rxo, rxi = cfg["tile_rx"].apply(s, local, lrx)
    local.reorder(rco, ryo, rxo, rci, ryi, rxi, ln, lf, ly, lx)
    if cfg["unroll"].val:
        local.unroll(rxi)
        local.unroll(lf)
    # the padding is computed inside the shared fetch (guarded loads), not on its own
    for st in s.stages:
        if isinstance(st.op, ComputeOp) and "pad" in _tag(st.op) and st.attach_type == "root":
            st.compute_inline()
    nt = [("threadIdx.z", cfg["tile_f"].size[2]), ("threadIdx.y", cfg["tile_y"].size[2]),
          ("threadIdx.x", cfg["tile_x"].size[2])]
    total = nt[0][1] * nt[1][1] * nt[2][1]
    if total > limit:
        from ..schedule import ScheduleError

        raise ScheduleError(f"conv2d/gpu: {total} threads per block exceed the target's "
                            f"max-threads-per-block {limit}")
    for t in tiles:
        t.compute_at(local, rxo)
        cooperative_fetch(t, nt)
    return s


def schedule_depthwise_gpu(outs: list[Tensor], target: Any, cfg: Any = None) -> Any:
    """Depthwise NCHW conv2d: one block per (image, channel) and row band, a small register
    tile of output pixels per thread; inputs read straight from global memory."""
    cfg = _cfg(cfg, target)
    s = te.create_schedule([o.op for o in outs])
    master = _find(s, ("depthwise_conv2d_nchw",))
    if master is None or len(outs) != 1:
        return schedule_gpu_generic(outs, target)
    out = s[outs[0]]
    nb, f, oh, ow = (_ext(a) for a in master.op.axis)
    cfg.add_flop(2.0 * nb * f * oh * ow * 9)
    ys = [(oh // (t * i), t, i) for t in (1, 2, 4, 8) for i in (1, 2) if oh % (t * i) == 0]
    xs = [(-(-ow // (t * i)), t, i) for t in (4, 8, 16, 32) for i in (1, 2, 4)
          if t * i <= max(4, 2 * ow)]
    cfg.define_split("tile_y", oh, 3, policy="candidate", candidates=ys or [(oh, 1, 1)],
                     default=_closest(ys or [(oh, 1, 1)], (0, 4, 1)))
    cfg.define_split("tile_x", ow, 3, policy="candidate", candidates=xs or [(ow, 1, 1)],
                     default=_closest(xs or [(ow, 1, 1)], (0, 16, 1)))
    _inline_others(s, {master.op, out.op})
    local = _register_tile(s, master, out)
    n_, f_, y_, x_ = out.op.axis
    by, ty, yi = cfg["tile_y"].apply(s, out, y_)
    bx, tx, xi = cfg["tile_x"].apply(s, out, x_)
    out.reorder(n_, f_, by, bx, ty, tx, yi, xi)
    _bind(out, out.fuse(n_, f_), "blockIdx.z")
    _bind(out, by, "blockIdx.y")
    _bind(out, bx, "blockIdx.x")
    _bind(out, ty, "threadIdx.y")
    _bind(out, tx, "threadIdx.x")
    local.compute_at(out, tx)
    return s


# ------------------------------------------------------------------------------ pools
def schedule_pool_gpu(outs: list[Tensor], target: Any, cfg: Any = None) -> Any:
    """Pooling: one output element per thread (threads per block tunable); a global pool
    over a large window reduces across threads."""
    cfg = _cfg(cfg, target)
    limit = gpu_threads(target, 1024)
    opts = [t for t in (32, 64, 128, 256) if t <= limit] or [limit]
    cfg.define_knob("threads", opts, default=64 if 64 in opts else opts[-1])
    return schedule_gpu_generic(outs, target, threads=cfg["threads"].val)


# ------------------------------------------------------------------ softmax, layer norm
def schedule_row_reduce_gpu(outs: list[Tensor], target: Any, cfg: Any = None) -> Any:
    """Softmax (last axis) and layer norm: one block per row; the row's reductions (max and
    sum; sum and squared deviations) are computed across the block's threads into shared
    memory, then each thread writes its share of the row."""
    cfg = _cfg(cfg, target)
    limit = gpu_threads(target, 1024)
    opts = [t for t in (32, 64, 128, 256) if t <= limit] or [limit]
    cfg.define_knob("threads", opts, default=128 if 128 in opts else opts[-1])
    nt = cfg["threads"].val
    s = te.create_schedule([o.op for o in outs])
    if len(outs) != 1:
        return schedule_gpu_generic(outs, target)
    out = s[outs[0]]
    reductions = [st for st in s.stages if isinstance(st.op, ComputeOp) and st.op.reduce_axis
                  and st.op is not out.op]
    axes = list(out.op.axis)
    nrow = len(reductions[0].op.axis) if reductions else -1
    if (not reductions or out.op.reduce_axis or nrow >= len(axes)
            or any(len(r.op.axis) != nrow for r in reductions)
            or any([_ext(a) for a in r.op.axis] != [_ext(a) for a in axes[:nrow]]
                   for r in reductions)):
        return schedule_gpu_generic(outs, target)
    _inline_others(s, {out.op} | {r.op for r in reductions})
    rows, cols = axes[:nrow], axes[nrow:]
    row = out.fuse(*rows) if len(rows) > 1 else (rows[0] if rows else None)
    col = out.fuse(*cols) if len(cols) > 1 else cols[0]
    ncol = 1
    for a in cols:
        ncol *= _ext(a)
    n = min(nt, ncol)
    co, ci = out.split(col, factor=n)
    if row is None:
        return schedule_gpu_generic(outs, target)
    _bind(out, row, "blockIdx.x")
    _bind(out, ci, "threadIdx.x")
    for r in reductions:
        r.compute_at(out, row)
        red = list(r.op.reduce_axis)
        k = r.fuse(*red) if len(red) > 1 else red[0]
        ko, ki = r.split(k, factor=n)
        _bind(r, ki, "threadIdx.x")
    return s


# ------------------------------------------------------------------------ registration
#: (graph op, schedule template) of the GPU strategies every GPU target gets
GPU_STRATEGIES = (
    ("conv2d", "schedule_conv2d_gpu", "NCHW conv2d: shared input/weight tiles, register tile"),
    ("dense", "schedule_dense_gpu", "dense: shared tiles, vthreads, register tile; GEMV "
                                    "by cross-thread reduction"),
    ("matmul", "schedule_dense_gpu", "2-d matmul as dense"),
    ("max_pool2d", "schedule_pool_gpu", "one output per thread"),
    ("avg_pool2d", "schedule_pool_gpu", "one output per thread"),
    ("global_avg_pool2d", "schedule_pool_gpu", "cross-thread for large windows"),
    ("softmax", "schedule_row_reduce_gpu", "a block per row, cross-thread max and sum"),
    ("log_softmax", "schedule_row_reduce_gpu", "a block per row, cross-thread max and sum"),
    ("layer_norm", "schedule_row_reduce_gpu", "a block per row, cross-thread moments"),
)


def graph_compute(ins: Any, attrs: Any, out: Any) -> Any:
    """The GPU strategies compute with the graph op's own TE compute (this reference only
    names that choice; the compiler builds the group's TE from the op registry)."""
    raise NotImplementedError("GPU strategies use the op's registered compute")


def register_gpu_strategies(register: Any, target: Any, priority: int = 5) -> None:
    """Register core's GPU templates for `target` (a no-op for non-GPU targets). A GPU
    plugin calls this from its `register_strategies` hook; it may register its own at a
    higher priority for any op."""
    from ..plugins import Strategy
    from ..tir.transform.pipeline import is_gpu

    if not is_gpu(target):
        return
    for op, sched, what in GPU_STRATEGIES:
        register(Strategy(op, "gpu", f"{__name__}:graph_compute", f"{__name__}:{sched}",
                          priority=priority, description=what))
