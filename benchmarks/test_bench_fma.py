"""FMA peak calibration: independent vector FMA chains, built by our compiler, per thread count.

This is the denominator of "% of peak" (conv2d). The baseline column is empty; the number is
GFLOP/s of the kernel itself."""

from __future__ import annotations

from _common import Row, quartiles, vector_lanes
from _fma import peak_kernel


def test_fma_peak(benchmark, llvm_target, report, rounds, threads):
    run, flops = peak_kernel(threads, vector_lanes())
    run()
    benchmark.extra_info.update(threads=threads, lanes=vector_lanes(), flops=flops)
    benchmark.pedantic(run, rounds=rounds, iterations=1, warmup_rounds=1)
    stats = getattr(benchmark, "stats", None)
    times = list(stats.stats.data) if stats is not None else []
    if not times:
        return
    rates = [flops / t / 1e9 for t in times]
    row = report.add(Row(f"FMA peak ({vector_lanes()} lanes)", threads, "GFLOP/s",
                         quartiles(rates)))
    benchmark.extra_info["gflops_median"] = row.ours[1]
