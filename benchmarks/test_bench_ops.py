"""Issue 5, operator level: every distinct conv2d / depthwise / dense shape of ResNet-18 and
MobileNetV2 (op + bias, compiled through `tensorforge.compile`), timed against ONNX Runtime
and torch.nn.functional (when installed) and the FMA-peak kernel, interleaved round by round.
The measurement is `tensorforge.bench.suite.measure_op` (shared with `tforge bench`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest
from _suite import pedantic_runner, record

from tensorforge.bench.runner import op_workloads, peak_for
from tensorforge.bench.suite import measure_op


def _workloads(config: pytest.Config) -> list:
    return op_workloads(config.getoption("--bench-quick"), config.getoption("--bench-ops"))


@cache
def _peak(threads: int) -> tuple[Callable[[], None], float]:
    """The FMA-peak kernel, built once per thread count in the session."""
    return peak_for(threads)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "workload" in metafunc.fixturenames:
        ws = _workloads(metafunc.config)
        metafunc.parametrize("workload", ws, ids=[w.key for w in ws])


def test_op(benchmark, installed_plugins, workload, threads, rounds, baselines):
    row = measure_op(workload, threads, rounds, baselines, _peak(threads),
                     runner=pedantic_runner(benchmark))
    record(benchmark, row)
    assert row.get("correct", True), f"{workload.key}: ours differs from ONNX Runtime"
