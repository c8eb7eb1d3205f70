"""The index checks' cost in CPU time, for a shared machine: `python benchmarks/index_checks.py`.

The same workloads as `test_bench_checks.py` (which times wall clock under pytest-benchmark),
at one thread, timed with `time.process_time()`: the CPU time this process spends, which a
busy neighbour does not inflate the way it inflates wall time (it still shares caches).
Checked and unchecked builds alternate, `--rounds` rounds of `number` executions each; the
figure is the median of the per-round ratios (unchecked / checked CPU time) with quartiles.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def _quartiles(xs: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(xs, n=4, method="inclusive")
    return q[0], statistics.median(xs), q[2]


def measure(name: str, rounds: int) -> dict[str, Any]:
    from contextlib import ExitStack

    import numpy as np
    from test_bench_checks import _checks, _kernel_runner, _workload, model_runner

    import tensorforge
    from tensorforge.ops.indexing import without_index_checks

    model_name, _, kernel = name.partition(":")
    m, feeds, number = _workload(model_name)
    checked = tensorforge.compile(m, target="llvm -num-threads=1")
    with without_index_checks():
        unchecked = tensorforge.compile(m, target="llvm -num-threads=1")
    np.testing.assert_array_equal(checked.run(feeds)[0], unchecked.run(feeds)[0])
    ta: list[float] = []
    tb: list[float] = []
    with ExitStack() as stack:
        if kernel:
            number *= 50
            a = _kernel_runner(checked, "take", number)
            b = _kernel_runner(unchecked, "take", number)
        else:
            a = model_runner(checked, feeds, number, stack)
            b = model_runner(unchecked, feeds, number, stack)
        a(), b()
        for _ in range(rounds):
            for f, ts in ((a, ta), (b, tb)):
                t0 = time.process_time()
                f()
                ts.append((time.process_time() - t0) / number)
    ratios = [y / x for x, y in zip(ta, tb) if x > 0]
    return {"name": name, "checks": _checks(checked), "checked": _quartiles(ta),
            "unchecked": _quartiles(tb), "ratio": _quartiles(ratios)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=41)
    ap.add_argument("--workloads", default="lstm_lm,lstm_lm:gather,resnet18,embedding,"
                                           "gather_elements")
    args = ap.parse_args()
    from tensorforge.plugins import get_registry

    get_registry()
    print("| workload | checks | checked (CPU, median) | unchecked | unchecked / checked "
          "(q1 / median / q3) |")
    print("|---|---|---|---|---|")
    for w in args.workloads.split(","):
        r = measure(w, args.rounds)
        unit, s = ("us", 1e6) if ":" in w else ("ms", 1e3)
        q = r["ratio"]
        print(f"| {w} | {r['checks']} | {r['checked'][1] * s:.3g} {unit} | "
              f"{r['unchecked'][1] * s:.3g} {unit} | {q[0]:.1%} / **{q[1]:.1%}** / "
              f"{q[2]:.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
