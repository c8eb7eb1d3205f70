"""End to end: a hand-built CNN and a small ONNX model compiled for the host CPU and compared
with the reference interpreter / onnxruntime; export -> load in a fresh process without the
compiler; input errors; the `tforge compile / run / inspect` round trip."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorforge
from tensorforge.cli import main as tforge
from tensorforge.graph import Graph, run_reference

RTOL, ATOL = 1e-4, 1e-5
RNG = np.random.default_rng(0)
BLOCKED = ("llvmlite", "onnx", "tensorforge.te", "tensorforge.tir", "tensorforge.graph",
           "tensorforge_llvm", "tensorforge_onnx")


def rand(*shape: int, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype("float32")


def small_cnn() -> Graph:
    """conv-bn-relu, a residual block, a strided conv, pools, dense, softmax."""
    g = Graph("small_cnn")
    x = g.add_input("x", (1, 3, 16, 16), "float32")

    def cbr(x, cin, cout, k=3, stride=1, relu=True):
        y = g.add("conv2d", x, g.add_const("w", rand(cout, cin, k, k, scale=0.3)),
                  strides=(stride, stride), pads=(k // 2,) * 4)
        y = g.add("batch_norm", y, g.add_const("g", 1 + rand(cout, scale=0.1)),
                  g.add_const("b", rand(cout, scale=0.1)), g.add_const("m", rand(cout, scale=0.1)),
                  g.add_const("v", 1 + np.abs(rand(cout, scale=0.1))))
        return g.add("relu", y) if relu else y

    y = cbr(x, 3, 16)
    r = cbr(cbr(y, 16, 16), 16, 16, relu=False)
    y = g.add("relu", g.add("add", r, y))
    y = cbr(y, 16, 24, stride=2)
    y = g.add("max_pool2d", y, kernel=(2, 2), strides=(2, 2))
    y = g.add("reshape", g.add("global_avg_pool2d", y), shape=(1, 24))
    y = g.add("dense", y, g.add_const("fw", rand(10, 24, scale=0.3)),
              g.add_const("fb", rand(10, scale=0.1)))
    g.outputs = [g.add("softmax", y, axis=-1), y]
    return g


@pytest.fixture(scope="module")
def cnn_input() -> np.ndarray:
    return rand(1, 3, 16, 16)


def _target(llvm_target):
    return tensorforge.Target.parse(str(llvm_target) + " -num-threads=1")


@pytest.mark.parametrize("opt_level", [0, 3])
def test_small_cnn_matches_reference(llvm_target, cnn_input, opt_level) -> None:
    g = small_cnn()
    model = tensorforge.compile(g, target=_target(llvm_target), opt_level=opt_level)
    expected = run_reference(g, {"x": cnn_input})
    got = model.run({"x": cnn_input})
    assert len(got) == 2
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL)
    ops = [k["ops"] for k in model.desc["kernels"]]
    if opt_level == 0:
        assert len(ops) == len(g.nodes)
    else:
        # the llvm layout pass turns conv2d into conv2d_nchwc (NCHW[x]c), or
        # conv2d_winograd_nchwc (3x3 stride 1, 16+ channels); the epilogue fuses
        assert any([c, "add", "relu"] in ops
                   for c in ("conv2d", "conv2d_nchwc", "conv2d_winograd_nchwc"))
        assert "batch_norm" not in sum(ops, [])
        mem = model.desc["memory"]
        assert mem["planned_bytes"] < mem["unplanned_bytes"]
    np.testing.assert_array_equal(model.run([cnn_input])[0], got[0])  # positional
    r = model.benchmark(repeat=3)
    assert r.min <= r.median <= r.max and len(r.times) == 3


def test_wrong_inputs_say_what_the_model_expects(llvm_target, cnn_input) -> None:
    model = tensorforge.compile(small_cnn(), target=_target(llvm_target))
    expects = r"expects 1 input\(s\): x: float32\[1, 3, 16, 16\]"
    with pytest.raises(tensorforge.TensorforgeError, match=r"unknown input.*'y'.*" + expects):
        model.run({"y": cnn_input})
    with pytest.raises(tensorforge.TensorforgeError, match=r"given float32\[1, 3, 8, 8\]"):
        model.run({"x": cnn_input[:, :, :8, :8]})
    with pytest.raises(tensorforge.TensorforgeError, match=r"float64.*astype\('float32'\)"):
        model.run({"x": cnn_input.astype("float64")})
    with pytest.raises(tensorforge.TensorforgeError, match=r"2 positional"):
        model.run([cnn_input, cnn_input])


def test_export_then_load_in_a_fresh_process_without_the_compiler(
        llvm_target, cnn_input, tmp_path: Path) -> None:
    from tensorforge.testing.isolated import run_without_compiler

    model = tensorforge.compile(small_cnn(), target=_target(llvm_target))
    pkg = model.export(tmp_path / "cnn.tfpkg")
    loaded = run_without_compiler(pkg, {"x": cnn_input}, blocked=BLOCKED, timeout=120)
    for a, b in zip(loaded, model.run({"x": cnn_input})):
        np.testing.assert_array_equal(a, b)
    again = tensorforge.load(pkg)  # and in this process; a loaded model exports again
    again.export(tmp_path / "again.tfpkg")
    np.testing.assert_array_equal(tensorforge.load(tmp_path / "again.tfpkg").run([cnn_input])[0],
                                  loaded[0])


def test_load_rejects_what_is_not_a_package(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tfpkg"
    bad.write_text("hello")
    with pytest.raises(tensorforge.TensorforgeError, match="not a tensorforge package"):
        tensorforge.load(bad)
    with pytest.raises(tensorforge.TensorforgeError, match="no such file"):
        tensorforge.load(tmp_path / "missing.tfpkg")


# -- ONNX -----------------------------------------------------------------------------------------
def _onnx_model(path: Path) -> Path:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(rand(8, 3, 3, 3, scale=0.3), "w")
    b = numpy_helper.from_array(rand(8, scale=0.1), "b")
    fw = numpy_helper.from_array(rand(8, 5, scale=0.3), "fw")
    nodes = [
        helper.make_node("Conv", ["input", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["p"]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("MatMul", ["f", "fw"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], [w, b, fw])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, path)
    return path


def test_onnx_model_matches_onnxruntime(llvm_target, onnx_frontend, tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    path = _onnx_model(tmp_path / "tiny.onnx")
    x = rand(1, 3, 8, 8)
    ref = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"input": x})[0]
    model = tensorforge.compile(str(path), target=_target(llvm_target))
    np.testing.assert_allclose(model.run({"input": x})[0], ref, rtol=RTOL, atol=ATOL)
    import onnx

    in_memory = tensorforge.compile(onnx.load(path), target=_target(llvm_target))
    np.testing.assert_allclose(in_memory.run([x])[0], ref, rtol=RTOL, atol=ATOL)


def test_cli_compile_run_inspect_round_trip(llvm_target, onnx_frontend, tmp_path: Path,
                                            capsys) -> None:
    path = _onnx_model(tmp_path / "tiny.onnx")
    pkg = tmp_path / "tiny.tfpkg"
    assert tforge(["compile", str(path), "--target", "llvm -num-threads=1", "-o",
                   str(pkg)]) == 0
    assert "kernels" in capsys.readouterr().out and pkg.exists()
    x = rand(1, 3, 8, 8)
    np.save(tmp_path / "x.npy", x)
    out_dir = tmp_path / "out"
    assert tforge(["run", str(pkg), "--input", f"input={tmp_path / 'x.npy'}", "--output",
                   str(out_dir), "--print-time", "--repeat", "2"]) == 0
    text = capsys.readouterr().out
    assert "time: median" in text
    y = np.load(out_dir / "y.npy")
    np.testing.assert_array_equal(y, tensorforge.load(pkg).run([x])[0])
    assert tforge(["run", str(pkg), "--fill", "random"]) == 0
    assert "y: float32[1, 5]" in capsys.readouterr().out
    assert tforge(["run", str(pkg)]) == 1  # no input given, no --fill
    assert "missing input(s) 'input'" in " ".join(capsys.readouterr().err.split())
    assert tforge(["inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["inputs"] == [{"name": "input", "shape": [1, 3, 8, 8], "dtype": "float32"}]
    assert report["groups"][0]["ops"][:2] == ["conv2d", "relu"]
    assert report["memory"]["peak_bytes"] <= report["memory"]["no_reuse_bytes"] + 256
    assert tforge(["inspect", str(path)]) == 0
    assert "memory plan:" in capsys.readouterr().out


@pytest.fixture
def pickle_frontend(plugins, monkeypatch):
    """A test frontend for `.tfgraph` files (a pickled Graph), so the CLI round trip runs even
    where the ONNX frontend is not installed."""
    import pickle
    import types

    from tensorforge.plugins import Frontend, hookimpl

    mod = types.ModuleType("tf_test_pickle_frontend")

    def load(path, input_shapes=None):
        with open(path, "rb") as f:
            return pickle.load(f)

    mod.load = load
    mod.unsupported_ops = lambda path: []
    monkeypatch.setitem(sys.modules, mod.__name__, mod)

    class PicklePlugin:
        @hookimpl
        def register_frontends(self, register):
            register(Frontend("tfgraph", (".tfgraph",), f"{mod.__name__}:load"))

    plugins.register(PicklePlugin(), "tfgraph")

    def write(graph: Graph, path: Path) -> Path:
        with open(path, "wb") as f:
            pickle.dump(graph, f)
        return path

    return write


def test_cli_round_trip_with_a_graph_frontend(llvm_target, pickle_frontend, cnn_input,
                                              tmp_path: Path, capsys) -> None:
    g = small_cnn()
    path = pickle_frontend(g, tmp_path / "cnn.tfgraph")
    pkg = tmp_path / "cnn.tfpkg"
    assert tforge(["compile", str(path), "--target", "llvm -num-threads=1", "-o", str(pkg),
                   "--opt-level", "2"]) == 0
    assert "without reuse" in capsys.readouterr().out
    np.save(tmp_path / "x.npy", cnn_input)
    assert tforge(["run", str(pkg), "--input", f"x={tmp_path / 'x.npy'}", "--output",
                   str(tmp_path / "out")]) == 0
    expected = run_reference(g, {"x": cnn_input})
    for v, ref in zip(g.outputs, expected):
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"{v.name}.npy"), ref,
                                   rtol=RTOL, atol=ATOL)
    capsys.readouterr()
    assert tforge(["run", str(pkg), "--input", f"z={tmp_path / 'x.npy'}"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "unknown input name(s) 'z'" in err and "x: float32[1, 3, 16, 16]" in err
    assert tforge(["inspect", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ops"]["batch_norm"] == 4 and "batch_norm" not in report["ops_after_passes"]
    assert ["conv2d", "add", "relu"] in [grp["ops"] for grp in report["groups"]]
    mem = report["memory"]
    assert 0 < mem["peak_bytes"] < mem["no_reuse_bytes"]
    assert tforge(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert "fused groups" in text and "memory plan:" in text and "batch_norm x4" in text


@pytest.mark.parametrize("axis", [0, 1])
def test_concat_and_split_compile(llvm_target, axis) -> None:
    """Regression: concat's select chain took the first input everywhere."""
    g = Graph("cat")
    xs = [g.add_input(f"x{i}", (2, 3 + i), "float32") if axis else
          g.add_input(f"x{i}", (1 + i, 5), "float32") for i in range(3)]
    c = g.add("concat", *xs, axis=axis)
    size = c.shape[axis]
    parts = g.add_node("split", [g.add("relu", c)], {"axis": axis, "sizes": (1, size - 1)})
    g.outputs = [g.add("reshape", c, shape=(c.size,)), *parts]
    model = tensorforge.compile(g, target=_target(llvm_target))
    ins = {v.name: rand(*v.shape) for v in g.inputs}
    for a, b in zip(model.run(ins), run_reference(g, ins)):
        np.testing.assert_array_equal(a, b)
