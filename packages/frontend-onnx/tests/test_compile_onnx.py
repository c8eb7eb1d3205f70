"""A few ONNX models through the whole compiler (tensorforge.compile on the host CPU) against
onnxruntime: the new graph ops' kernels inside fused groups, not only their references."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge_onnx.testing import model, node, ort_run, rand

I64 = "int64"


@pytest.fixture
def compile_onnx(llvm_target: Any, plugins: Any) -> Any:
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")

    def run(m: Any, feeds: dict[str, np.ndarray], atol: float = 1e-4) -> None:
        cm = tensorforge.compile(m, target="llvm -num-threads=1")
        got = cm.run(feeds)
        for a, b in zip(got, ort_run(m, feeds)):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=atol)

    return run


def test_cnn_ops(compile_onnx: Any) -> None:
    nodes = [
        node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        node("PRelu", ["c", "slope"], ["p"]),
        node("ConvTranspose", ["p", "wt"], ["u"], strides=[2, 2], pads=[1, 1, 1, 1]),
        node("Pad", ["u", "pads"], ["pd"], mode="reflect"),
        node("Resize", ["pd", "", "sc"], ["r"], mode="linear"),
        node("Slice", ["r", "st", "en", "ax", "sp"], ["s"]),
        node("GlobalMaxPool", ["s"], ["gm"]),
        node("ReduceMean", ["s", "rax"], ["rm"], keepdims=1),
        node("Add", ["gm", "rm"], ["y"]),
        node("LogSoftmax", ["y"], ["out"], axis=1),
    ]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    inits = {"w": rand(4, 3, 3, 3), "b": rand(4), "slope": rand(4, 1, 1),
             "wt": rand(4, 2, 3, 3), "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], I64),
             "sc": np.array([1, 1, 0.5, 0.5], "float32"), "st": np.array([1], I64),
             "en": np.array([100], I64), "ax": np.array([3], I64), "sp": np.array([2], I64),
             "rax": np.array([2, 3], I64)}
    x = rand(1, 3, 6, 6)
    compile_onnx(model(nodes, {"x": x}, ["out"], inits, opset=18), {"x": x})


def test_transformer_block_ops(compile_onnx: Any) -> None:
    d = 8
    nodes = [
        node("LayerNormalization", ["x", "g", "bt"], ["ln"], axis=-1),
        node("MatMul", ["ln", "wq"], ["q"]),
        node("Transpose", ["ln"], ["lt"], perm=[0, 2, 1]),
        node("MatMul", ["q", "lt"], ["s"]),
        node("Div", ["s", "scale"], ["sd"]),
        node("Softmax", ["sd"], ["p"], axis=-1),
        node("MatMul", ["p", "ln"], ["o"]),
        node("Split", ["o", "split"], ["o1", "o2"], axis=2),
        node("Gather", ["o1", "idx"], ["gth"], axis=1),
        node("Elu", ["o2"], ["e"]),
        node("Concat", ["gth", "e"], ["out"], axis=2),
    ]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    inits = {"g": rand(d), "bt": rand(d), "wq": rand(d, d), "scale": np.array(3.0, "float32"),
             "split": np.array([4, 4], I64), "idx": np.array([3, 0, 1, 2, 4], I64)}
    x = rand(2, 5, d)
    compile_onnx(model(nodes, {"x": x}, ["out"], inits, opset=18), {"x": x})


def test_gru_and_lstm(compile_onnx: Any) -> None:
    seq, batch, inp, hid = 3, 2, 4, 5
    nodes = [
        node("GRU", ["x", "W", "R", "B"], ["Y", "Yh"], hidden_size=hid,
             direction="bidirectional"),
        node("LSTM", ["x", "W2", "R2"], ["Y2", "Yh2", "Yc2"], hidden_size=hid),
    ]
    nodes[1].name = "lstm"
    inits = {"W": rand(2, 3 * hid, inp), "R": rand(2, 3 * hid, hid), "B": rand(2, 6 * hid),
             "W2": rand(1, 4 * hid, inp), "R2": rand(1, 4 * hid, hid)}
    x = rand(seq, batch, inp)
    compile_onnx(model(nodes, {"x": x}, ["Y", "Yh", "Y2", "Yc2"], inits, opset=14), {"x": x})
