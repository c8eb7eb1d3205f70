"""The TensorFlow and TF-XLA baselines of the benchmark: the NHWC mapping of the benchmark's
ONNX models computes what ONNX Runtime computes, TensorFlow's fixed thread pool is reported as
a skip, the report's TensorFlow table, and `tforge bench` with the new columns. No figure is
asserted."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tensorforge.bench import report

pytest.importorskip("onnxruntime")
pytest.importorskip("tensorflow",
                    reason="no TensorFlow here (pip install tensorflow-cpu)")


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2", "lstm_lm", "dqn", "dcgan",
                                  "squeezenet1_1"])
def test_tf_baseline_computes_the_onnx_models(name: str) -> None:
    from tensorforge.bench.baselines import ort_runner, tf_op_runner
    from tensorforge_onnx import models

    m, x = models.build(name), models.example_inputs(name)
    ref = ort_runner(m, 1, x)()
    modes = (False, True) if name in ("dqn", "dcgan") else (False,)  # XLA compiles slowly
    for xla in modes:
        for a, b in zip(tf_op_runner(m, x, xla)(), ref):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_tf_baseline_computes_the_op_workloads() -> None:
    from tensorforge.bench.baselines import ort_runner, tf_op_runner
    from tensorforge.bench.workloads import extract, quick_subset

    for w in quick_subset(extract()):
        m, x = w.onnx_model(), {"x": w.arrays()["x"]}
        (a,), (b,) = tf_op_runner(m, x)(), ort_runner(m, 1, x)()
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_unmapped_op_is_not_implemented() -> None:
    from onnx import TensorProto, helper

    from tensorforge.bench.tf_onnx import TfOnnxModel

    g = helper.make_graph([helper.make_node("Erf", ["x"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(NotImplementedError, match="no mapping for ONNX Erf"):
        TfOnnxModel(helper.make_model(g))


def test_thread_pool_fixed_once_tensorflow_runs() -> None:
    code = textwrap.dedent("""
        from tensorforge.bench.baselines import tf_threads
        import tensorflow as tf
        assert tf_threads(1) is None and tf_threads(1) is None
        tf.constant(1.0) + 1.0  # the runtime starts
        print(tf_threads(2))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "fixed once it runs (here at 1)" in out.stdout and "--threads 2" in out.stdout


def test_report_has_a_tensorflow_table(tmp_path) -> None:
    q = (1e-3, 1e-3, 1e-3)
    rows = [{"level": "model", "name": "dqn", "threads": 1, "ours_s": q, "ort_s": q,
             "ratio_ort": (1, 1, 1), "tf_s": (2e-3,) * 3, "ratio_tf": (2, 2, 2),
             "tf_matches_ort": True},
            {"level": "model", "name": "dqn", "threads": 2, "ours_s": q,
             "skipped": {"tf": "TensorFlow's thread pool is fixed"}}]
    out = report.write(report.document(rows, {"cpu_model": "test"}, {"command": "t"}),
                       tmp_path, None)
    md = out["markdown"]
    assert "## Against TensorFlow and TF-XLA" in md
    assert "| model | dqn | 1 |" in md and "TensorFlow: yes" in md
    assert "TensorFlow: TensorFlow's thread pool is fixed" in md
    assert json.loads((tmp_path / "latest.json").read_text())["ratios"]["model/dqn/t1"][
        "ratio_tf"] == 2


@pytest.mark.slow
def test_tforge_bench_with_tensorflow_columns(tforge, tmp_path) -> None:
    r = tforge("bench", "--quick", "--no-ops", "--rounds", "2", "--baselines",
               "ort,tf,tf-xla", "--output", str(tmp_path))
    assert r.returncode == 0, r.stderr
    (row,) = json.loads((tmp_path / "latest.json").read_text())["rows"]
    assert row["tf_s"] and row["tf-xla_s"] and row["tf_matches_ort"] and row["tf-xla_matches_ort"]
    assert "vs tf" in r.stdout
    assert "Against TensorFlow and TF-XLA" in (tmp_path / "latest.md").read_text()
