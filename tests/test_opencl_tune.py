"""`tforge tune --target opencl`: candidates are timed with device events, records land in
the database, and `tforge compile --tuning-db` applies them."""

from __future__ import annotations

import re
import sqlite3

import pytest

pytestmark = pytest.mark.opencl

models = pytest.importorskip("tensorforge_onnx.models")


@pytest.mark.slow
def test_tune_opencl_then_compile(tforge, tmp_path):
    model = models.save("dqn", tmp_path / "dqn.onnx")
    db = tmp_path / "ocl.db"
    r = tforge("tune", str(model), "--target", "opencl", "--trials", "8", "--db", str(db),
               "--tuner", "random", "--batch-size", "4", "--progress", "plain", "--no-plot")
    assert r.returncode == 0, r.stderr
    assert "8 new trials" in r.stdout
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT target, cost, error_class FROM records").fetchall()
    assert len(rows) == 8 and {t for t, _, _ in rows} == {"opencl"}
    assert any(cost and cost > 0 and err is None for _, cost, err in rows)
    r = tforge("compile", str(model), "--target", "opencl", "-o", str(tmp_path / "d.tfpkg"),
               "--tuning-db", str(db))
    assert r.returncode == 0, r.stderr
    assert re.search(r"\d+ tasks? tuned", r.stdout), r.stdout


def test_device_candidates_are_timed_by_the_device_module(opencl_target, monkeypatch):
    """The runner times a device library with its `time_evaluator` (device events), not the
    wall clock around the Python call."""
    from tensorforge.autotune import Task
    from tensorforge.autotune.measure import build_job, run_job
    from tensorforge.runtime.device import DeviceModule, TimeResult

    task = Task("dense.gpu", (16, 16, 16), opencl_target)
    art = build_job({"task": task.to_json(), "index": task.config_space.default_index})
    calls = []

    def fake(self, name, number=1, repeat=3, min_repeat_ms=0.0):
        calls.append((name, number, repeat, min_repeat_ms))
        return lambda *args: TimeResult([1.0, 2.0, 3.0][:repeat])

    monkeypatch.setattr(DeviceModule, "__call__", lambda self, *a: None)
    monkeypatch.setattr(DeviceModule, "time_evaluator", fake)
    out = run_job({"artifact": art, "seed": 0, "ref": None, "rtol": 1e-3, "number": 2,
                   "repeat": 3, "min_repeat_ms": 5.0, "flush_cache": False})
    assert out["costs"] == [1.0, 2.0, 3.0]
    assert [c[1:] for c in calls] == [(2, 3, 5.0)]
