"""Compiler speed: lowering + LLVM codegen + JIT of the 1024^3 matmul schedule (aim: < 0.5 s).

The schedule is declared afresh before every round, outside the timed region."""

from __future__ import annotations

import time

from _common import Row, quartiles, vector_lanes

import tensorforge
from tensorforge.ops.schedules_cpu import cpu_tiles, schedule_matmul_packed


def _fresh():
    s, args = schedule_matmul_packed(1024, 1024, 1024, **cpu_tiles(vector_lanes())["matmul"])
    return (s, args), {}


def test_compile_matmul(benchmark, llvm_target, report, rounds):
    lower_times: list[float] = []

    def compile_once(s, args):
        t = time.perf_counter()
        func = tensorforge.lower(s, args)
        lower_times.append(time.perf_counter() - t)
        return tensorforge.build([func], target="llvm -num-threads=1")

    benchmark.pedantic(compile_once, setup=_fresh, rounds=max(rounds // 2, 5), warmup_rounds=1)
    stats = getattr(benchmark, "stats", None)
    times = list(stats.stats.data) if stats is not None else []
    if not times:
        return
    total = quartiles(times)
    lower = quartiles(lower_times[-len(times):])
    report.add(Row("compile matmul (lower + codegen + JIT)", 1, "s", total, "lower only",
                   lower, None, "< 0.5 s", total[1] < 0.5))
    benchmark.extra_info.update(median_s=total[1], lower_median_s=lower[1])
