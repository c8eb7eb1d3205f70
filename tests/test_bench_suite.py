"""The benchmark suite's machinery (tensorforge.bench): workloads from the models, the
regression check, reports, skipping a missing framework, the PyTorch baseline's ONNX mapping,
and `tforge bench` end to end on the smallest case. No figure is asserted."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

from tensorforge.bench import report
from tensorforge.bench.workloads import extract, quick_subset

pytest.importorskip("onnxruntime")


def test_workloads_cover_both_models():
    ws = extract()
    keys = {w.key for w in ws}
    assert "conv2d_1x64x56x56_64x3x3_s1p1" in keys  # ResNet-18's 3x3 conv
    assert "depthwise_1x32x112x112_32x3x3_s1p1" in keys  # MobileNetV2's first depthwise
    assert {"dense_1x512_1000", "dense_1x1280_1000"} <= keys
    assert len(keys) == len(ws)  # distinct
    conv = next(w for w in ws if w.key == "conv2d_1x64x56x56_64x3x3_s1p1")
    assert conv.flops == 2.0 * 64 * 56 * 56 * 64 * 9 and conv.models == ("resnet18 x4",)
    assert [w.kind for w in quick_subset(ws)] == ["conv2d", "dense", "depthwise"]


def test_single_op_model_runs_in_onnxruntime():
    import onnxruntime as ort

    w = next(w for w in extract() if w.kind == "depthwise")
    a = w.arrays()
    sess = ort.InferenceSession(w.onnx_model().SerializeToString(),
                                providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": a["x"]})
    assert y.shape == w.out_shape and y.dtype == np.float32


def _doc(ratio: float, pct: float) -> dict:
    rows = [{"level": "model", "name": "dqn", "threads": 1, "ours_s": (1.0, 1.0, 1.0),
             "ratio_ort": (ratio, ratio, ratio)},
            {"level": "op", "name": "dense_1x512_1000", "threads": 2, "flops": 1e6,
             "models": ["resnet18 x1"], "ours_s": (1.0, 1.0, 1.0), "gflops": (1.0, 1.0, 1.0),
             "pct_peak": (pct, pct, pct), "skipped": {"torch": "torch is not installed"}}]
    return report.document(rows, {"cpu_model": "test"}, {"command": "test", "rounds": 1})


def test_regression_flags_drops_over_ten_percent():
    base = _doc(1.0, 0.5)
    assert report.compare(_doc(0.91, 0.5), base) == []
    (reg,) = report.compare(_doc(0.89, 0.5), base)
    assert reg["id"] == "model/dqn/t1" and reg["ratio"] == "ratio_ort"
    (reg,) = report.compare(_doc(1.0, 0.4), base)
    assert reg["id"] == "op/dense_1x512_1000/t2" and reg["ratio"] == "pct_peak"


def test_write_compares_with_previous_latest(tmp_path):
    first = report.write(_doc(1.0, 0.5), tmp_path, None)
    assert first["regressions"] == [] and "first run" in first["note"]
    second = report.write(_doc(0.5, 0.5), tmp_path, None)
    assert [r["id"] for r in second["regressions"]] == ["model/dqn/t1"]
    latest = json.loads((tmp_path / "latest.json").read_text())
    assert latest["ratios"]["model/dqn/t1"]["ratio_ort"] == 0.5
    md = (tmp_path / "latest.md").read_text()
    assert "**model/dqn/t1** ratio_ort" in md and "PyTorch: torch is not installed" in md
    if importlib.util.find_spec("matplotlib"):
        assert (tmp_path / "latest.png").read_bytes()[:4] == b"\x89PNG"


def test_missing_framework_is_skipped(installed_plugins, monkeypatch):
    from tensorforge.bench import baselines, suite

    real = baselines.available
    monkeypatch.setattr(baselines, "available",
                        lambda name: "torch is not installed" if name == "torch" else real(name))
    row = suite.measure_model("dqn", 1, rounds=2, which=("ort", "torch"), min_sample_s=0.0)
    assert row["correct"] is True and row["skipped"] == {"torch": "torch is not installed"}
    assert "ratio_torch" not in row and row["ratio_ort"][1] > 0


def test_torch_baseline_computes_the_onnx_models():
    pytest.importorskip("torch")
    from tensorforge.bench.baselines import ort_runner, torch_model_runner
    from tensorforge_onnx import models

    for name in ("dqn", "lstm_lm", "dcgan"):
        m, x = models.build(name), models.example_inputs(name)
        for a, b in zip(torch_model_runner(m, x)(), ort_runner(m, 1, x)()):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_tforge_bench_quick(tforge, tmp_path):
    r = tforge("bench", "--quick", "--no-ops", "--rounds", "2", "--baselines", "ort",
               "--output", str(tmp_path))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "latest.json").read_text())
    (row,) = doc["rows"]
    assert row["name"] == "dqn" and row["correct"] and "ort_s" in row
    assert doc["machine"]["float32_lanes"] in (4, 8, 16)
    assert "model dqn" in r.stdout and (tmp_path / "latest.md").exists()


def test_busy_machine_is_flagged():
    assert report.busy_warning({"usable_cpus": 2, "loadavg_start": (5.0, 0, 0),
                                "loadavg_end": (1.0, 0, 0)}).startswith("**Warning")
    assert report.busy_warning({"usable_cpus": 2, "loadavg_start": (0.5, 0, 0),
                                "loadavg_end": (1.9, 0, 0)}) is None


def test_exported_family_is_measured_like_a_zoo_model(installed_plugins, monkeypatch,
                                                      tmp_path):
    """`tforge bench --families` reads the model cache; a family runs against ONNX Runtime
    (a reduced RegNet stands in for the full one) and the report closes with the geomean."""
    import shutil
    from pathlib import Path

    from tensorforge.bench import families, suite

    src = Path(__file__).parent / "data" / "families" / "regnet_tiny.onnx"
    shutil.copy(src, tmp_path / "regnet_x_400mf.onnx")
    monkeypatch.setenv("TENSORFORGE_MODEL_CACHE", str(tmp_path))
    assert families.available() == ("regnet_x_400mf",)
    row = suite.measure_model("regnet_x_400mf", 1, rounds=2, which=("ort",), min_sample_s=0.0)
    assert row["correct"] is True and row["ratio_ort"][1] > 0
    doc = {"rows": [row], "config": {}, "machine": {}, "created": "now"}
    assert "geometric mean" in report.markdown(doc, [], "")
    assert report.geomean([2.0, 0.5]) == pytest.approx(1.0)
    monkeypatch.setenv("TENSORFORGE_MODEL_CACHE", str(tmp_path / "none"))
    with pytest.raises(Exception, match="export_torchvision"):
        families.load("regnet_x_400mf")
