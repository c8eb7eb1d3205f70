"""Packed dense kernels (`dense_packed`, llvm) in GFLOP/s at 1 thread (issue 13).

    python benchmarks/dense_kernels.py [--tiles def,4x3,6x2] [--shapes gpt2] [--rounds 7] [--fifo]
    python benchmarks/dense_kernels.py --model gpt2 [--fifo]

Isolated (the default): each of a model's dense shapes (`--shapes gpt2`: 128 rows x 768 ->
2304 / 768 / 3072, 3072 -> 768 and the LM head 768 -> 50257; `vit`: 197 rows) with a bias
epilogue, weights packed as the layout pass packs them, compiled once per register tile of
`--tiles` (`def`: the default rule, `strategies._dense_tile`; `RxP`: R rows x P panels);
each checked against numpy, then `--rounds` interleaved rounds (the order alternating) of
about 1 GFLOP each; medians. `--model NAME`: the zoo model's dense kernels in the compiled
model (`CompiledModel.profile`, kernels timed one by one), summed per shape.
`--fifo`: under SCHED_FIFO (root), as `families_vs_ort.py --fifo`.
"""

from __future__ import annotations

import argparse
import collections
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, _Fifo  # noqa: E402

SHAPES = {  # (rows, K, N, panel width): the panel widths `layout_nchwc.dense_block` picks
    "gpt2": [(128, 768, 2304, 32), (128, 768, 768, 32), (128, 768, 3072, 32),
             (128, 3072, 768, 32), (128, 768, 50257, 16)],
    "vit": [(197, 768, 2304, 32), (197, 768, 3072, 32), (197, 3072, 768, 32)],
}


def build(m: int, k: int, n: int, bn: int, tile: tuple[int, int] | None):
    """The kernel (dense + bias) with register tile `tile` (None: the default), its
    arguments, checked against numpy, and its flops."""
    import tensorforge
    import tensorforge_llvm.strategies as strategies
    from tensorforge import te
    from tensorforge.graph.passes.layout_nchwc import RAGGED_PANEL_ROUND
    from tensorforge.ops.nn_blocked import dense_packed
    from tensorforge.target import Target

    panels = -(-n // bn)
    if n % bn and panels >= RAGGED_PANEL_ROUND * 8:
        panels = -(-panels // RAGGED_PANEL_ROUND) * RAGGED_PANEL_ROUND
    d = te.placeholder((m, k), name="d")
    w = te.placeholder((panels, k, bn), name="w")
    b = te.placeholder((n,), name="b")
    y = dense_packed(d, w, units=n if n % bn else None)
    z = te.compute(y.shape, lambda i, j: y[i, j] + b[j], name="bias", tag="elemwise")
    target = Target.coerce("llvm -num-threads=1")
    rule = strategies._dense_tile
    if tile:
        strategies._dense_tile = lambda *_: tile
    try:
        f = tensorforge.build(strategies.schedule_dense_packed([z], target), [d, w, b, z],
                              target=target)
    finally:
        strategies._dense_tile = rule
    rng = np.random.default_rng(0)
    dv = rng.standard_normal((m, k)).astype("float32")
    wv = rng.standard_normal((n, k)).astype("float32")
    wpad = np.zeros((panels * bn, k), "float32")
    wpad[:n] = wv
    args = (dv, np.ascontiguousarray(wpad.reshape(panels, bn, k).transpose(0, 2, 1)),
            rng.standard_normal(n).astype("float32"), np.zeros((m, n), "float32"))
    f(*args)
    np.testing.assert_allclose(args[3], dv @ wv.T + args[2], rtol=1e-3, atol=1e-3)
    return f, args, 2.0 * m * n * k


def isolated(shapes: str, tiles: list[str], rounds: int, fifo: bool) -> None:
    print("| shape (rows x K -> N) | " + " | ".join(f"{t} GFLOP/s" for t in tiles) + " |")
    print("|---|" + "---|" * len(tiles))
    for m, k, n, bn in SHAPES[shapes]:
        cases = [build(m, k, n, bn, None if t == "def" else
                       tuple(int(v) for v in t.split("x"))) for t in tiles]
        rates: list[list[float]] = [[] for _ in cases]
        with _Fifo(fifo):
            for r in range(rounds):
                order = range(len(cases)) if r % 2 == 0 else reversed(range(len(cases)))
                for i in order:
                    f, args, flops = cases[i]
                    reps = max(2, int(1e9 / flops))
                    t0 = time.perf_counter()
                    for _ in range(reps):
                        f(*args)
                    rates[i].append(flops / ((time.perf_counter() - t0) / reps) / 1e9)
        print(f"| {m} x {k} -> {n} | "
              + " | ".join(f"{statistics.median(r):.0f}" for r in rates) + " |")


def in_model(name: str, fifo: bool) -> None:
    import tensorforge
    from tensorforge_onnx import models

    path = CACHE / f"zoo_{name}.onnx"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        models.save(name, path)
    x = models.example_inputs(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cm = tensorforge.compile(str(path), "llvm -num-threads=1")
    with _Fifo(fifo):
        prof = cm.profile(x, repeat=10)
    vals = cm.desc["values"]
    per: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for i, k in enumerate(cm.desc["kernels"]):
        if k["master"] != "dense_packed":
            continue
        a, y = vals[k["args"][0]]["shape"], vals[k["args"][-1]]["shape"]
        m, kk, n = math.prod(a[:-1]), a[-1], y[-1]
        row = per[f"{m} x {kk} -> {n}"]
        row[0] += prof[i]["median"]
        row[1] += 2.0 * m * kk * n
        row[2] += 1
    total = sum(p["median"] for p in prof)
    print(f"{name}: all kernels {total * 1e3:.1f} ms, dense "
          f"{sum(r[0] for r in per.values()) * 1e3:.1f} ms")
    print("| shape (rows x K -> N) | kernels | ms | GFLOP/s |\n|---|---|---|---|")
    for label, (t, flops, count) in per.items():
        print(f"| {label} | {count} | {t * 1e3:.1f} | {flops / t / 1e9:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="gpt2", choices=sorted(SHAPES))
    ap.add_argument("--tiles", default="def,4x3,6x2,14x1")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--model", default="")
    ap.add_argument("--fifo", action="store_true")
    args = ap.parse_args()
    if args.model:
        return in_model(args.model, args.fifo)
    return isolated(args.shapes, args.tiles.split(","), args.rounds, args.fifo)


if __name__ == "__main__":
    main()
