"""`tforge tune`: a tiny ONNX model tuned under a time budget, resumed after Ctrl-C, curves
written; `tforge compile --tuning-db` applies the records."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

TARGET = "llvm -num-threads=1"


def tiny_onnx(path: Path) -> Path:
    """conv 3x3/2 + relu, conv 1x1 + relu, global average pool, gemm: three tasks."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def w(name: str, *shape: int):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype("float32"),
                                       name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])],
        [w("w1", 16, 8, 3, 3), w("b1", 16), w("w2", 32, 16, 1, 1), w("b2", 32),
         w("fw", 16, 32), w("fb", 16)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db) as c:
            return c.execute("SELECT COUNT(*) FROM records").fetchone()[0]
    except sqlite3.OperationalError:  # the tuner has created the file but not its schema yet
        return 0


def test_tune_then_compile(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    db = tmp_path / "tiny.db"
    r = tforge("tune", str(model), "--target", TARGET, "--trials", "10", "--db", str(db),
               "--time-budget", "20s", "--tuner", "random", "--batch-size", "3",
               "--progress", "plain")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "3 tasks (3 kernels)" in out
    assert "conv2d_nchwc+relu" in out and "GFLOP/s" in out and "ETA" in out
    assert "stopped (trials)" in out and "10 new trials" in out
    assert _count(db) == 10
    png = tmp_path / "tiny-curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pkg = tmp_path / "tiny.tfpkg"
    r = tforge("compile", str(model), "--target", TARGET, "-o", str(pkg), "--tuning-db", str(db))
    assert r.returncode == 0, r.stderr
    assert "task(s) tuned" in r.stdout


def test_tune_resumes_after_interruption(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    db = tmp_path / "r.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    cmd = [sys.executable, "-m", "tensorforge", "tune", str(model), "--target", TARGET,
           "--trials", "14", "--db", str(db), "--tuner", "random", "--batch-size", "2",
           "--progress", "plain", "--no-plot"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists() and _count(db) >= 3:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    done = _count(db)
    assert 3 <= done < 14
    r = tforge("tune", str(model), "--target", TARGET, "--trials", "14", "--db", str(db),
               "--tuner", "random", "--batch-size", "2", "--progress", "plain", "--no-plot")
    assert r.returncode == 0, r.stderr
    assert f"{14 - done} new trials" in r.stdout
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT task_key, config_index FROM records").fetchall()
    assert len(rows) == 14 == len(set(rows))


def test_tune_usage_errors(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    r = tforge("tune", str(model), "--time-budget", "ten minutes")
    assert r.returncode == 1 and "--time-budget" in r.stderr
    r = tforge("tune", str(model), "--executor", "slurm", "--trials", "1")
    assert r.returncode == 1 and "ray://ADDRESS" in r.stderr
