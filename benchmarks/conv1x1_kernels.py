"""The 1x1 convolution kernels of a model, direct vs GEMM form (issue 15), in one process.

    python benchmarks/conv1x1_kernels.py [--model resnet50] [--rounds 9] [--fifo] [--after auto]

Compiles the model (from the cache of `export_torchvision.py`) twice at 1 thread:
`-conv1x1=direct`, and `-conv1x1=gemm` (every 1x1 conv in the GEMM form) or, with `--after
auto`, the default rule; with `--after flat`, `-conv1x1-flat=off` (rows) vs the default
`auto` (1x1 stride-1 convs over one row of H*W pixels where the rule says), `flat-on` vs
`on`. Checks both against ONNX Runtime, profiles
them interleaved (`CompiledModel.profile`, `--rounds` rounds of 5 executions, the order
alternating) and prints per distinct 1x1 conv shape the summed median kernel times and
GFLOP/s of each (2 x output elements x input channels / time), the sums over all 1x1
kernels and over the model's kernels. `--fifo`: profile under SCHED_FIFO as
`families_vs_ort.py --fifo` (root).

`--isolated B`: instead, each of ResNet-50's 1x1 conv shapes alone (bias + relu epilogue,
NCHW[B]c, both blocks B), direct vs the default rule, warm caches, best of 7 timings.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, _Fifo, _session  # noqa: E402

RESNET50_1X1 = [(64, 256, 56, 1), (256, 64, 56, 1), (256, 128, 56, 1), (128, 512, 28, 1),
                (512, 128, 28, 1), (512, 256, 28, 1), (256, 1024, 14, 1), (1024, 256, 14, 1),
                (1024, 512, 14, 1), (512, 2048, 7, 1), (2048, 512, 7, 1), (256, 512, 56, 2),
                (512, 1024, 28, 2), (1024, 2048, 14, 2)]
FORMS = ("direct", "gemm")  # the second: `--after` (gemm: every 1x1 conv; auto: the rule)


def pointwise_kernels(cm) -> dict[int, tuple[str, float]]:
    """{kernel index: (shape label, flops)} of the model's 1x1 conv kernels."""
    vals = cm.desc["values"]
    out = {}
    for i, k in enumerate(cm.desc["kernels"]):
        if k["master"] != "conv2d_nchwc":
            continue
        x, w, y = (vals[k["args"][0]]["shape"], vals[k["args"][1]]["shape"],
                   vals[k["args"][-1]]["shape"])
        if len(w) != 6 or w[2:4] != [1, 1]:
            continue
        c, o = w[1] * w[4], y[1] * y[4]
        stride = x[2] // y[2] if y[2] else 1
        label = f"{c}->{o} {x[2]}x{x[3]} s{stride}"
        out[i] = (label, 2.0 * math.prod(y) * c)
    return out


