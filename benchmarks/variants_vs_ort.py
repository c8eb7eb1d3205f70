"""Before/after of a code change on whole models: several target variants vs ONNX Runtime,
interleaved in one process (issue 15).

    python benchmarks/variants_vs_ort.py --variants "-depthwise-pad=copy,"  --fifo \
        --models mobilenet_v2,efficientnet_b0 --rounds 21

Each model (the cache of `export_torchvision.py`) is compiled at 1 thread once per variant
(extra target options; the empty string is the default) and loaded in ONNX Runtime. Outputs
are checked against ORT. Then `--rounds` rounds, each one run of every variant and of ORT in
a rotating order; per variant the median of its per-round ratios to ORT's run in that round,
and the sum of its per-kernel medians (`CompiledModel.profile`, interleaved with the other
variants) over ORT's per-node sum (`families_vs_ort.kernel_sums`). `--fifo` as in
`families_vs_ort.py`."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, _Fifo, _session, kernel_sums  # noqa: E402


def compare(name: str, variants: list[str], rounds: int, fifo: bool) -> list[dict]:
    import tensorforge

    path = CACHE / f"{name}.onnx"
    sess = _session(path, 1)
    inp = sess.get_inputs()[0]
    x = {inp.name: np.random.default_rng(0).standard_normal(inp.shape).astype(np.float32)}
    ref = sess.run(None, x)[0]
    models = []
    for v in variants:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cm = tensorforge.compile(str(path), f"llvm -num-threads=1 {v}")
        err = float(np.max(np.abs(cm.run(x)[0] - ref)) / max(np.max(np.abs(ref)), 1e-30))
        models.append((cm, err))
    runners = [lambda cm=cm: cm.run(x) for cm, _ in models] + [lambda: sess.run(None, x)]
    for fn in runners * 2:  # warm
        fn()
    load0 = os.getloadavg()[0]
    times: list[list[float]] = [[] for _ in runners]
    prof: list[list[float]] = [[] for _ in models]
    with _Fifo(fifo):
        for r in range(rounds):
            k = r % len(runners)
            for i in list(range(len(runners)))[k:] + list(range(len(runners)))[:k]:
                t = time.perf_counter()
                runners[i]()
                times[i].append(time.perf_counter() - t)
        for _ in range(max(3, rounds // 4)):
            for i, (cm, _) in enumerate(models):
                prof[i].append(sum(p["median"] for p in cm.profile(x, repeat=5)))
        _, ort_nodes = kernel_sums(models[0][0], path, 1, x, 5)
    rows = []
    for i, (v, (cm, err)) in enumerate(zip(variants, models)):
        rows.append({"model": name, "variant": v or "(default)",
                     "ours_ms": statistics.median(times[i]) * 1e3,
                     "ort_ms": statistics.median(times[-1]) * 1e3,
                     "ratio": statistics.median(a / b for a, b in zip(times[i], times[-1])),
                     "kernel_ratio": statistics.median(prof[i]) * 1e3 / ort_nodes,
                     "kernels": len(cm.desc["kernels"]), "max_rel_err": err,
                     "load": (round(load0, 2), round(os.getloadavg()[0], 2))})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="mobilenet_v2")
    ap.add_argument("--variants", default=",", help="comma list of extra target options")
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--fifo", action="store_true")
    args = ap.parse_args()
    variants = args.variants.split(",")
    print("| model | variant | ours ms | ORT ms | ours / ORT | kernels ours / ORT | kernels "
          "| max rel err | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        for r in compare(name, variants, args.rounds, args.fifo):
            print(f"| {r['model']} | {r['variant']} | {r['ours_ms']:.2f} | {r['ort_ms']:.2f} | "
                  f"{r['ratio']:.3f} | {r['kernel_ratio']:.3f} | {r['kernels']} | "
                  f"{r['max_rel_err']:.1e} | {r['load'][0]}-{r['load'][1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
