"""`tforge tune`: a tiny ONNX model tuned under a time budget, resumed after Ctrl-C, curves
written; `tforge compile --tuning-db` applies the records."""

from __future__ import annotations

import os
import re
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
    assert re.search(r"confirmed \d+ tasks' best configs against the default \(\d+ kept", out)
    assert _count(db) == 10  # confirming re-times records, it adds none
    png = tmp_path / "tiny-curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pkg = tmp_path / "tiny.tfpkg"
    r = tforge("compile", str(model), "--target", TARGET, "-o", str(pkg), "--tuning-db", str(db))
    assert r.returncode == 0, r.stderr
    assert "3 tasks tuned, 0 without records" in r.stdout


#: `tforge tune` whose database holds the run (sleeps) right after its third record, so the
#: test's Ctrl-C always lands mid-run: on a fast machine 14 trials of the tiny model could
#: all finish between the test seeing 3 records and its signal arriving (exit 0, a flake).
_HELD_TUNE = """
import os, signal, sys, time
# Ctrl-C as a terminal gives it: a parent that ignores SIGINT (some test-runner workers do,
# and an ignored signal stays ignored across exec) would otherwise leave us deaf to it
signal.signal(signal.SIGINT, signal.default_int_handler)
from tensorforge.autotune.database import Database
_add = Database.add
def add(self, rec, *args, **kwargs):
    added = _add(self, rec, *args, **kwargs)
    marker = os.environ["TUNE_HOLD_MARKER"]
    if self.count() >= 3 and not os.path.exists(marker):
        open(marker, "w").close()
        # until the test's Ctrl-C, in short sleeps: a SIGINT that lands between the marker
        # and the start of one long sleep would not interrupt it (seen under CI load)
        for _ in range(1200):
            time.sleep(0.1)
    return added
Database.add = add
from tensorforge.cli import main
sys.exit(main())
"""


