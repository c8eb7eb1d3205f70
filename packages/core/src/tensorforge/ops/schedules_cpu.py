"""Hand-written CPU schedules that reach a good share of the machine's FMA peak.

Each function declares the computation (placeholders + TE compute) and returns
``(schedule, args)`` with the outputs last, ready for ``tensorforge.build(s, args, target)``.
They are what `benchmarks/` times and what the tests check against numpy: each is a tunable
template of `templates_cpu.py` at one fixed config (``cpu_tiles``, the hand register tiles,
lives there too: the templates' default configs use them).

The shape of both is the classic register-blocked micro-kernel: an accumulator tile of
``rows x vec`` lanes lives in registers (``cache_write(..., "local")`` computed at the output
tile), the reduction runs outside it, one operand is broadcast per row and the other is a
contiguous vector of a packed layout, so every inner step is ``rows * vec / lanes`` independent
vector FMAs.
"""

from __future__ import annotations

from typing import Any

from ..autotune.space import ConfigSpace
from .templates_cpu import conv2d_nchwc_template, cpu_tiles, matmul_packed_template

__all__ = ["cpu_tiles", "schedule_conv2d_nchwc", "schedule_matmul_packed"]


def _fixed(template_fn: Any, workload: tuple, knobs: dict[str, Any]) -> Any:
    """The config of `template_fn`'s space with the given knob values (the rest default)."""
    space = ConfigSpace(None)
    template_fn(space, *workload)
    values = space.get(space.default_index).values()
    values.update(knobs)
    return space.from_json({"knobs": values})


def schedule_matmul_packed(M: int, N: int, K: int, bn: int = 32, mr: int = 8, ku: int = 4,
                           dtype: str = "float32", parallel: bool = True) -> tuple[Any, list]:
    """C[M, N] = A[M, K] @ B[K, N], with B packed into panels ``[N/bn, K, bn]`` in the kernel.

    Loop nest: for each panel of ``bn`` columns (parallel) -> for each block of ``mr`` rows ->
    an ``mr x bn`` accumulator tile in registers, over all of ``K`` (split by ``ku``, unrolled):
    ``mr`` broadcasts of A and ``bn / lanes`` vector loads of the panel feed ``mr * bn / lanes``
    FMAs. Panels outermost keep one panel (``K * bn`` elements, 128 KiB at K=1024, bn=32) in L2
    while the rows of A stream past it. Needs ``M % mr == N % bn == K % ku == 0``.

    This is the tunable template ``matmul_packed.llvm`` at one fixed config.
    """
    if M % mr or N % bn or K % ku:
        raise ValueError(f"schedule_matmul_packed: M={M}, N={N}, K={K} must be multiples of "
                         f"mr={mr}, bn={bn}, ku={ku}")
    workload = (M, N, K, dtype, parallel)
    cfg = _fixed(matmul_packed_template, workload, {
        "tile_m": [M // mr, mr], "tile_n": [N // bn, bn], "tile_k": [K // ku, ku],
        "order": "panel_outer", "unroll_mk": ["unroll", "unroll"]})
    return matmul_packed_template(cfg, *workload)


def schedule_conv2d_nchwc(N: int, C: int, H: int, W: int, OC: int, kh: int = 3, kw: int = 3,
                          stride: int = 1, padding: int = 1, ic_bn: int = 16, oc_bn: int = 16,
                          reg_n: int = 14, dtype: str = "float32", parallel: bool = True,
                          ) -> tuple[Any, list]:
    """2-D convolution in NCHW[ic_bn]c / OIHW[ic_bn]i[oc_bn]o (see ``ops.conv2d_nchwc``).

    Args (call order): data ``(N, C/ic_bn, H, W, ic_bn)``, kernel
    ``(OC/oc_bn, C/ic_bn, kh, kw, ic_bn, oc_bn)``, output ``(N, OC/oc_bn, OH, OW, oc_bn)``.
    The register tile is ``reg_n`` output pixels of a row x ``oc_bn`` output channels (one or
    two vectors); per input channel it does ``reg_n`` broadcasts and ``oc_bn / lanes`` vector
    loads of weights for ``reg_n * oc_bn / lanes`` FMAs. Rows of (batch, oc-block, out row) are
    the parallel loop; padding is its own stage (one pass over the input).

    This is the tunable template ``conv2d_nchwc.llvm`` at one fixed config.
    """
    OW = (W + 2 * padding - kw) // stride + 1
    if C % ic_bn or OC % oc_bn or OW % reg_n:
        raise ValueError(f"schedule_conv2d_nchwc: C={C}, OC={OC}, OW={OW} must be multiples of "
                         f"ic_bn={ic_bn}, oc_bn={oc_bn}, reg_n={reg_n}")
    workload = (N, C, H, W, OC, kh, kw, stride, padding, ic_bn, oc_bn, dtype, parallel)
    cfg = _fixed(conv2d_nchwc_template, workload, {
        "tile_ow": [OW // reg_n, reg_n], "reduce_order": [0, 1, 2, 3],
        "unroll_cw_rx": ["unroll", "none"], "acc_at": "tile"})
    return conv2d_nchwc_template(cfg, *workload)
