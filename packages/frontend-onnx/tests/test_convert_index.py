"""Gather, GatherElements, GatherND, ScatterElements, ScatterND: the numpy reference and the
compiled kernels against onnxruntime, negative indices, and out-of-range indices, which are
an error naming the node, the value and the bound (issue 12: the LSTM LM returned garbage for
token 10000 and died with SIGSEGV for 10**9)."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge.errors import DataCheckError, TensorforgeError
from tensorforge.runtime.checks import KernelCheckError
from tensorforge_onnx.testing import check, model, node, ort_run, rand

I64 = "int64"


@pytest.fixture
def both(llvm_target: Any, plugins: Any) -> Any:
    """Check a model's reference run and its compiled run against onnxruntime (exactly: these
    ops only move data, or add/multiply at most a few values)."""
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")

    def run(m: Any, feeds: dict[str, np.ndarray], threads: int = 1) -> Any:
        check(m, feeds, rtol=1e-6, atol=1e-6)
        cm = tensorforge.compile(m, target=f"llvm -num-threads={threads}")
        for a, b in zip(cm.run(feeds), ort_run(m, feeds)):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)
        return cm

    return run


def _one(op: str, feeds: dict[str, np.ndarray], inits: dict[str, np.ndarray] | None = None,
         opset: int = 18, **attrs: Any) -> Any:
    names = [*feeds, *(inits or {})]
    return model([node(op, names, ["out"], **attrs)], feeds, ["out"], inits, opset=opset)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_data_indices(both: Any, axis: int) -> None:
    x = rand(5, 6, 7)
    n = x.shape[axis]
    idx = np.array([[0, n - 1, -1], [-n, 2, 1]], I64)
    both(_one("Gather", {"x": x, "i": idx}, axis=axis), {"x": x, "i": idx})


def test_gather_int32_indices_and_int_data(both: Any) -> None:
    x = np.arange(40, dtype="int32").reshape(8, 5)
    idx = np.array([7, -8, 3], "int32")
    both(_one("Gather", {"x": x, "i": idx}, axis=0), {"x": x, "i": idx})


@pytest.mark.parametrize("axis", [0, 1])
def test_gather_elements(both: Any, axis: int) -> None:
    x = rand(4, 5)
    idx = np.array([[0, -1, 2], [3, 1, -4]], I64) if axis == 1 else \
        np.array([[0, -1, 2, 3, 1], [3, 1, -4, 0, 2]], I64)
    both(_one("GatherElements", {"x": x, "i": idx}, axis=axis), {"x": x, "i": idx})


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd(both: Any, batch_dims: int) -> None:
    x = rand(3, 4, 5)
    if batch_dims == 0:
        idx = np.array([[[0, 1], [-1, -2]], [[2, 3], [1, 0]]], I64)  # (2, 2, 2): k = 2
    else:
        idx = np.array([[[1, 4]], [[-1, 0]], [[3, -5]]], I64)  # (3, 1, 2), batch 3
    both(_one("GatherND", {"x": x, "i": idx}, batch_dims=batch_dims), {"x": x, "i": idx})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_elements(both: Any, reduction: str) -> None:
    x = rand(4, 5)
    idx = np.array([[1, 0, -1], [2, 2, 4]], I64)  # a repeated index in row 1
    upd = rand(2, 3)
    both(_one("ScatterElements", {"x": x, "i": idx, "u": upd}, axis=1, reduction=reduction),
         {"x": x, "i": idx, "u": upd})


def test_scatter_elements_axis0_smaller_indices(both: Any) -> None:
    x = rand(5, 4)
    idx = np.array([[4, 0], [-5, 2]], I64)  # indices narrower than data on axis 1
    upd = rand(2, 2)
    both(_one("ScatterElements", {"x": x, "i": idx, "u": upd}, axis=0),
         {"x": x, "i": idx, "u": upd})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd(both: Any, reduction: str) -> None:
    x = rand(4, 3, 2)
    idx = np.array([[1], [-1], [1]], I64)  # whole rows, row 1 twice (last wins for none)
    upd = rand(3, 3, 2)
    both(_one("ScatterND", {"x": x, "i": idx, "u": upd}, reduction=reduction),
         {"x": x, "i": idx, "u": upd})


def test_scatter_nd_elements_and_single_tuple(both: Any) -> None:
    x = rand(3, 4)
    idx = np.array([[0, 1], [2, -1]], I64)
    upd = rand(2)
    both(_one("ScatterND", {"x": x, "i": idx, "u": upd}), {"x": x, "i": idx, "u": upd})
    idx1 = np.array([2], I64)  # indices of rank 1: one tuple, one row
    upd1 = rand(4)
    both(_one("ScatterND", {"x": x, "i": idx1, "u": upd1}), {"x": x, "i": idx1, "u": upd1})


def test_scatter_threads(both: Any) -> None:
    x = rand(64, 33)
    idx = np.random.default_rng(1).integers(-33, 33, (64, 20)).astype(I64)
    upd = rand(64, 20)
    both(_one("ScatterElements", {"x": x, "i": idx, "u": upd}, axis=1, reduction="add"),
         {"x": x, "i": idx, "u": upd}, threads=2)


# out-of-range indices --------------------------------------------------------------------
_OOR = [
    ("Gather", {"axis": 1}, (3, 4), np.array([[0, 4]], I64), None, "index 4 out of range "
     "[-4, 3] on axis 1"),
    ("Gather", {"axis": 0}, (3, 4), np.array([-4], I64), None,
     "index -4 out of range [-3, 2] on axis 0"),
    ("GatherElements", {"axis": 0}, (3, 4), np.array([[0, 1, 2, 3]], I64) * 2, None,
     "index 4 out of range [-3, 2] on axis 0"),
    ("GatherND", {}, (3, 4), np.array([[1, 2], [2, 9]], I64), None,
     "index 9 out of range [-4, 3] on axis 1"),
    ("ScatterElements", {"axis": 1}, (3, 4), np.array([[0, -5]], I64), (1, 2),
     "index -5 out of range [-4, 3] on axis 1"),
    ("ScatterND", {}, (3, 4), np.array([[7]], I64), (1, 4),
     "index 7 out of range [-3, 2] on axis 0"),
]


@pytest.mark.parametrize("op,attrs,shape,idx,ushape,msg", _OOR, ids=[o[0] for o in _OOR])
def test_out_of_range_index_is_an_error(llvm_target: Any, plugins: Any, op: str,
                                        attrs: dict[str, Any], shape: tuple[int, ...],
                                        idx: np.ndarray, ushape: Any, msg: str) -> None:
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    feeds = {"x": rand(*shape), "i": idx}
    if ushape is not None:
        feeds["u"] = rand(*ushape)
    m = _one(op, feeds, **attrs)
    m.graph.node[0].name = "my_node"
    with pytest.raises(Exception, match="(?i)bound|invalid|range"):
        ort_run(m, feeds)  # onnxruntime refuses it too
    from tensorforge.graph import run_reference
    from tensorforge_onnx import load
    g = load(m)
    with pytest.raises(DataCheckError, match=re.escape(f"{op} node 'my_node': {msg}")):
        run_reference(g, feeds)
    cm = tensorforge.compile(m, target="llvm -num-threads=2")
    with pytest.raises(KernelCheckError) as err:
        cm.run(feeds)
    assert str(err.value) == f"{op} node 'my_node': {msg}"
    good = {k: (np.zeros_like(v) if k == "i" else v) for k, v in feeds.items()}
    cm.run(good)  # the model still runs after an error


def test_constant_out_of_range_index_fails_at_import(llvm_target: Any, plugins: Any) -> None:
    from tensorforge_onnx import load

    x = rand(3, 4)
    m = _one("Gather", {"x": x}, {"i": np.array([1, 3], I64)}, axis=0)
    m.graph.node[0].name = "emb"
    with pytest.raises(TensorforgeError, match=r"Gather node 'emb'.*constant indices: index 3 "
                                               r"out of range \[-3, 2\] on axis 0"):
        load(m)


def test_lstm_lm_out_of_range_token(llvm_target: Any, plugins: Any) -> None:
    """Issue 12: token 10000 returned garbage logits, 10**9 was a SIGSEGV."""
    from tensorforge_onnx import models

    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    cm = tensorforge.compile(models.build("lstm_lm"), target="llvm -num-threads=2")
    feeds = models.example_inputs("lstm_lm")
    good = cm.run(feeds)[0]
    np.testing.assert_allclose(good, ort_run(models.build("lstm_lm"), feeds)[0], rtol=1e-4,
                               atol=1e-5)
    for token in (10000, 10**9, -10001, -(2**62)):
        bad = {"tokens": feeds["tokens"].copy()}
        bad["tokens"][17, 0] = token
        with pytest.raises(KernelCheckError) as err:
            cm.run(bad)
        assert str(err.value) == (f"Gather node 'gather_0': index {token} out of range "
                                  "[-10000, 9999] on axis 0")
        assert err.value.value == token
    neg = {"tokens": feeds["tokens"].copy()}
    neg["tokens"][17, 0] = -1  # negative indices count from the end, as in ONNX
    last = {"tokens": neg["tokens"].copy()}
    last["tokens"][17, 0] = 9999
    np.testing.assert_array_equal(cm.run(neg)[0], cm.run(last)[0])
    np.testing.assert_allclose(cm.run(neg)[0], ort_run(models.build("lstm_lm"), neg)[0],
                               rtol=1e-4, atol=1e-5)


def test_exported_package_reports_the_node(llvm_target: Any, plugins: Any, tmp_path: Any
                                           ) -> None:
    """The check's description travels in the package: a loaded model (numpy + ctypes only)
    names the node and the value too."""
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    x = rand(6, 3)
    m = _one("Gather", {"i": np.array([0, 1], I64)}, {"table": x}, axis=0)
    m.graph.node[0].name = "lookup"
    m.graph.node[0].input[:] = ["table", "i"]
    m.graph.output[0].type.tensor_type.elem_type = 1  # FLOAT, the table's type (was int64)
    path = tensorforge.compile(m, target="llvm -num-threads=1").export(tmp_path / "g.tfpkg")
    loaded = tensorforge.load(path)
    np.testing.assert_array_equal(loaded.run({"i": np.array([5, -6], I64)})[0], x[[5, 0]])
    with pytest.raises(KernelCheckError, match=r"^Gather node 'lookup': index 6 out of range "
                                               r"\[-6, 5\] on axis 0$"):
        loaded.run({"i": np.array([1, 6], I64)})
