"""Per kernel, a model compiled untuned and with a tuning database, profiled in interleaved
rounds in one process: what tuning changed inside the model (docs/tuning.md, "Timing").

    python benchmarks/tuned_kernels.py resnet18 DIR/resnet18.db [--rounds 5] [--fifo]

The model comes from the cache of `export_torchvision.py`; target `llvm -num-threads=1`.
Each round profiles both (`CompiledModel.profile`, 3 runs each); the figures are per-kernel
medians over rounds, their sums first, then the kernels whose medians differ by > 20 us."""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from families_vs_ort import CACHE, _Fifo  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    import tensorforge

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("db")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--target", default="llvm -num-threads=1")
    ap.add_argument("--fifo", action="store_true", help="profile under SCHED_FIFO (root)")
    args = ap.parse_args(argv)
    path = str(CACHE / f"{args.model}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        untuned = tensorforge.compile(path, args.target)
        tuned = tensorforge.compile(path, args.target, tuning_db=args.db)
    x = untuned.random_inputs()
    runs: dict[str, list[list[float]]] = {"untuned": [], "tuned": []}
    with _Fifo(args.fifo):
        for _ in range(args.rounds):
            for name, m in (("untuned", untuned), ("tuned", tuned)):
                runs[name].append([k["median"] for k in m.profile(x, repeat=3)])
    med = {n: [statistics.median(col) * 1e3 for col in zip(*r)] for n, r in runs.items()}
    print(f"{args.model}: sum of kernel medians untuned {sum(med['untuned']):.3f} ms, "
          f"tuned {sum(med['tuned']):.3f} ms ({args.rounds} rounds)")
    for k, a, b in zip(tuned.desc["kernels"], med["untuned"], med["tuned"]):
        if abs(a - b) > 0.02:
            print(f"{k['name'][:45]:45} {a:.3f} -> {b:.3f}  {k['schedule'][-100:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
