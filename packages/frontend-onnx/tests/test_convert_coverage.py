"""Converters of the ops added for the node suite's whole denominator, against onnxruntime:
references (`single`: import + run_reference) and, where the behaviour lives in the
compiler or the executor, compiled kernels (data-dependent output sizes, specialized shape
inputs, quantized ops)."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

import tensorforge
from tensorforge_onnx.backend import TensorforgeBackend
from tensorforge_onnx.errors import OnnxImportError
from tensorforge_onnx.testing import model, node, ort_run, rand, single

I64 = "int64"


@pytest.mark.parametrize("op", ["Sin", "Cos", "Tan", "Atan", "Sinh", "Cosh", "Asinh", "Sign",
                                "Round", "Softsign", "Mish"])
def test_unary_math(op: str) -> None:
    single(op, {"x": rand(3, 4)}, opset=22, rtol=1e-4)


@pytest.mark.parametrize("op", ["Asin", "Acos", "Atanh"])
def test_unit_interval_math(op: str) -> None:
    single(op, {"x": rand(3, 4, lo=-0.95, hi=0.95)}, opset=22, rtol=1e-4)


@pytest.mark.parametrize("op,attrs", [("Gelu", {}), ("Gelu", {"approximate": "tanh"}),
                                      ("Shrink", {"lambd": 0.7, "bias": 0.2}),
                                      ("ThresholdedRelu", {"alpha": 0.5}),
                                      ("Celu", {"alpha": 2.0})])
def test_attr_activations(op: str, attrs: dict[str, Any]) -> None:
    single(op, {"x": rand(2, 6)}, opset=22, rtol=1e-4, **attrs)


@pytest.mark.parametrize("fmod", [0, 1])
def test_mod(fmod: int) -> None:
    a = np.array([-7, -3, 5, 9, 11, 0], "int32")
    b = np.array([3, -2, 4, -5, 1, 7], "int32")
    single("Mod", {"a": a, "b": b}, fmod=fmod)
    single("Mod", {"a": rand(6) * 5, "b": rand(6, lo=0.5)}, fmod=1)


def test_bit_shift_and_bitwise() -> None:
    x = np.array([1, 7, 255, 128], "uint8")
    y = np.array([1, 3, 9, 7], "uint8")  # 9: beyond the width gives 0 (ONNX 28)
    g = single("BitShift", {"x": x, "y": y}, direction="LEFT")
    assert g.nodes[-1].op == "bit_shift"
    single("BitwiseAnd", {"a": x, "b": y}, opset=18)
    single("BitwiseXor", {"a": x, "b": y}, opset=18)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_max_min(op: str, last: int) -> None:
    x = np.array([[1, 3, 3, 0], [2, 2, 1, 2]], "float32")
    single(op, {"x": x}, axis=1, keepdims=0, select_last_index=last)


def test_topk_cumsum_trilu_onehot() -> None:
    x = rand(3, 7)
    single("TopK", {"x": x}, {"k": np.array([3], I64)}, n_out=2, axis=1, opset=11)
    single("CumSum", {"x": x}, {"axis": np.array(1, I64)}, exclusive=1, reverse=1)
    single("Trilu", {"x": x}, {"k": np.array(1, I64)}, upper=0, opset=14)
    idx = np.array([[0, 2], [-1, 5]], I64)
    single("OneHot", {"i": idx}, {"depth": np.array(4, I64),
                                  "v": np.array([0.5, 2.0], "float32")}, axis=1)


def test_einsum() -> None:
    single("Einsum", {"a": rand(2, 3, 4), "b": rand(2, 4, 5)}, equation="bij,bjk->bik",
           opset=12, rtol=1e-4)
    single("Einsum", {"a": rand(3, 4, 4)}, equation="...ii->...i", opset=12)


def test_norms() -> None:
    single("RMSNormalization", {"x": rand(2, 3, 8)}, {"s": rand(8)}, opset=23, axis=-1,
           rtol=1e-4)
    single("LpNormalization", {"x": rand(2, 5)}, axis=1, p=1, rtol=1e-4)
    single("GroupNormalization", {"x": rand(2, 4, 3, 3)}, {"s": rand(4), "b": rand(4)},
           opset=21, num_groups=2, rtol=1e-4, atol=1e-4)


def test_quantize_roundtrip() -> None:
    x = rand(2, 3, 4)
    scale, zp = np.array([0.02, 0.05, 0.1], "float32"), np.array([0, 3, -2], "int8")
    single("QuantizeLinear", {"x": x}, {"s": scale, "z": zp}, axis=1, opset=19)
    q = (np.random.default_rng(0).integers(-128, 128, (2, 3, 4))).astype("int8")
    single("DequantizeLinear", {"q": q}, {"s": scale, "z": zp}, axis=1, opset=19)


@pytest.fixture
def compile_onnx(llvm_target: Any, plugins: Any) -> Any:
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")
    return lambda m: tensorforge.compile(m, target="llvm -num-threads=1")


def test_nonzero_output_size_comes_from_the_kernel(compile_onnx: Any, tmp_path: Any) -> None:
    m = model([node("NonZero", ["x"], ["y"])], {"x": rand(3, 4)}, ["y"], opset=13)
    cm = compile_onnx(m)
    assert [o["name"] for o in cm.output_specs] == ["y"]
    for x in (np.array([[0, 1, 0, 2], [0, 0, 0, 0], [3, 0, 0, 4]], "float32"),
              np.zeros((3, 4), "float32"), np.ones((3, 4), "float32")):
        got = cm.run({"x": x})[0]
        np.testing.assert_array_equal(got, np.array(np.nonzero(x)))
    path = cm.export(tmp_path / "nz.tfpkg")
    again = tensorforge.load(path).run({"x": np.eye(3, 4, dtype="float32")})[0]
    np.testing.assert_array_equal(again, np.array(np.nonzero(np.eye(3, 4))))


def test_non_max_suppression_compiled(compile_onnx: Any) -> None:
    boxes = np.array([[[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                       [0, 10.1, 1, 11.1], [0, 100, 1, 101]]], "float32")
    scores = np.array([[[0.9, 0.75, 0.6, 0.95, 0.5, 0.3]]], "float32")
    feeds = {"b": boxes, "s": scores}
    inits = {"m": np.array([3], I64), "iou": np.array([0.5], "float32"),
             "thr": np.array([0.0], "float32")}
    m = model([node("NonMaxSuppression", ["b", "s", "m", "iou", "thr"], ["y"])], feeds, ["y"],
              inits, opset=11)
    got = compile_onnx(m).run(feeds)[0]
    np.testing.assert_array_equal(got, ort_run(m, feeds)[0])


def test_data_dependent_size_feeding_an_op_is_refused(compile_onnx: Any) -> None:
    m = model([node("NonZero", ["x"], ["n"]), node("Transpose", ["n"], ["y"])],
              {"x": rand(3, 4)}, ["y"], opset=13)
    with pytest.raises(OnnxImportError, match="depends on the input values"):
        compile_onnx(m)


def test_shape_inputs_stay_inputs(llvm_target: Any) -> None:
    """A Reshape whose shape is an input: the compiled model keeps `shape` as an input; data
    values share one compiled model, a new shape value compiles another."""
    m = model([node("Reshape", ["x", "shape"], ["r"]), node("Relu", ["r"], ["y"])],
              {"x": rand(2, 6), "shape": np.array([3, 4], I64)}, ["y"], opset=14)
    rep = TensorforgeBackend.prepare(m)
    x = rand(2, 6)
    for data in (x, -x):
        (y,) = rep.run([data, np.array([3, 4], I64)])
        np.testing.assert_array_equal(y, np.maximum(data.reshape(3, 4), 0))
    assert len(rep._cache) == 1
    (cm,) = rep._cache.values()
    assert {s["name"] for s in cm.input_specs} == {"x", "shape"}
    (y,) = rep.run([x, np.array([4, 3], I64)])
    assert y.shape == (4, 3) and len(rep._cache) == 2


def test_an_output_folded_from_a_specialized_input_is_refused() -> None:
    m = model([node("Identity", ["k"], ["y"])], {"k": np.array([3], I64)}, ["y"])
    rep = TensorforgeBackend.prepare(m)
    rep._specialized = {"k"}
    g = tensorforge.graph.Graph("folded")
    g.outputs = [g.add_const("y", np.array([3], I64))]
    with pytest.raises(OnnxImportError, match="folded at import"):
        rep._check_not_folded(g)


def test_bfloat16_model_compiles(compile_onnx: Any) -> None:
    x = rand(3, 4)
    vi = onnx.helper.make_tensor_value_info
    g = onnx.helper.make_graph(
        [node("Cast", ["x"], ["h"], to=onnx.TensorProto.BFLOAT16),
         node("Relu", ["h"], ["r"]), node("Cast", ["r"], ["y"], to=onnx.TensorProto.FLOAT)],
        "bf16", [vi("x", onnx.TensorProto.FLOAT, [3, 4])],
        [vi("y", onnx.TensorProto.FLOAT, [3, 4])])
    m = onnx.helper.make_model(g, opset_imports=[onnx.helper.make_opsetid("", 21)])
    got = compile_onnx(m).run({"x": x})[0]
    np.testing.assert_array_equal(got, np.maximum(x.astype("bfloat16").astype("float32"), 0))


def test_3d_conv_pool_compiled(compile_onnx: Any) -> None:
    nodes = [node("Conv", ["x", "w", "b"], ["c"], pads=[1, 0, 1, 1, 0, 0], strides=[1, 2, 1],
                  group=2),
             node("MaxPool", ["c"], ["p"], kernel_shape=[2, 2, 2], dilations=[1, 2, 1]),
             node("ConvTranspose", ["p", "wt"], ["y"], strides=[2, 1, 2], group=2)]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    inits = {"w": rand(6, 2, 3, 3, 2), "b": rand(6), "wt": rand(6, 2, 2, 3, 3)}
    x = rand(1, 4, 5, 9, 7)
    m = model(nodes, {"x": x}, ["y"], inits, opset=18)
    got = compile_onnx(m).run({"x": x})[0]
    np.testing.assert_allclose(got, ort_run(m, {"x": x})[0], rtol=1e-4, atol=1e-4)
