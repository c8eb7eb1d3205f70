"""Tunable CPU templates: register-blocked matmul and NCHWc conv2d with knobs, beside the
operators they schedule (they declare knobs through ``autotune``'s space API, the layer
below; the search engine never imports this module, it finds it by the template's name).

Each template's default config (what a fresh ``ConfigSpace`` selects) uses the tiles of
``cpu_tiles(lanes)`` for the target, so tuning starts from the hand choice;
``schedules_cpu.py`` exposes each template at one fixed config for benchmarks and tests.
Data layouts (the packing of ``conv2d_nchwc``) belong to the workload, not to the knobs: every
config of a task reads and writes the same arrays, so its output can be checked against the
default's.
"""

from __future__ import annotations

from typing import Any

from .. import te
from ..autotune.template import template
from .nn_nchwc import conv2d_nchwc
from .schedule_generic import vector_lanes

__all__ = ["conv2d_nchwc_template", "cpu_tiles", "matmul_packed_template"]


def cpu_tiles(lanes: int) -> dict[str, dict[str, int]]:
    """Register tiles that fit the vector register file for float32 vectors of ``lanes``.

    16 lanes (AVX-512, 32 registers): matmul 8 x 32 (16 accumulators), conv 7 pixels x 32
    output channels (14). 8 lanes (AVX2, 16 registers): matmul 4 x 16, conv 4 x 16 (8 each).
    Otherwise (4 lanes: SSE, NEON): 4 x 8 and 7 x 8. Only the 16-lane tiles are tuned (on
    Zen 4); the others are first guesses that keep the accumulators in registers.
    """
    if lanes >= 16:
        return {"matmul": {"mr": 8, "bn": 32, "ku": 4},
                "conv2d": {"ic_bn": 16, "oc_bn": 32, "reg_n": 7}}
    if lanes >= 8:
        return {"matmul": {"mr": 4, "bn": 16, "ku": 4},
                "conv2d": {"ic_bn": 16, "oc_bn": 16, "reg_n": 4}}
    return {"matmul": {"mr": 4, "bn": 8, "ku": 4},
            "conv2d": {"ic_bn": 8, "oc_bn": 8, "reg_n": 7}}


def _fit(extent: int, want: int) -> int:
    """The largest divisor of ``extent`` that is at most ``want``."""
    return max(d for d in range(1, min(extent, want) + 1) if extent % d == 0)


