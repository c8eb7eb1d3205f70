"""Int8 models in QDQ format, quantized by onnxruntime's `quantize_static`, compiled to int8
kernels (graph/passes/qdq.py -> `qconv2d_nchwc`) and compared with ONNX Runtime's int8 run
(its default optimizations fuse the same patterns into QLinearConv): the convolutions'
requantization is ONNX Runtime's arithmetic, so a net of convolutions (with a residual add)
matches to the bit; ResNet-18 within one quantization step."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

import tensorforge
from tensorforge.graph.passes import optimize
from tensorforge_onnx import load
from tensorforge_onnx.testing import model, node, quantize_qdq

SHAPE = (1, 3, 16, 16)


@pytest.fixture
def onnx_plugin(llvm_target: Any, plugins: Any) -> Any:
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    return llvm_target


def _small_net(seed: int = 0) -> onnx.ModelProto:
    """conv3x3+relu, 3x3 max pool, conv3x3 stride 2 (no bias)+relu, conv1x1 + residual add,
    relu."""
    rng = np.random.default_rng(seed)

    def f(*s: int, sd: float = 0.2) -> np.ndarray:
        return rng.normal(0, sd, s).astype("float32")

    nodes = [node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             node("Relu", ["c1"], ["r1"]),
             node("MaxPool", ["r1"], ["p1"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             node("Conv", ["p1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c2"], ["r2"]),
             node("Conv", ["r2", "w3", "b3"], ["c3"]),
             node("Add", ["c3", "r2"], ["a"]),
             node("Relu", ["a"], ["y"])]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    inits = {"w1": f(16, 3, 3, 3, sd=0.3), "b1": f(16, sd=0.1), "w2": f(32, 16, 3, 3, sd=0.1),
             "w3": f(32, 32, 1, 1, sd=0.1), "b3": f(32, sd=0.1)}
    return model(nodes, {"x": np.zeros(SHAPE, "float32")}, ["y"], inits)


def _calibration(n: int = 4, seed: int = 1) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [{"x": rng.standard_normal(SHAPE).astype("float32")} for _ in range(n)]


def _ort_int8_is_exact() -> bool:
    """ORT's fused u8s8 convolutions are exact only with VNNI: on AVX2 without it they use
    `vpmaddubsw`, whose int16 sums of product pairs saturate (ORT's quantization docs), and
    outputs land up to 8 steps off on `_small_net` (seen on an AMD EPYC, AVX2 only)."""
    from tensorforge.runtime.cpu_features import cpuinfo_flags

    flags = cpuinfo_flags() or set()
    return bool({"avx512_vnni", "avx_vnni"} & flags) or "avx2" not in flags


def _ort(m: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """ONNX Runtime's int8 run where it is exact; otherwise its unfused QDQ path (dequantize,
    float op, quantize: graph optimizations off), which is exact (bit-equal to ours on
    `_small_net`, where the fused kernels are 3-8 steps off)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    if not _ort_int8_is_exact():
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def _output_scale(m: onnx.ModelProto) -> float:
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in m.graph.initializer}
    q = [n for n in m.graph.node if n.op_type == "QuantizeLinear"][-1]
    return float(inits[q.input[1]].reshape(-1)[0])


