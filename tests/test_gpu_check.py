"""`benchmarks/gpu_check.sh --dry`: on a machine without a GPU (CI) it compiles the models for
cuda, builds their cubins with NVRTC, gets to the launch, stops cleanly and writes its
report."""

import json
import os
import subprocess

import numpy as np
import pytest

from tensorforge.testing.hardware import has_cuda


@pytest.mark.slow
@pytest.mark.skipif(has_cuda(), reason="this machine has a GPU: run gpu_check.sh for real")
def test_dry_run_reaches_the_launch_and_writes_the_report(repo_root, tmp_path):
    pytest.importorskip("onnxruntime")
    nvrtc = pytest.importorskip("tensorforge_cuda.nvrtc")
    if not nvrtc.has_nvrtc():
        pytest.skip(f"NVRTC is not installed: {nvrtc.INSTALL}")
    env = {**os.environ, "OUT": str(tmp_path)}
    proc = subprocess.run(["bash", str(repo_root / "benchmarks" / "gpu_check.sh"), "--dry",
                           "--models", "dqn", "--batches", "1,16"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["dry"] and [r["batch"] for r in report["models"]] == [1, 16]
    for row in report["models"]:
        assert row["status"] == "stopped before the launch", row
        assert row["cubin_bytes"] > 0 and row["kernels"] > 0
    table = (tmp_path / "gpu_check.md").read_text()
    assert "| dqn | 16 | stopped before the launch |" in table


def _gpu_check(repo_root):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "gpu_check", repo_root / "benchmarks" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_batched_inputs_grow_the_batch_axis_with_distinct_samples(repo_root):
    models = pytest.importorskip("tensorforge_onnx.models")
    gpu_check = _gpu_check(repo_root)
    tokens = gpu_check._batched("lstm_lm", models.example_inputs("lstm_lm"), 4)["tokens"]
    assert tokens.shape == (35, 4)  # (steps, batch): the LSTM's batch is its second axis
    image = gpu_check._batched("dqn", models.example_inputs("dqn"), 4)["input"]
    assert image.shape == (4, 4, 84, 84) and image.dtype == "float32"
    assert not np.array_equal(image[0], image[1])


@pytest.mark.slow
def test_the_device_path_checks_every_batch_against_onnxruntime(repo_root, plugins):
    """What gpu_check.py does after the launch (ONNX Runtime reference of the batched
    input, the error, the timing), run here on the CPU target since CI has no GPU: every row
    must come out "ok", batch 1 and a larger batch, the LSTM batched on its second axis."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tensorforge_cuda.nvrtc")
    for module, kind, dist in (("tensorforge_llvm.plugin", "llvm", "tensorforge-target-llvm"),
                               ("tensorforge_onnx.plugin", "onnx",
                                "tensorforge-frontend-onnx")):
        plugins.register(module, kind, distribution=dist)
    gpu_check = _gpu_check(repo_root)
    rows = gpu_check.model_rows(["dqn", "lstm_lm"], [1, 3], "llvm", dry=False, repeat=2)
    assert [(r["model"], r["batch"]) for r in rows] == [
        ("dqn", 1), ("dqn", 3), ("lstm_lm", 1), ("lstm_lm", 3)]
    for row in rows:
        assert row["status"] == "ok", row
        assert row["max_rel_err"] < 1e-4 and row["tensorforge_ms"] > 0, row
