"""`benchmarks/gpu_check.sh --dry`: on a machine without a GPU (CI) it compiles the models for
cuda, builds their cubins with NVRTC, gets to the launch, stops cleanly and writes its
report."""

import json
import os
import subprocess

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
