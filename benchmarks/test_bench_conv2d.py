"""ResNet-18's 3x3 conv (N=1, C=OC=64, 56x56, pad 1, stride 1; 231 MFLOP) in NCHW[x]c with a
hand schedule, against the FMA peak measured in the same run (the calibration kernel and the
conv interleaved round by round). Goal: >= 60% of peak on 1 thread. Layout packing of the
input and weights happens once, outside the timed region; padding is inside."""

from __future__ import annotations

import numpy as np
from _common import SEED, Row, interleaved, quartiles, vector_lanes
from _fma import peak_kernel

import tensorforge
from tensorforge.ops import pack_nchwc, pack_oihw_xi_yo, unpack_nchwc
from tensorforge.ops.schedules_cpu import cpu_tiles, schedule_conv2d_nchwc

N, C, H, W, OC, KH, KW = 1, 64, 56, 56, 64, 3, 3
FLOPS = 2.0 * N * OC * H * W * C * KH * KW


def _reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[:, :, i:i + H, j:j + W] for i in range(KH) for j in range(KW)], 2)
    return np.einsum("nckhw,ock->nohw", cols, w.reshape(OC, C, KH * KW), optimize=True)


def test_conv2d_resnet18_3x3(benchmark, llvm_target, report, rounds, threads):
    lanes = vector_lanes()
    tiles = cpu_tiles(lanes)["conv2d"]
    s, args = schedule_conv2d_nchwc(N, C, H, W, OC, KH, KW, 1, 1, **tiles)
    f = tensorforge.build(s, args, target=f"llvm -num-threads={threads}")
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((N, C, H, W), dtype="float32")
    w = rng.standard_normal((OC, C, KH, KW), dtype="float32")
    data = pack_nchwc(x, tiles["ic_bn"])
    kernel = pack_oihw_xi_yo(w, tiles["ic_bn"], tiles["oc_bn"])
    out = np.zeros((N, OC // tiles["oc_bn"], H, W, tiles["oc_bn"]), "float32")
    f(data, kernel, out)  # correctness before timing
    ref = _reference(x, w)
    np.testing.assert_allclose(unpack_nchwc(out), ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
    peak, peak_flops = peak_kernel(threads, lanes, flops_per_thread=2e8)
    ours, base = interleaved(benchmark, lambda: f(data, kernel, out), peak, rounds)
    if not ours:
        return
    ratio = quartiles([(FLOPS / ot) / (peak_flops / bt) for ot, bt in zip(ours, base)])
    row = report.add(Row(
        f"conv2d 3x3 64->64 56x56 NCHW{tiles['ic_bn']}c (ow {tiles['reg_n']} x oc "
        f"{tiles['oc_bn']})", threads, "GFLOP/s", quartiles([FLOPS / t / 1e9 for t in ours]),
        "FMA peak", quartiles([peak_flops / t / 1e9 for t in base]), ratio,
        ">= 60% of peak" + (" (goal on 1 thread)" if threads != 1 else ""),
        ratio[1] >= 0.6 if threads == 1 else None, dict(tiles)))
    benchmark.extra_info.update(threads=threads, tiles=tiles, gflops=row.ours[1],
                                peak_gflops=row.baseline[1], fraction_of_peak=ratio[1])
