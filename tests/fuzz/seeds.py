"""The fuzzer's seed corpus: small valid ONNX models that together cover the frontend's main
converters (convolutions, pools, dense, normalizations, shapes, gathers, reductions, RNNs,
elementwise and comparison ops) and compile in well under a second each.

Weights come from a fixed-seed generator, so a seed model is the same in every process (the
fuzzer's cases name a seed model by key and rebuild it in the worker)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
F = TensorProto.FLOAT
I64 = TensorProto.INT64


def _w(rng: np.random.Generator, *shape: int, scale: float = 0.5) -> np.ndarray:
    return (rng.standard_normal(shape) * scale).astype("float32")


def _model(name: str, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], inits: dict[str, np.ndarray],
           opset: int = OPSET) -> onnx.ModelProto:
    g = helper.make_graph(nodes, name, inputs, outputs,
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def _vi(name: str, elem: int, shape: list[int]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def conv_net() -> onnx.ModelProto:
    """Conv + bias -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax."""
    r = np.random.default_rng(1)
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1],
          kernel_shape=[3, 3]),
        n("Relu", ["c"], ["r"], name="relu"),
        n("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        n("Flatten", ["p"], ["f"], name="flatten", axis=1),
        n("Gemm", ["f", "fw", "fb"], ["g"], name="gemm", transB=1),
        n("Softmax", ["g"], ["y"], name="softmax", axis=1),
    ]
    inits = {"w": _w(r, 4, 3, 3, 3), "b": _w(r, 4), "fw": _w(r, 5, 64), "fb": _w(r, 5)}
    return _model("conv_net", nodes, [_vi("x", F, [1, 3, 8, 8])], [_vi("y", F, [1, 5])], inits)


def norm_pool() -> onnx.ModelProto:
    """BatchNormalization -> AveragePool (padded) -> depthwise Conv -> GlobalAveragePool."""
    r = np.random.default_rng(2)
    n = helper.make_node
    nodes = [
        n("BatchNormalization", ["x", "s", "bb", "m", "v"], ["bn"], name="bn", epsilon=1e-5),
        n("AveragePool", ["bn"], ["ap"], name="avg", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          strides=[1, 1], count_include_pad=0),
        n("Conv", ["ap", "dw"], ["dc"], name="dwconv", group=4, kernel_shape=[3, 3],
          strides=[2, 2]),
        n("Clip", ["dc", "lo", "hi"], ["cl"], name="clip"),
        n("GlobalAveragePool", ["cl"], ["y"], name="gap"),
    ]
    inits = {"s": np.abs(_w(r, 4)) + 0.5, "bb": _w(r, 4), "m": _w(r, 4),
             "v": np.abs(_w(r, 4)) + 0.5, "dw": _w(r, 4, 1, 3, 3),
             "lo": np.array(0.0, "float32"), "hi": np.array(6.0, "float32")}
    return _model("norm_pool", nodes, [_vi("x", F, [1, 4, 7, 7])], [_vi("y", F, [1, 4, 1, 1])],
                  inits)


def dense_chain() -> onnx.ModelProto:
    """MatMul + Add -> Tanh -> MatMul -> Sigmoid * x-skip -> ReduceMean."""
    r = np.random.default_rng(3)
    n = helper.make_node
    nodes = [
        n("MatMul", ["x", "w1"], ["h"], name="mm1"),
        n("Add", ["h", "b1"], ["hb"], name="bias1"),
        n("Tanh", ["hb"], ["t"], name="tanh"),
        n("MatMul", ["t", "w2"], ["o"], name="mm2"),
        n("Sigmoid", ["o"], ["s"], name="sigmoid"),
        n("Mul", ["s", "x"], ["gated"], name="gate"),
        n("ReduceMean", ["gated"], ["y"], name="mean", axes=[1], keepdims=1),
    ]
    inits = {"w1": _w(r, 6, 5), "b1": _w(r, 5), "w2": _w(r, 5, 6)}
    return _model("dense_chain", nodes, [_vi("x", F, [3, 6])], [_vi("y", F, [3, 1])], inits)


def shape_ops() -> onnx.ModelProto:
    """Transpose -> Reshape -> Concat -> Slice -> Unsqueeze -> Squeeze -> Split -> Sub."""
    n = helper.make_node
    nodes = [
        n("Transpose", ["x"], ["t"], name="transpose", perm=[0, 2, 1]),
        n("Reshape", ["t", "shape"], ["rs"], name="reshape"),
        n("Concat", ["rs", "z"], ["cat"], name="concat", axis=1),
        n("Slice", ["cat", "starts", "ends", "axes", "steps"], ["sl"], name="slice"),
        n("Unsqueeze", ["sl", "uax"], ["us"], name="unsqueeze"),
        n("Squeeze", ["us", "uax"], ["sq"], name="squeeze"),
        n("Split", ["sq", "split"], ["a", "b"], name="split", axis=1),
        n("Sub", ["a", "b"], ["y"], name="sub"),
    ]
    inits = {"shape": np.array([2, 12], "int64"), "starts": np.array([1], "int64"),
             "ends": np.array([17], "int64"), "axes": np.array([1], "int64"),
             "steps": np.array([2], "int64"), "uax": np.array([0], "int64"),
             "split": np.array([4, 4], "int64")}
    return _model("shape_ops", nodes, [_vi("x", F, [2, 3, 4]), _vi("z", F, [2, 6])],
                  [_vi("y", F, [2, 4])], inits)


def elementwise() -> onnx.ModelProto:
    """Broadcast arithmetic, comparisons and Where, activations, Pow, Cast (no NaN: the
    seed is valid; mutations may make NaNs)."""
    n = helper.make_node
    nodes = [
        n("Add", ["x", "v"], ["a"], name="add"),
        n("Div", ["a", "d"], ["q"], name="div"),
        n("Max", ["q", "x"], ["mx"], name="max"),
        n("Greater", ["mx", "v"], ["gt"], name="greater"),
        n("Where", ["gt", "mx", "q"], ["w"], name="where"),
        n("LeakyRelu", ["w"], ["lr"], name="leaky", alpha=0.1),
        n("Exp", ["lr"], ["e"], name="exp"),
        n("Pow", ["e", "pw"], ["p"], name="pow"),
        n("Cast", ["gt"], ["gf"], name="cast", to=F),
        n("Sum", ["p", "gf", "x"], ["s"], name="sum"),
        n("Abs", ["s"], ["ab"], name="abs"),
        n("Sqrt", ["ab"], ["sq"], name="sqrt"),
        n("HardSigmoid", ["sq"], ["y"], name="hsig", alpha=0.2, beta=0.5),
    ]
    inits = {"d": np.array([2.0, -4.0, 0.5], "float32"), "pw": np.array(0.5, "float32")}
    return _model("elementwise", nodes, [_vi("x", F, [2, 3]), _vi("v", F, [3])],
                  [_vi("y", F, [2, 3])], inits)


def embedding() -> onnx.ModelProto:
    """Gather rows of a table by int64 ids -> LayerNormalization -> ReduceSum -> Softmax."""
    r = np.random.default_rng(4)
    n = helper.make_node
    nodes = [
        n("Gather", ["table", "ids"], ["emb"], name="gather", axis=0),
        n("LayerNormalization", ["emb", "gamma", "beta"], ["ln"], name="layernorm", axis=-1),
        n("ReduceSum", ["ln", "rax"], ["rs"], name="reducesum", keepdims=0),
        n("Softmax", ["rs"], ["y"], name="softmax", axis=-1),
    ]
    inits = {"table": _w(r, 10, 4), "gamma": np.abs(_w(r, 4)) + 0.5, "beta": _w(r, 4),
             "rax": np.array([1], "int64")}
    return _model("embedding", nodes, [_vi("ids", I64, [2, 3])], [_vi("y", F, [2, 4])], inits)


def lstm_step() -> onnx.ModelProto:
    """A 3-step LSTM with 4 hidden units, then the last hidden state through a Gemm."""
    r = np.random.default_rng(5)
    n = helper.make_node
    nodes = [
        n("LSTM", ["x", "W", "R", "B"], ["ys", "h", "c"], name="lstm", hidden_size=4),
        n("Squeeze", ["h", "ax0"], ["h2"], name="squeeze"),
        n("Gemm", ["h2", "fw"], ["y"], name="gemm"),
    ]
    inits = {"W": _w(r, 1, 16, 3), "R": _w(r, 1, 16, 4), "B": _w(r, 1, 32),
             "ax0": np.array([0], "int64"), "fw": _w(r, 4, 2)}
    return _model("lstm_step", nodes, [_vi("x", F, [3, 1, 3])], [_vi("y", F, [1, 2])], inits)


def upsample() -> onnx.ModelProto:
    """ConvTranspose (stride 2) -> Resize (nearest, x2) -> Pad -> ReduceMax."""
    r = np.random.default_rng(6)
    n = helper.make_node
    nodes = [
        n("ConvTranspose", ["x", "w"], ["ct"], name="deconv", strides=[2, 2],
          kernel_shape=[2, 2]),
        n("Resize", ["ct", "", "scales"], ["rz"], name="resize", mode="nearest"),
        n("Pad", ["rz", "pads"], ["pd"], name="pad", mode="constant"),
        n("ReduceMax", ["pd"], ["y"], name="reducemax", axes=[1], keepdims=1),
    ]
    inits = {"w": _w(r, 2, 3, 2, 2), "scales": np.array([1, 1, 2, 2], "float32"),
             "pads": np.array([0, 0, 1, 0, 0, 0, 0, 1], "int64")}
    return _model("upsample", nodes, [_vi("x", F, [1, 2, 3, 3])], [_vi("y", F, [1, 1, 13, 13])],
                  inits)


def gru_split() -> onnx.ModelProto:
    """A bidirectional 2-step GRU, its output split in two, concatenated the other way."""
    r = np.random.default_rng(7)
    n = helper.make_node
    nodes = [
        n("GRU", ["x", "W", "R", "B"], ["ys", "h"], name="gru", hidden_size=3,
          direction="bidirectional", linear_before_reset=1),
        n("Split", ["ys", "halves"], ["fw", "bw"], name="split", axis=1),
        n("Concat", ["bw", "fw"], ["cat"], name="concat", axis=1),
        n("ReduceMean", ["cat"], ["y"], name="mean", axes=[0], keepdims=0),
    ]
    inits = {"W": _w(r, 2, 9, 4), "R": _w(r, 2, 9, 3), "B": _w(r, 2, 18),
             "halves": np.array([1, 1], "int64")}
    return _model("gru_split", nodes, [_vi("x", F, [2, 1, 4])], [_vi("y", F, [2, 1, 3])],
                  inits, opset=13)


def misc_ops() -> onnx.ModelProto:
    """Expand, reflect Pad, Gather on axis 1 with a negative index, a negative-step Slice,
    InstanceNormalization, Erf, Equal/Where, Flatten, LogSoftmax."""
    r = np.random.default_rng(8)
    n = helper.make_node
    nodes = [
        n("Expand", ["x", "eshape"], ["e"], name="expand"),
        n("Pad", ["e", "pads"], ["p"], name="pad", mode="reflect"),
        n("Gather", ["p", "idx"], ["g"], name="gather", axis=1),
        n("Slice", ["g", "st", "en", "ax", "step"], ["s"], name="slice"),
        n("InstanceNormalization", ["s", "sc", "bi"], ["inorm"], name="inorm", epsilon=1e-5),
        n("Erf", ["inorm"], ["er"], name="erf"),
        n("Equal", ["er", "er"], ["eq"], name="equal"),
        n("Where", ["eq", "er", "inorm"], ["w"], name="where"),
        n("Flatten", ["w"], ["f"], name="flatten", axis=1),
        n("LogSoftmax", ["f"], ["y"], name="logsoftmax", axis=1),
    ]
    inits = {"eshape": np.array([2, 3, 4, 5], "int64"),
             "pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], "int64"),
             "idx": np.array([0, -1], "int64"), "st": np.array([-1], "int64"),
             "en": np.array([-100], "int64"), "ax": np.array([3], "int64"),
             "step": np.array([-2], "int64"), "sc": np.abs(_w(r, 2)) + 0.5, "bi": _w(r, 2)}
    return _model("misc_ops", nodes, [_vi("x", F, [1, 3, 4, 1])], [_vi("y", F, [2, 48])], inits)


SEEDS: dict[str, Callable[[], onnx.ModelProto]] = {
    f.__name__: f for f in (conv_net, norm_pool, dense_chain, shape_ops, elementwise, embedding,
                            lstm_step, upsample, gru_split, misc_ops)
}
