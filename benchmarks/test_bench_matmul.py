"""Matmul 1024^3 float32: our packed, tiled, vectorized, parallel schedule vs numpy (OpenBLAS)
at the same thread count, interleaved round by round. Goal: >= 70% of numpy's GFLOP/s."""

from __future__ import annotations

import numpy as np
import pytest
from _common import SEED, Row, blas_threads, interleaved, quartiles, vector_lanes

import tensorforge
from tensorforge.ops.schedules_cpu import cpu_tiles, schedule_matmul_packed

M = N = K = 1024
FLOPS = 2.0 * M * N * K


def test_matmul_vs_numpy(benchmark, llvm_target, report, rounds, threads):
    pytest.importorskip("threadpoolctl")
    tiles = cpu_tiles(vector_lanes())["matmul"]
    s, args = schedule_matmul_packed(M, N, K, **tiles)
    f = tensorforge.build(s, args, target=f"llvm -num-threads={threads}")
    rng = np.random.default_rng(SEED)
    a = rng.standard_normal((M, K), dtype="float32")
    b = rng.standard_normal((K, N), dtype="float32")
    c = np.zeros((M, N), "float32")
    with blas_threads(threads):
        ref = a @ b
        f(a, b, c)  # correctness before timing
        np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
        ours, base = interleaved(benchmark, lambda: f(a, b, c), lambda: a @ b, rounds,
                                 settle=0.3 if threads > 1 else 0.0)
    if not ours:
        return
    ratio = quartiles([bt / ot for ot, bt in zip(ours, base)])
    row = report.add(Row(
        f"matmul {M}^3 f32 (mr={tiles['mr']}, bn={tiles['bn']})", threads, "GFLOP/s",
        quartiles([FLOPS / t / 1e9 for t in ours]), "numpy",
        quartiles([FLOPS / t / 1e9 for t in base]), ratio, ">= 70% of numpy", ratio[1] >= 0.7,
        dict(tiles)))
    benchmark.extra_info.update(threads=threads, tiles=tiles, gflops=row.ours[1],
                                numpy_gflops=row.baseline[1], ratio=ratio[1])
