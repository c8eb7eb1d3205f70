"""A schedule rule's constant, A/B inside one process: each model compiled once per value and
profiled in interleaved rounds (sum of per-kernel medians, `CompiledModel.profile`), and
timed whole (median of 5 runs a round; both figures are medians over the rounds).

    python benchmarks/rule_ab.py resnext50_32x4d,resnet50 \
        tensorforge_llvm.conv1x1.GEMM_ONE_BLOCK_MAX_OW_16=14,28 [--rounds 5] [--fifo]
        [--target "llvm -num-threads=1 -mcpu=znver3"]

Models come from the cache of `export_torchvision.py`; target `llvm -num-threads=1`.
`--fifo`: the timed rounds under SCHED_FIFO as `families_vs_ort.py --fifo` (root)."""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, _Fifo, our_kernel_ms  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import tensorforge

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models")
    ap.add_argument("setting", help="module.CONSTANT=v1,v2,... (ints or floats)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--target", default="llvm -num-threads=1")
    ap.add_argument("--fifo", action="store_true")
    args = ap.parse_args(argv)
    name, _, values = args.setting.partition("=")
    module, _, const = name.rpartition(".")
    mod = importlib.import_module(module)
    vals = [float(v) if "." in v else int(v) for v in values.split(",")]
    for model in args.models.split(","):
        compiled = {}
        for v in vals:
            setattr(mod, const, v)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled[v] = tensorforge.compile(str(CACHE / f"{model}.onnx"), args.target)
        x = compiled[vals[0]].random_inputs()
        sums: dict = {v: [] for v in vals}
        walls: dict = {v: [] for v in vals}
        with _Fifo(args.fifo):
            for r in range(args.rounds):
                for v in vals if r % 2 == 0 else vals[::-1]:
                    sums[v].append(our_kernel_ms(compiled[v], x, 3))
                    walls[v].append(_wall_ms(compiled[v], x))
        print(model, "  ".join(f"{const}={v}: kernels {statistics.median(sums[v]):.2f} ms, "
                               f"run {statistics.median(walls[v]):.2f} ms" for v in vals),
              flush=True)
    return 0


def _wall_ms(cm, x: dict, runs: int = 5) -> float:
    cm.run(x)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        cm.run(x)
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


if __name__ == "__main__":
    sys.exit(main())
