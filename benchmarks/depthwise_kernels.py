"""Depthwise NCHW[x]c kernels of the mobile models alone: the zero padding read inline vs a
padded copy first (`-depthwise-pad=inline|copy`, issue 15).

    python benchmarks/depthwise_kernels.py [--fifo] [--reps 15]

Each shape (MobileNetV2's, EfficientNet-B0's SiLU and 5x5 layers, ShuffleNetV2's 4-lane
blocks; bias + epilogue fused) is built for `llvm -num-threads=1` with both options, checked
against numpy, then timed interleaved (3 calls per sample, warm caches, medians); ms."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import _Fifo  # noqa: E402

# channels, input size, kernel, stride, block, epilogue
SHAPES = [(32, 112, 3, 1, 16, "clip"), (96, 112, 3, 2, 32, "clip"), (144, 56, 3, 1, 16, "clip"),
          (144, 56, 3, 2, 16, "clip"), (192, 28, 3, 1, 32, "clip"), (384, 14, 3, 1, 32, "clip"),
          (960, 7, 3, 1, 32, "clip"), (96, 112, 3, 2, 32, "silu"), (144, 56, 5, 2, 16, "silu"),
          (240, 28, 5, 1, 16, "silu"), (116, 28, 3, 2, 4, "none"), (116, 14, 3, 1, 4, "none")]
MODES = ("copy", "inline")


def build(c: int, h: int, k: int, s: int, bn: int, epi: str, mode: str):
    import tensorforge
    from tensorforge import te
    from tensorforge.ops import nn_blocked
    from tensorforge.target import Target
    from tensorforge_llvm.strategies import schedule_depthwise_nchwc

    target = Target.coerce(f"llvm -num-threads=1 -depthwise-pad={mode}")
    x = te.placeholder((1, c // bn, h, h, bn), name="x")
    w = te.placeholder((c // bn, 1, k, k, 1, bn), name="w")
    b = te.placeholder((c,), name="b")
    y = nn_blocked.depthwise_conv2d_nchwc(x, w, s, (k // 2,) * 4)

    def epilogue(n, q, i, j, r):
        v = y[n, q, i, j, r] + b[q * bn + r]
        if epi == "clip":
            return te.min_expr(te.max_expr(v, te.const(0.0, "float32")),
                               te.const(6.0, "float32"))
        return v * te.sigmoid(v) if epi == "silu" else v

    z = te.compute(y.shape, epilogue, name=epi, tag="elemwise")
    return tensorforge.build(schedule_depthwise_nchwc([z], target), [x, w, b, z], target=target)


def reference(xv, wv, bv, k: int, s: int, bn: int, epi: str) -> np.ndarray:
    from tensorforge.ops import pack_nchwc
    from tensorforge.ops import reference as r

    out = r.conv2d_nchw(xv, wv, s, (k // 2,) * 4, groups=xv.shape[1]) + bv[None, :, None, None]
    out = np.clip(out, 0, 6) if epi == "clip" else out / (1 + np.exp(-out)) if epi == "silu" \
        else out
    return pack_nchwc(out, bn)


def main() -> None:
    from tensorforge.ops import pack_nchwc

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fifo", action="store_true")
    ap.add_argument("--reps", type=int, default=15)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"load (1 min) {os.getloadavg()[0]:.1f}")
    print("| depthwise (C, input, k, stride, block, epilogue) | copy ms | inline ms | copy / "
          "inline |")
    print("|---|---|---|---|")
    for c, h, k, s, bn, epi in SHAPES:
        xv = rng.standard_normal((1, c, h, h)).astype("float32")
        wv = rng.standard_normal((c, 1, k, k)).astype("float32")
        bv = rng.standard_normal(c).astype("float32")
        ref = reference(xv, wv, bv, k, s, bn, epi)
        wp = np.ascontiguousarray(wv.reshape(c // bn, bn, 1, k, k).transpose(0, 2, 3, 4, 1))
        args_ = [pack_nchwc(xv, bn), wp[:, :, :, :, None, :], bv]
        fns = []
        for mode in MODES:
            f = build(c, h, k, s, bn, epi, mode)
            out = np.full(ref.shape, np.nan, "float32")
            f(*args_, out)
            np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
            fns.append((f, out))
        times: list[list[float]] = [[] for _ in MODES]
        with _Fifo(args.fifo):
            for _ in range(args.reps):
                for i, (f, out) in enumerate(fns):
                    t = time.perf_counter()
                    for _ in range(3):
                        f(*args_, out)
                    times[i].append((time.perf_counter() - t) / 3)
        a, b = (statistics.median(t) * 1e3 for t in times)
        print(f"| {c}, {h}x{h}, {k}x{k}, s{s}, {bn}c, {epi} | {a:.3f} | {b:.3f} | {a / b:.2f} |")


if __name__ == "__main__":
    main()