def test_tune_resumes_after_interruption(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    db = tmp_path / "r.db"
    held = tmp_path / "held"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    env["TUNE_HOLD_MARKER"] = str(held)
    args = ["tune", str(model), "--target", TARGET, "--trials", "14", "--db", str(db),
            "--tuner", "random", "--batch-size", "2", "--progress", "plain", "--no-plot"]
    proc = subprocess.Popen([sys.executable, "-c", _HELD_TUNE, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not held.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert held.exists(), "the tuner never reached its third record"
    proc.send_signal(signal.SIGINT)  # Ctrl-C
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    done = _count(db)
    assert done == 3
    # --trials counts new trials: the earlier records are used (not measured again)
    r = tforge(*[str(14 - done) if a == "14" else a for a in args])
    assert r.returncode == 0, r.stderr
    assert f"{14 - done} new trials, {done} earlier records used" in r.stdout
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT task_key, config_index FROM records").fetchall()
    assert len(rows) == 14 == len(set(rows))


def test_tune_usage_errors(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    r = tforge("tune", str(model), "--time-budget", "ten minutes")
    assert r.returncode == 1 and "--time-budget" in r.stderr
    r = tforge("tune", str(model), "--executor", "slurm", "--trials", "1")
    assert r.returncode == 1 and "ray://ADDRESS" in r.stderr


def _flat(text: str) -> str:
    """Messages wrap at 100 columns: compare them as one line."""
    return " ".join(text.split())


# ---- --trials, progress figures, fallbacks ------------------------------------------------------
def _tune(tforge, model, db, *extra, env=None, pythonpath=None):
    return tforge("tune", str(model), "--target", TARGET, "--db", str(db), "--progress",
                  "plain", "--batch-size", "2", *extra, env=env, pythonpath=pythonpath)


def test_trials_are_new_trials_and_unmeasured_tasks_show_a_dash(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    db = tmp_path / "t.db"
    r = _tune(tforge, model, db, "--trials", "4", "--tuner", "random", "--no-plot")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    first = next(line for line in lines if line.startswith("[1/3]"))
    # the latency estimate waits for a measurement of every task (it never rises)
    assert "est. latency - (1/3 tasks measured)" in first and "4 new trials" in first
    dense = next(line for line in lines if line.startswith("dense_packed"))
    assert dense.split()[-4:] == ["0/4", "-", "-", "-"]  # trials, default, best, GFLOP/s
    assert "4 new trials; estimated latency of the tuned kernels (2 of 3 tasks measured)" \
        in r.stdout
    r = _tune(tforge, model, db, "--trials", "4", "--tuner", "random", "--no-plot")
    assert r.returncode == 0, r.stderr
    assert "done: 4/4 new trials (4 earlier)" in r.stdout
    assert "4 new trials, 4 earlier records used" in r.stdout
    assert _count(db) == 8


def test_default_tuner_without_xgboost_falls_back_once(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    r = _tune(tforge, model, tmp_path / "t.db", "--trials", "8", "--no-plot",
              env={"TENSORFORGE_DISABLE_PLUGINS": "xgboost"})
    assert r.returncode == 0, r.stderr
    said = [line for line in r.stderr.splitlines() if "built-in ridge cost model" in line]
    assert len(said) == 1, r.stderr  # three tasks, three tuners: said once
    assert "disabled by TENSORFORGE_DISABLE_PLUGINS='xgboost'" in said[0]
    assert "8 new trials" in r.stdout


def test_missing_matplotlib_names_its_install_command(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    blocker = tmp_path / "block" / "matplotlib"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('no matplotlib here')\n")
    r = _tune(tforge, model, tmp_path / "t.db", "--trials", "2", "--tuner", "random",
              pythonpath=str(tmp_path / "block"))
    assert r.returncode == 0, r.stderr
    assert "matplotlib is not installed (pip install matplotlib" in r.stdout
    assert not (tmp_path / "t-curves.png").exists()


# ---- one database, several tuners; bad databases ---------------------------------------------
def test_two_tuners_on_one_database_measure_disjoint_configs(tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    db = tmp_path / "shared.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORFORGE_")}
    cmd = [sys.executable, "-m", "tensorforge", "tune", str(model), "--target", TARGET,
           "--trials", "10", "--db", str(db), "--tuner", "random", "--batch-size", "2",
           "--progress", "plain", "--no-plot"]  # the same seed: the same proposals
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
        assert "10 new trials" in out and "measured twice" not in out, out
        # defaults the other run measured first are read back from the database
        assert "tasks measured" not in out.splitlines()[-1], out
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT task_key, config_index, run_id FROM records").fetchall()
        claims = c.execute("SELECT COUNT(*) FROM claims").fetchone()[0]
    assert len(rows) == 20 == len({(k, i) for k, i, _ in rows})  # nothing measured twice
    per_run = sorted(sum(1 for *_, r in rows if r == run) for run in {r for *_, r in rows})
    assert per_run == [10, 10]  # each run measured what it reported
    assert claims == 0


def test_bad_databases_are_refused_up_front(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    r = _tune(tforge, model, "", "--trials", "2")
    assert r.returncode == 1 and "tuning database path is empty" in _flat(r.stderr)
    assert "tasks" not in r.stdout  # before the model was even read
    r = _tune(tforge, model, tmp_path / "missing" / "t.db", "--trials", "2")
    assert r.returncode == 1 and "folder" in _flat(r.stderr) and "does not exist" in _flat(r.stderr)
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not sqlite\n" * 50)
    r = _tune(tforge, model, bad, "--trials", "2")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "bad.db" in _flat(r.stderr) and "not a usable tuning database" in _flat(r.stderr)
    r = tforge("compile", str(model), "-o", str(tmp_path / "m.tfpkg"), "--tuning-db", str(bad))
    assert r.returncode == 1 and "move it away" in _flat(r.stderr)
    assert "internal" not in r.stderr


def test_compile_opens_the_tuning_database_read_only(tforge, tmp_path):
    model = tiny_onnx(tmp_path / "tiny.onnx")
    folder = tmp_path / "records"
    folder.mkdir()
    db = folder / "t.db"
    r = _tune(tforge, model, db, "--trials", "6", "--tuner", "random", "--no-plot")
    assert r.returncode == 0, r.stderr
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    db.chmod(0o444)
    folder.chmod(0o555)
    try:
        r = tforge("compile", str(model), "--target", TARGET, "-o", str(tmp_path / "m.tfpkg"),
                   "--tuning-db", str(db))
        after = {p.name: p.read_bytes() for p in folder.iterdir()}
    finally:
        folder.chmod(0o755)
        db.chmod(0o644)
    assert r.returncode == 0, r.stderr
    assert "tuning records of" in r.stdout and "readonly" not in r.stderr
    assert after[db.name] == before[db.name]


def test_cpu_candidates_are_timed_after_cache_sweeps_unless_told_not_to(tforge, tmp_path):
    """By default each timed call follows a cache sweep (a tiny kernel: up to 10 x 5 single
    calls recorded); --no-cache-flush records 5 warm back-to-back timings. (--no-confirm:
    a confirmed best config's record holds the samples of its re-timing instead.)"""
    import json

    model = tiny_onnx(tmp_path / "tiny.onnx")
    counts = {}
    for flag in ("", "--no-cache-flush"):
        db = tmp_path / f"t{flag}.db"
        r = _tune(tforge, model, db, "--trials", "2", "--tuner", "random", "--no-plot",
                  "--no-confirm", *([flag] if flag else []))
        assert "best configs against the default" not in r.stdout
        assert r.returncode == 0, r.stderr
        with sqlite3.connect(db) as c:
            counts[flag] = {len(json.loads(row[0])) for row in c.execute(
                "SELECT costs FROM records WHERE error_class IS NULL")}
    # single calls: up to 50, fewer only if a first call took over 4 ms (a loaded machine)
    assert min(counts[""]) > 5 and max(counts[""]) <= 50, counts
    assert counts["--no-cache-flush"] == {5}, counts
