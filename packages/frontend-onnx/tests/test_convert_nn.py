"""Convolution, pooling, dense/matmul, normalization, softmax and dropout converters against
onnxruntime, including auto_pad, 1-D forms and opset variants."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge_onnx.testing import check, model, node, rand, single


@pytest.mark.parametrize("attrs", [
    {}, {"pads": [1, 1, 1, 1]}, {"strides": [2, 2], "pads": [1, 0, 2, 1]},
    {"dilations": [2, 2]}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, {"auto_pad": "VALID", "strides": [2, 1]},
])
@pytest.mark.parametrize("opset", [11, 21])
def test_conv(attrs: dict, opset: int) -> None:
    single("Conv", {"x": rand(1, 4, 9, 8)}, {"w": rand(6, 4, 3, 3), "b": rand(6)}, opset=opset,
           atol=1e-4, **attrs)


def test_conv_groups_depthwise_1d() -> None:
    single("Conv", {"x": rand(2, 4, 7, 7)}, {"w": rand(6, 2, 3, 3)}, group=2, atol=1e-4)
    single("Conv", {"x": rand(1, 4, 7, 7)}, {"w": rand(4, 1, 3, 3)}, group=4, pads=[1] * 4)
    single("Conv", {"x": rand(2, 3, 10)}, {"w": rand(5, 3, 3)}, strides=[2], pads=[1, 1])


@pytest.mark.parametrize("attrs", [
    {}, {"strides": [2, 2]}, {"strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"strides": [2, 2], "output_padding": [1, 1]}, {"dilations": [2, 1]},
    {"strides": [2, 2], "output_shape": [10, 9]}, {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"group": 2},
])
def test_conv_transpose(attrs: dict) -> None:
    single("ConvTranspose", {"x": rand(1, 4, 4, 4)}, {"w": rand(4, 3, 3, 3), "b": rand(
        3 * attrs.get("group", 1))}, atol=1e-4, **attrs)


def test_conv_transpose_1d() -> None:
    single("ConvTranspose", {"x": rand(1, 2, 5)}, {"w": rand(2, 3, 3)}, strides=[2])


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("attrs", [
    {"kernel_shape": [2, 2]}, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
    {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2]},
    {"kernel_shape": [3, 2], "auto_pad": "SAME_LOWER"},
])
def test_pool(op: str, attrs: dict) -> None:
    single(op, {"x": rand(1, 3, 8, 7)}, **attrs)
    if op == "AveragePool" and "pads" in attrs:
        single(op, {"x": rand(1, 3, 8, 7)}, count_include_pad=1, **attrs)


def test_pool_1d_and_global() -> None:
    single("MaxPool", {"x": rand(2, 3, 9)}, kernel_shape=[3], strides=[2])
    single("AveragePool", {"x": rand(2, 3, 9)}, kernel_shape=[2])
    single("GlobalAveragePool", {"x": rand(2, 3, 5, 4)})
    single("GlobalAveragePool", {"x": rand(2, 3, 5)})
    single("GlobalMaxPool", {"x": rand(2, 3, 5, 4)})


@pytest.mark.parametrize("attrs", [
    {}, {"transA": 1}, {"transB": 1}, {"alpha": 0.5, "beta": 2.0}, {"transA": 1, "transB": 1},
])
def test_gemm(attrs: dict) -> None:
    a = rand(5, 4) if attrs.get("transA") else rand(4, 5)
    b = rand(3, 5) if attrs.get("transB") else rand(5, 3)
    single("Gemm", {"a": a}, {"b": b, "c": rand(3)}, **attrs)
    single("Gemm", {"a": a, "b": b}, {"c": rand(4, 1)}, **attrs)  # B at run time
    single("Gemm", {"a": a}, {"b": b}, opset=11, **attrs)  # no C


@pytest.mark.parametrize("sa,sb", [
    ((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((4,), (4, 5)), ((3, 4), (4,)),
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (3, 4, 5)),
])
def test_matmul(sa: tuple, sb: tuple) -> None:
    single("MatMul", {"a": rand(*sa)}, {"b": rand(*sb)})
    single("MatMul", {"a": rand(*sa), "b": rand(*sb)})


def test_attention_pattern() -> None:
    """Q K^T / sqrt(d) -> softmax -> V, 4-D batched, as exported transformer blocks do."""
    q, k, v = rand(2, 4, 6, 8), rand(2, 4, 6, 8), rand(2, 4, 6, 8)
    nodes = [
        node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
        node("MatMul", ["q", "kt"], ["s"]),
        node("Div", ["s", "scale"], ["sd"]),
        node("Softmax", ["sd"], ["p"], axis=-1),
        node("MatMul", ["p", "v"], ["out"]),
    ]
    nodes[1].name, nodes[4].name = "mm1", "mm2"
    m = model(nodes, {"q": q, "k": k, "v": v}, ["out"],
              {"scale": np.array(np.sqrt(8), "float32")}, opset=17)
    check(m, {"q": q, "k": k, "v": v})


@pytest.mark.parametrize("op", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (11, -1), (11, 0), (13, 1), (13, -1)])
def test_softmax(op: str, opset: int, axis: int) -> None:
    single(op, {"x": rand(2, 3, 4)}, opset=opset, axis=axis)
    single(op, {"x": rand(2, 3, 4)}, opset=opset)


@pytest.mark.parametrize("opset", [11, 15])
def test_batch_norm(opset: int) -> None:
    c = 3
    single("BatchNormalization", {"x": rand(2, c, 4, 4)},
           {"s": rand(c), "b": rand(c), "m": rand(c), "v": rand(c, lo=0.5)}, opset=opset,
           epsilon=1e-3)


def test_instance_norm() -> None:
    single("InstanceNormalization", {"x": rand(2, 3, 4, 5)}, {"s": rand(3), "b": rand(3)},
           atol=1e-4)


@pytest.mark.parametrize("axis", [-1, 1, 0])
def test_layer_norm(axis: int) -> None:
    x = rand(2, 3, 8)
    shape = x.shape[axis % 3:]
    single("LayerNormalization", {"x": x}, {"s": rand(*shape), "b": rand(*shape)}, axis=axis,
           atol=1e-4)
    # Mean and InvStdDev outputs requested: the decomposed form
    single("LayerNormalization", {"x": x}, {"s": rand(*shape)}, axis=axis, n_out=3, atol=1e-4)


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_dropout(opset: int) -> None:
    single("Dropout", {"x": rand(3, 4)}, opset=opset)
    single("Dropout", {"x": rand(3, 4)}, opset=opset, n_out=2)
