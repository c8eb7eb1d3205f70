"""Elementwise, activation, comparison, cast and reduction converters against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tensorforge_onnx.testing import node, rand, single

UNARY = ["Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Floor", "Ceil", "Erf", "HardSwish",
         "Softplus", "Reciprocal"]


@pytest.mark.parametrize("op", UNARY)
@pytest.mark.parametrize("opset", [11, 14, 21])
def test_unary(op: str, opset: int) -> None:
    if op == "HardSwish" and opset < 14:
        pytest.skip("HardSwish is opset 14+")
    single(op, {"x": rand(2, 3, 4)}, opset=opset)


def test_log_sqrt_not() -> None:
    single("Log", {"x": rand(3, 4, lo=0.1)})
    single("Sqrt", {"x": rand(3, 4, lo=0.0)})
    single("Not", {"x": rand(3, 4) > 0})


@pytest.mark.parametrize("op,attrs", [
    ("LeakyRelu", {}), ("LeakyRelu", {"alpha": 0.3}), ("HardSigmoid", {"alpha": 0.3}),
    ("Elu", {"alpha": 0.7}), ("Selu", {}), ("Selu", {"alpha": 1.5, "gamma": 2.0}),
])
def test_attr_activations(op: str, attrs: dict) -> None:
    single(op, {"x": rand(2, 5)}, **attrs)


def test_prelu() -> None:
    single("PRelu", {"x": rand(2, 3, 4, 4)}, {"slope": rand(3, 1, 1)})
    single("PRelu", {"x": rand(2, 3, 4, 4)}, {"slope": rand(4)})


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater",
                                "LessOrEqual", "GreaterOrEqual"])
def test_binary_broadcast(op: str) -> None:
    a, b = rand(2, 3, 4, lo=0.5), rand(3, 1, lo=0.5)
    if op == "Equal":
        b = a[0, :, :1].copy()
    single(op, {"a": a, "b": b}, opset=13 if op.endswith("Equal") else 11)


def test_int_ops_and_logical() -> None:
    a, b = np.array([[7, -7], [3, 4]], "int64"), np.array([2, 3], "int64")
    single("Div", {"a": a, "b": b})
    single("Add", {"a": a, "b": b})
    p, q = rand(3, 4) > 0, rand(3, 4) > 0
    for op in ("And", "Or", "Xor"):
        single(op, {"p": p, "q": q})


def test_pow_mixed_exponent() -> None:
    single("Pow", {"x": rand(3, 4, lo=0.5)}, {"e": np.array(2, "int64")}, opset=15)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic(op: str) -> None:
    single(op, {"a": rand(2, 3), "b": rand(3), "c": rand(2, 1)}, opset=13)
    single(op, {"a": rand(2, 3)}, opset=13)


@pytest.mark.parametrize("opset", [10, 11, 13])
def test_clip(opset: int) -> None:
    x = rand(3, 4)
    if opset < 11:
        single("Clip", {"x": x}, opset=opset, min=-0.5, max=0.7)
        single("Clip", {"x": x}, opset=opset, max=0.7)
        return
    single("Clip", {"x": x}, {"lo": np.array(-0.5, "float32"), "hi": np.array(0.7, "float32")},
           opset=opset)
    single("Clip", {"x": x}, {"hi": np.array(0.7, "float32")}, opset=opset,
           extra_inputs=["x", "", "hi"])
    single("Clip", {"x": x}, opset=opset)
    # bounds fed at run time: maximum/minimum nodes
    single("Clip", {"x": x, "lo": np.array(-0.1, "float32"), "hi": np.array(0.2, "float32")},
           opset=opset)


def test_clip_int() -> None:
    single("Clip", {"x": np.arange(-5, 5, dtype="int64")}, {"lo": np.array(-2, "int64")},
           opset=13, extra_inputs=["x", "lo"])


def test_where_cast() -> None:
    c = rand(3, 4) > 0
    single("Where", {"c": c, "a": rand(3, 4), "b": rand(4)})
    from onnx import TensorProto

    single("Cast", {"x": rand(3, 4) * 10}, to=TensorProto.INT32)
    single("Cast", {"x": rand(3, 4)}, to=TensorProto.BOOL)
    single("Cast", {"x": np.arange(6, dtype="int64")}, to=TensorProto.FLOAT)
    single("CastLike", {"x": np.arange(6, dtype="int64"), "like": rand(1)})


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceSumSquare", "ReduceL1",
          "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"]


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_attr_axes(op: str, keepdims: int) -> None:
    x = rand(2, 3, 4, lo=0.1)
    single(op, {"x": x}, opset=11, axes=[1, -1], keepdims=keepdims)
    single(op, {"x": x}, opset=11, keepdims=keepdims)


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_input_axes(op: str) -> None:
    x = rand(2, 3, 4, lo=0.1)
    opset = 13 if op == "ReduceSum" else 18
    single(op, {"x": x}, {"axes": np.array([0, 2], "int64")}, opset=opset, keepdims=0)
    single(op, {"x": x}, opset=opset)  # no axes: all
    g = single(op, {"x": x}, opset=opset, noop_with_empty_axes=1)
    assert "reduce" not in " ".join(g.op_counts())


def test_reduce_sum_opset11_vs_13() -> None:
    x = rand(2, 3, 4)
    single("ReduceSum", {"x": x}, opset=11, axes=[1])
    single("ReduceSum", {"x": x}, {"axes": np.array([1], "int64")}, opset=13)


def test_reduce_bool_max() -> None:
    single("ReduceMax", {"x": rand(3, 4) > 0}, {"axes": np.array([1], "int64")}, opset=20)


def test_identity_node_helper() -> None:
    assert node("Relu", ["a"], ["b"]).name == "relu_node"
