"""Core and every plugin but the TensorFlow frontend never need TensorFlow (issue 14). CI
installs tensorflow-cpu, so only a child process sees a stray `import tensorflow`: it loads the
real installed plugins, compiles and runs an ONNX model for llvm against ONNX Runtime and
benchmarks it. With TensorFlow hidden (tensorflow, keras, tf_keras set to None in sys.modules:
`import` fails, `find_spec` says not installed) that all works, the TensorFlow baselines are
skipped with a note and a .pb gets the install hint; with TensorFlow installed, the same ONNX
work does not import it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tensorforge_onnx")
pytest.importorskip("tensorforge_llvm")

CHILD = textwrap.dedent("""
    import json, sys
    TF_MODULES = ("tensorflow", "keras", "tf_keras")
    hide = sys.argv[2] == "hidden"
    if hide:
        for name in TF_MODULES:
            sys.modules[name] = None  # as if not installed

    import numpy as np
    import tensorforge
    from tensorforge.bench import suite
    from tensorforge.bench.baselines import ort_runner
    from tensorforge.cli import main as tforge
    from tensorforge_onnx import models

    result = {"plugins_exit": tforge(["plugins", "--json"])}
    m, x = models.build("dqn"), models.example_inputs("dqn")
    out = tensorforge.compile(m, "llvm -num-threads=1").run(x)
    np.testing.assert_allclose(out[0], ort_runner(m, 1, x)()[0], rtol=1e-4, atol=1e-5)
    row = suite.measure_model("dqn", 1, rounds=2,
                              which=("ort", "tf", "tf-xla") if hide else ("ort",),
                              min_sample_s=0.0)
    result["bench"] = {"correct": row["correct"], "skipped": row.get("skipped", {}),
                       "columns": sorted(k for k in row if k.endswith("_s"))}
    result["imported"] = sorted({k.split(".")[0] for k, v in sys.modules.items()
                                 if v is not None and k.split(".")[0] in TF_MODULES})
    if hide:
        try:
            tensorforge.compile(sys.argv[1], "llvm")
        except tensorforge.TensorforgeError as e:
            result["pb_error"] = [type(e).__name__, str(e)]
    print("RESULT " + json.dumps(result))
""")


def run_child(mode: str, pb: Path) -> dict:
    """The child's result; its `tforge plugins --json` checked: every plugin loaded."""
    proc = subprocess.run([sys.executable, "-c", CHILD, str(pb), mode], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    report, line = proc.stdout.split("RESULT ")
    result = json.loads(line)
    plugins = json.loads(report)["plugins"]
    assert result["plugins_exit"] == 0
    failed = {p["name"]: p.get("error") for p in plugins if p["status"] != "loaded"}
    assert not failed, failed
    assert {"llvm", "onnx", "tensorflow"} <= {p["name"] for p in plugins}
    assert result["bench"]["correct"] is True
    return result


@pytest.mark.slow
def test_core_and_plugins_run_without_tensorflow(tmp_path: Path) -> None:
    pb = tmp_path / "model.pb"
    pb.write_bytes(b"\n\x01x")  # the frontend needs TensorFlow before it reads the file
    result = run_child("hidden", pb)
    assert result["bench"]["skipped"] == {"tf": "tensorflow is not installed",
                                          "tf-xla": "tensorflow is not installed"}
    assert "ort_s" in result["bench"]["columns"] and "tf_s" not in result["bench"]["columns"]
    name, message = result["pb_error"]
    assert name == "TensorFlowMissingError" and "pip install" in message


@pytest.mark.slow
def test_onnx_work_does_not_import_tensorflow(tmp_path: Path) -> None:
    pytest.importorskip("tensorflow", reason="checks that installed TensorFlow stays unloaded")
    result = run_child("installed", tmp_path / "unused.pb")
    assert result["imported"] == [], "compiling or benchmarking an ONNX model imported them"