def _masters(cm: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for k in cm.desc["kernels"]:
        out[k["master"]] = out.get(k["master"], 0) + 1
    return out


@pytest.mark.parametrize("options", [
    {}, {"per_channel": True},
    {"activation_type": "QUInt8"},  # uint8 activations with zero points
], ids=["per_tensor", "per_channel", "uint8_activations"])
def test_small_qdq_net_matches_ort_exactly(onnx_plugin: Any, options: dict) -> None:
    from onnxruntime.quantization import QuantType

    if "activation_type" in options:
        options = {**options, "activation_type": QuantType.QUInt8}
    qm = quantize_qdq(_small_net(), _calibration(), **options)
    cm = tensorforge.compile(qm, target="llvm -num-threads=1")
    masters = _masters(cm)
    assert masters.get("qconv2d_nchwc") == 3, masters  # every convolution is int8
    assert not {"conv2d", "conv2d_nchwc"} & set(masters), masters
    for x in _calibration(3, seed=7):
        np.testing.assert_array_equal(cm.run(x)[0], _ort(qm, x))


def test_qdq_pass_rewrites_and_keeps_ort_arithmetic(onnx_plugin: Any) -> None:
    """The graph after the passes: qconv2d in place of each conv, the float32 per-channel
    multiplier float32(sx * sw) / sy, and (opt-level 1, no layout pass) the NCHW op."""
    qm = quantize_qdq(_small_net(), _calibration(), per_channel=True)
    g = optimize(load(qm), tensorforge.Target.parse("llvm -num-threads=1"), opt_level=1)
    counts = g.op_counts()
    assert counts.get("qconv2d") == 3 and "conv2d" not in counts, counts
    pool = next(n for n in g.nodes if n.op == "max_pool2d")
    assert pool.inputs[0].dtype == "int8"  # the pool runs on the integers
    cm = tensorforge.compile(qm, target="llvm -num-threads=1", opt_level=1)
    x = _calibration(1, seed=9)[0]
    np.testing.assert_array_equal(cm.run(x)[0], _ort(qm, x))


def test_asymmetric_uint8_weights_stay_float_and_correct(onnx_plugin: Any) -> None:
    """Weights with zero points (uint8 asymmetric) are not rewritten: the float QDQ form
    runs, within one quantization step of ONNX Runtime's integer kernels."""
    from onnxruntime.quantization import QuantType

    qm = quantize_qdq(_small_net(), _calibration(), weight_type=QuantType.QUInt8,
                      activation_type=QuantType.QUInt8)
    cm = tensorforge.compile(qm, target="llvm -num-threads=1")
    assert "qconv2d_nchwc" not in _masters(cm)
    x = _calibration(1, seed=3)[0]
    diff = np.abs(cm.run(x)[0] - _ort(qm, x)) / _output_scale(qm)
    assert diff.max() < 1.01


@pytest.mark.slow
def test_resnet18_qdq_matches_ort_int8(onnx_plugin: Any) -> None:
    """The zoo's ResNet-18 (batch norms unfolded, as the quantizer leaves them without
    pre-processing) quantized per channel: 20 int8 convolutions, outputs within one
    quantization step of ONNX Runtime's int8 run, the same top-1."""
    from tensorforge_onnx import models

    rng = np.random.default_rng(0)
    calib = [{"input": rng.standard_normal((1, 3, 224, 224)).astype("float32")}
             for _ in range(2)]
    qm = quantize_qdq(models.build("resnet18"), calib, per_channel=True)
    cm = tensorforge.compile(qm, target="llvm -num-threads=1")
    assert _masters(cm).get("qconv2d_nchwc") == 20
    x = {"input": rng.standard_normal((1, 3, 224, 224)).astype("float32")}
    got, want = cm.run(x)[0], _ort(qm, x)
    assert np.abs(got - want).max() / _output_scale(qm) < 1.01  # one step at most
    assert got.argmax() == want.argmax()


def test_hand_written_qdq_conv_relu(onnx_plugin: Any) -> None:
    """DQ -> Conv -> Relu -> Q written by hand (the quantizer drops such Relus): rewritten
    with the Relu as the clip's lower bound (the output zero point), stride 2, per
    channel int8 weights, uint8 activations; within one step of ONNX Runtime (which runs
    this pattern as a float Conv, not fused)."""
    rng = np.random.default_rng(5)
    inits = {"xs": np.array(0.05, "float32"), "xz": np.array(120, "uint8"),
             "wq": rng.integers(-127, 128, (8, 4, 3, 3)).astype("int8"),
             "ws": rng.uniform(0.002, 0.01, 8).astype("float32"),
             "wz": np.zeros(8, "int8"), "ys": np.array(0.04, "float32"),
             "yz": np.array(10, "uint8")}
    inits["bq"] = rng.integers(-3000, 3000, 8).astype("int32")
    inits["bs"] = (inits["xs"] * inits["ws"]).astype("float32")
    inits["bz"] = np.zeros(8, "int32")
    nodes = [node("DequantizeLinear", ["xq", "xs", "xz"], ["x"]),
             node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], axis=0),
             node("DequantizeLinear", ["bq", "bs", "bz"], ["b"], axis=0),
             node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
             node("Relu", ["c"], ["r"]),
             node("QuantizeLinear", ["r", "ys", "yz"], ["yq"]),
             node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    xq = rng.integers(0, 256, (1, 4, 9, 9)).astype("uint8")
    m = model(nodes, {"xq": xq}, ["y"], inits, opset=17)
    g = optimize(load(m), tensorforge.Target.parse("llvm -num-threads=1"), opt_level=1)
    clip = [n for n in g.nodes if n.op == "clip"]
    assert g.op_counts().get("qconv2d") == 1 and clip[0].attrs == {"min": 10.0, "max": 255.0}
    cm = tensorforge.compile(m, target="llvm -num-threads=1")
    assert _masters(cm).get("qconv2d_nchwc") == 1
    got, want = cm.run({"xq": xq})[0], _ort(m, {"xq": xq})
    assert got.min() >= 0 and np.abs(got - want).max() / 0.04 < 1.01


def test_qdq_batch_norm_left_by_the_quantizer(onnx_plugin: Any) -> None:
    """A BatchNormalization after a conv (not folded before quantization) gets quantized
    parameters (dequantize of constants): folded to constants for fold_batch_norm; with that
    pass disabled the batch_norm stays an op, kept in NCHW by the layout pass."""
    from tensorforge.graph.passes import GraphPassContext

    rng = np.random.default_rng(2)
    nodes = [node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             node("BatchNormalization", ["c", "g", "b", "mu", "var"], ["bn"]),
             node("Relu", ["bn"], ["y"])]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    inits = {"w": rng.normal(0, 0.3, (16, 3, 3, 3)).astype("float32"),
             "g": rng.uniform(0.5, 1.5, 16).astype("float32"),
             "b": rng.normal(0, 0.1, 16).astype("float32"),
             "mu": rng.normal(0, 0.1, 16).astype("float32"),
             "var": rng.uniform(0.5, 1.5, 16).astype("float32")}
    qm = quantize_qdq(model(nodes, {"x": np.zeros(SHAPE, "float32")}, ["y"], inits),
                      _calibration())
    x = _calibration(1, seed=4)[0]
    want, scale = _ort(qm, x), _output_scale(qm)
    for disabled in (set(), {"fold_constant_dequantize"}):
        with GraphPassContext(disabled=disabled):
            cm = tensorforge.compile(qm, target="llvm -num-threads=1")
        assert _masters(cm).get("qconv2d_nchwc") == 1
        assert np.abs(cm.run(x)[0] - want).max() / scale < 1.01


def test_int8_model_exports_and_loads(onnx_plugin: Any, tmp_path: Any) -> None:
    """The package of an int8 model runs as compiled (its CPU features recorded: VNNI where
    the kernels use it)."""
    qm = quantize_qdq(_small_net(), _calibration())
    cm = tensorforge.compile(qm, target="llvm -num-threads=1")
    x = _calibration(1, seed=11)[0]
    loaded = tensorforge.load(cm.export(tmp_path / "int8.tfpkg"))
    np.testing.assert_array_equal(loaded.run(x)[0], cm.run(x)[0])