def isolated(bn: int, fifo: bool) -> None:
    """ResNet-50's 1x1 shapes one at a time in NCHW[bn]c: direct vs `-conv1x1=auto`."""
    import time

    import tensorforge
    from tensorforge import te
    from tensorforge.ops.nn_nchwc import conv2d_nchwc
    from tensorforge.target import Target
    from tensorforge_llvm.strategies import schedule_conv2d_nchwc

    rng = np.random.default_rng(0)
    print(f"| 1x1 conv, NCHW{bn}c (C->O, input HxW, stride) | direct GFLOP/s | auto GFLOP/s |")
    print("|---|---|---|")
    for c, o, h, s in RESNET50_1X1:
        d = te.placeholder((1, c // bn, h, h, bn), name="d")
        k = te.placeholder((o // bn, c // bn, 1, 1, bn, bn), name="k")
        b = te.placeholder((o,), name="b")
        y = conv2d_nchwc(d, k, s, 0)
        z = te.compute(y.shape, lambda n, q, i, j, r, y=y, b=b: te.max_expr(
            y[n, q, i, j, r] + b[q * bn + r], te.const(0.0, "float32")), name="relu",
            tag="elemwise")
        args = [rng.standard_normal([int(e.value) for e in t.shape]).astype("float32")
                for t in (d, k, b, z)]
        flops = 2.0 * c * o * int(z.shape[2].value) * int(z.shape[3].value)
        rates, outs = [], []
        for policy in ("direct", "auto"):
            target = Target.coerce(f"llvm -num-threads=1 -conv1x1={policy}")
            f = tensorforge.build(schedule_conv2d_nchwc([z], target), [d, k, b, z],
                                  target=target)
            f(*args)
            outs.append(args[3].copy())
            reps = max(3, int(3e8 / flops))
            best = float("inf")
            with _Fifo(fifo):
                for _ in range(7):
                    t0 = time.perf_counter()
                    for _ in range(reps):
                        f(*args)
                    best = min(best, (time.perf_counter() - t0) / reps)
            rates.append(flops / best / 1e9)
        np.testing.assert_allclose(outs[1], outs[0], rtol=1e-4, atol=1e-4)
        print(f"| {c}->{o} {h}x{h} s{s} | {rates[0]:.0f} | {rates[1]:.0f} |")


def main() -> None:
    import tensorforge

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--fifo", action="store_true")
    ap.add_argument("--after", default="gemm", choices=("gemm", "auto", "flat", "flat-on"))
    ap.add_argument("--isolated", type=int, default=0, help="block size; see the docstring")
    args = ap.parse_args()
    if args.isolated:
        return isolated(args.isolated, args.fifo)
    path = CACHE / f"{args.model}.onnx"
    sess = _session(path, 1)
    inp = sess.get_inputs()[0]
    x = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    ref = sess.run(None, x)[0]
    models = {}
    for form in FORMS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            policy = form if form == "direct" else args.after
            opts = f"-conv1x1={policy}" if not args.after.startswith("flat") else (
                "-conv1x1-flat=" + ("off" if form == "direct" else (
                    "on" if args.after == "flat-on" else "auto")))
            cm = tensorforge.compile(str(path), f"llvm -num-threads=1 {opts}")
        err = float(np.max(np.abs(cm.run(x)[0] - ref)) / np.max(np.abs(ref)))
        print(f"{form}: max |ours - ORT| / max |ORT| = {err:.1e}")
        assert err < 1e-4, err
        models[form] = cm
    times: dict[str, list[list[float]]] = {f: [] for f in FORMS}
    load0 = os.getloadavg()[0]
    with _Fifo(args.fifo):
        for r in range(args.rounds):
            for form in (FORMS if r % 2 == 0 else FORMS[::-1]):
                prof = models[form].profile(x, repeat=5)
                times[form].append([p["median"] for p in prof])
    print(f"load (1 min) {load0:.1f} -> {os.getloadavg()[0]:.1f}; {args.rounds} rounds")
    med = {f: [statistics.median(c) for c in zip(*times[f])] for f in FORMS}
    pw = {f: pointwise_kernels(models[f]) for f in FORMS}
    assert [v[0] for v in pw["direct"].values()] == [v[0] for v in pw["gemm"].values()]
    rows: dict[str, list[float]] = {}
    for (i, (label, flops)), j in zip(pw["direct"].items(), pw["gemm"]):
        row = rows.setdefault(label, [0, 0.0, 0.0, flops])
        row[0] += 1
        row[1] += med["direct"][i]
        row[2] += med["gemm"][j]
    a, b = ("rows", args.after) if args.after.startswith("flat") else (
        "direct", "GEMM" if args.after == "gemm" else "auto")
    print(f"| 1x1 conv (C->O, input HxW, stride) | count | {a} ms | {b} ms | {a} GFLOP/s"
          f" | {b} GFLOP/s |")
    print("|---|---|---|---|---|---|")
    for label, (n, td, tg, flops) in rows.items():
        print(f"| {label} | {n} | {td * 1e3:.3f} | {tg * 1e3:.3f} | {n * flops / td / 1e9:.0f}"
              f" | {n * flops / tg / 1e9:.0f} |")
    fl = sum(f for _, f in pw["direct"].values())
    td = sum(med["direct"][i] for i in pw["direct"])
    tg = sum(med["gemm"][j] for j in pw["gemm"])
    print(f"| **all 1x1** | {len(pw['direct'])} | {td * 1e3:.2f} | {tg * 1e3:.2f} | "
          f"{fl / td / 1e9:.0f} | {fl / tg / 1e9:.0f} |")
    print(f"model kernels: {a} {sum(med['direct']) * 1e3:.2f} ms, "
          f"{b} {sum(med['gemm']) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