@template("matmul_packed.llvm")
def matmul_packed_template(cfg: Any, M: int, N: int, K: int, dtype: str = "float32",
                           parallel: bool = True) -> tuple[Any, list]:
    """``schedule_matmul_packed`` with knobs: the register tile (``tile_m``: rows,
    ``tile_n``: the panel width ``bn``), the k unroll (``tile_k``), panels or row blocks
    outermost (``order``), and unrolling of the row and k loops in the micro-kernel."""
    hand = cpu_tiles(vector_lanes(cfg.target))["matmul"]
    cfg.define_split("tile_m", M, 2, max_factor=32, default=(-1, _fit(M, hand["mr"])))
    cfg.define_split("tile_n", N, 2, max_factor=64, default=(-1, _fit(N, hand["bn"])))
    cfg.define_split("tile_k", K, 2, max_factor=16, default=(-1, _fit(K, hand["ku"])))
    cfg.define_knob("order", ["panel_outer", "row_outer"], default="panel_outer")
    cfg.define_annotate("unroll_mk", 2, policy="try_unroll", default=["unroll", "unroll"])
    cfg.add_flop(2.0 * M * N * K)
    bn = cfg["tile_n"].size[1]

    A = te.placeholder((M, K), dtype, name="A")
    B = te.placeholder((K, N), dtype, name="B")
    k = te.reduce_axis((0, K), name="k")
    packed = te.compute((N // bn, K, bn), lambda x, y, z: B[y, x * bn + z], name="packedB")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k] * packed[j // bn, k, j % bn], axis=k),
                   name="C")
    s = te.create_schedule(C.op)
    CC = s.cache_write(C, "local")
    mo, mi = cfg["tile_m"].apply(s, s[C], C.op.axis[0])
    no, ni = cfg["tile_n"].apply(s, s[C], C.op.axis[1])
    outer = (no, mo) if cfg["order"].val == "panel_outer" else (mo, no)
    s[C].reorder(*outer, mi, ni)
    s[C].vectorize(ni)
    s[CC].compute_at(s[C], outer[1])
    mc, nc = s[CC].op.axis
    ko, ki = cfg["tile_k"].apply(s, s[CC], s[CC].op.reduce_axis[0])
    s[CC].reorder(ko, ki, mc, nc)
    s[CC].vectorize(nc)
    cfg["unroll_mk"].apply(s, s[CC], [mc, ki])
    x, _, z = s[packed].op.axis
    s[packed].vectorize(z)
    if parallel:
        s[C].parallel(outer[0])
        s[packed].parallel(x)
    return s, [A, B, C]


_REDUCE_ORDERS = [(0, 1, 2, 3), (1, 2, 0, 3), (0, 3, 1, 2), (1, 0, 2, 3)]


@template("conv2d_nchwc.llvm")
def conv2d_nchwc_template(cfg: Any, N: int, C: int, H: int, W: int, OC: int, kh: int = 3,
                          kw: int = 3, stride: int = 1, padding: int = 1, ic_bn: int = 16,
                          oc_bn: int = 16, dtype: str = "float32", parallel: bool = True,
                          ) -> tuple[Any, list]:
    """``schedule_conv2d_nchwc`` (layout NCHW[ic_bn]c / OIHW[ic_bn]i[oc_bn]o, part of the
    workload) with knobs: output pixels per register tile (``tile_ow``), the order of the
    reduction loops (``reduce_order`` over ico, ry, rx, ici), unrolling of the pixel and kw
    loops (``unroll_cw_rx``), and where the accumulator tile lives (``acc_at``)."""
    OH = (H + 2 * padding - kh) // stride + 1
    OW = (W + 2 * padding - kw) // stride + 1
    hand = cpu_tiles(vector_lanes(cfg.target))["conv2d"]
    cfg.define_split("tile_ow", OW, 2, max_factor=32, default=(-1, _fit(OW, hand["reg_n"])))
    cfg.define_reorder("reduce_order", 4, policy="candidate", candidates=_REDUCE_ORDERS,
                       default=_REDUCE_ORDERS[0])
    cfg.define_annotate("unroll_cw_rx", 2, policy="try_unroll", default=["unroll", "none"])
    cfg.define_knob("acc_at", ["tile", "row"], default="tile")
    cfg.add_flop(2.0 * N * OC * OH * OW * C * kh * kw)
    if C % ic_bn or OC % oc_bn:
        raise ValueError(f"conv2d_nchwc template: C={C}, OC={OC} must be multiples of "
                         f"ic_bn={ic_bn}, oc_bn={oc_bn}")
    data = te.placeholder((N, C // ic_bn, H, W, ic_bn), dtype, name="data")
    kernel = te.placeholder((OC // oc_bn, C // ic_bn, kh, kw, ic_bn, oc_bn), dtype,
                            name="kernel")
    out = conv2d_nchwc(data, kernel, stride, padding)
    s = te.create_schedule(out.op)
    padded = out.op.input_tensors[0]
    if padded.op is not data.op:
        pn, pc, ph, pw, pb = s[padded].op.axis
        s[padded].vectorize(pb)
        if parallel:
            s[padded].parallel(s[padded].fuse(pn, pc, ph))
    CC = s.cache_write(out, "local")
    n, oc, oh, ow, ob = s[out].op.axis
    owo, owi = cfg["tile_ow"].apply(s, s[out], ow)
    s[out].reorder(n, oc, oh, owo, owi, ob)
    s[out].vectorize(ob)
    rows = s[out].fuse(n, oc, oh)
    if parallel:
        s[out].parallel(rows)
    s[CC].compute_at(s[out], owo if cfg["acc_at"].val == "tile" else rows)
    _, _, _, cw, cb = s[CC].op.axis
    red = cfg["reduce_order"].apply(s, s[CC], list(s[CC].op.reduce_axis))
    s[CC].reorder(*red, cw, cb)
    s[CC].vectorize(cb)
    cfg["unroll_cw_rx"].apply(s, s[CC], [cw, s[CC].op.reduce_axis[2]])
    return s, [data, kernel, out]
