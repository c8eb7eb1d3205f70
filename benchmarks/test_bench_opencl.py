"""OpenCL on pocl next to llvm (issue 9): a pytest-benchmark wrapper of `opencl_vs_llvm.py`
(the GPU dense and conv templates tuned for `opencl`, timed by device events, interleaved with
the llvm templates on the same CPU). Tuning records are resumed from
`results/opencl_tuning.db`; `--bench-rounds` sets the rounds."""

from __future__ import annotations

import pytest
from _common import Row, quartiles
from opencl_vs_llvm import WORKLOADS, prepare


@pytest.mark.opencl
@pytest.mark.parametrize("name", list(WORKLOADS))
def test_opencl_vs_llvm(benchmark, llvm_target, opencl_target, report, rounds, threads, name):
    w = prepare(name, 32, threads)
    base: list[float] = []
    mine: list[float] = []

    def setup() -> None:
        base.append(w["llvm"]())

    def ours() -> None:
        mine.append(w["opencl"]())

    benchmark.pedantic(ours, setup=setup, rounds=rounds, iterations=1, warmup_rounds=0)
    flop = w["flop"]
    ratio = quartiles([b / m for m, b in zip(mine, base)])
    report.add(Row(f"{name} opencl (pocl, {w['trials']} trials) vs llvm", threads, "GFLOP/s",
                   quartiles([flop / t / 1e9 for t in mine]), "llvm template",
                   quartiles([flop / t / 1e9 for t in base]), ratio, "report", None))
