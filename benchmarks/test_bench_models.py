"""Issue 5, end to end: the paper's models and SqueezeNet 1.1 at batch 1, ours vs ONNX Runtime
and PyTorch (eager; when installed), interleaved round by round, correctness (ours vs ONNX
Runtime, rtol 1e-4, atol 1e-5) first. The measurement is
`tensorforge.bench.suite.measure_model` (shared with `tforge bench`)."""

from __future__ import annotations

import pytest
from _suite import pedantic_runner, record

from tensorforge.bench.runner import ALL_MODELS, QUICK_MODELS
from tensorforge.bench.suite import measure_model


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "model" in metafunc.fixturenames:
        opt = metafunc.config.getoption("--bench-models")
        quick = metafunc.config.getoption("--bench-quick")
        names = opt.split(",") if opt else QUICK_MODELS if quick else ALL_MODELS
        metafunc.parametrize("model", names)


def test_model(benchmark, installed_plugins, model, threads, rounds, baselines):
    row = measure_model(model, threads, rounds, baselines, runner=pedantic_runner(benchmark))
    record(benchmark, row)
    assert row.get("correct", True), f"{model}: ours differs from ONNX Runtime"
