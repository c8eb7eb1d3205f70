"""Graph features of the CPU path on OpenCL: stages tagged `materialize` / `injective_root`
get kernels of their own (not inlined into every reader), zero-copy concat views stay in host
memory (device concats copy), and a kernel the device's code generator refuses runs on the
host with the reason in the placement. Every model is checked against numpy or ONNX Runtime."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tensorforge

pytestmark = pytest.mark.opencl
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


@pytest.fixture
def frontend(plugins, llvm_target, opencl_target):
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")


def _model(nodes, inputs, outputs, inits=(), opset=21):
    from onnx import helper

    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _ort(m, feeds):
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def _kernels(compiled) -> int:
    return compiled.module.get_source().count("__kernel void")


def test_a_separable_resize_computes_its_rows_pass_once(frontend):
    """Bilinear over H and W: the rows pass (tag injective_root) is a kernel of its own; inlined
    it would be recomputed for every output column."""
    from onnx import TensorProto, helper, numpy_helper

    scales = numpy_helper.from_array(np.array([1, 1, 4, 4], "float32"), "scales")
    m = _model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="linear")],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 5, 6])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 20, 24])],
               [scales])
    compiled = tensorforge.compile(m, target="opencl")
    assert {k["device"] for k in compiled.desc["kernels"]} == {"opencl"}
    assert _kernels(compiled) == 2
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 6)).astype("float32")
    (got,) = compiled.run({"x": x})
    (want,) = _ort(m, {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_non_max_suppression_decisions_are_kernels_not_inlined_chains(frontend):
    """NMS's keep decisions (tag materialize) each read the last: inlined on the GPU they
    would multiply (2^boxes); at root each is a kernel of its own."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(3)
    n = 12
    xy = rng.uniform(0, 10, (1, n, 2)).astype("float32")
    boxes = np.concatenate([xy, xy + rng.uniform(1, 4, (1, n, 2)).astype("float32")], -1)
    scores = rng.uniform(0, 1, (1, 1, n)).astype("float32")
    consts = [numpy_helper.from_array(np.array([n], "int64"), "max_out"),
              numpy_helper.from_array(np.array([0.3], "float32"), "iou"),
              numpy_helper.from_array(np.array([0.1], "float32"), "thr")]
    m = _model([helper.make_node("NonMaxSuppression",
                                 ["boxes", "scores", "max_out", "iou", "thr"], ["sel"])],
               [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, n, 4]),
                helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 1, n])],
               [helper.make_tensor_value_info("sel", TensorProto.INT64, [None, 3])], consts)
    compiled = tensorforge.compile(m, target="opencl")
    assert "opencl" in {k["device"] for k in compiled.desc["kernels"]}
    assert _kernels(compiled) > n // 2  # the decisions at root, not one inlined chain
    feeds = {"boxes": boxes, "scores": scores}
    (got,) = compiled.run(feeds)
    (want,) = _ort(m, feeds)
    np.testing.assert_array_equal(got, want)


def _concat_model():
    """Two convs' outputs concatenated on channels at batch 1 (a zero-copy view on the CPU),
    then a relu of the whole."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w1 = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype("float32"), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 3, 1, 1)).astype("float32"), "w2")
    return _model([helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
                   helper.make_node("Conv", ["x", "w2"], ["b"]),
                   helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
                   helper.make_node("Relu", ["c"], ["y"])],
                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 8, 8])],
                  [w1, w2])


@pytest.mark.parametrize("concat_on_host", [False, True])
def test_concat_views_stay_in_host_memory(frontend, monkeypatch, concat_on_host):
    """On llvm the concat is a view (no kernel, no bytes moved); on OpenCL the concat runs on
    the device as a copy, or, when it falls back to the host beside device-made parts, it stays
    a copy too (device kernels write whole device buffers, never host slices)."""
    import dataclasses

    from tensorforge.graph import registry

    m = _concat_model()
    x = np.random.default_rng(2).standard_normal((1, 3, 8, 8)).astype("float32")
    (want,) = _ort(m, {"x": x})
    cpu = tensorforge.compile(m, target="llvm")
    assert cpu.desc["memory"]["concat_view_bytes"] > 0
    if concat_on_host:
        registry._ensure_loaded()
        monkeypatch.setitem(registry._OPS, "concat",
                            dataclasses.replace(registry._OPS["concat"], gpu=False))
    compiled = tensorforge.compile(m, target="opencl")
    assert compiled.desc["memory"]["concat_view_bytes"] == 0
    concat = [k for k in compiled.desc["kernels"] if "concat" in k["ops"]]
    assert [k["device"] for k in concat] == ["llvm" if concat_on_host else "opencl"]
    (got,) = compiled.run({"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_a_kernel_the_printer_refuses_runs_on_the_host(frontend):
    """BitCast of float16 needs half arithmetic, which OpenCL without cl_khr_fp16 lacks: its
    kernel (with the add fused into it) goes to the host with the reason; the negation, a
    graph output of its own, stays on the device."""
    from onnx import TensorProto, helper

    m = _model([helper.make_node("Neg", ["x"], ["n"]),
                helper.make_node("BitCast", ["n"], ["b"], to=TensorProto.INT16),
                helper.make_node("Add", ["b", "b"], ["y"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [2, 9])],
               [helper.make_tensor_value_info("n", TensorProto.FLOAT16, [2, 9]),
                helper.make_tensor_value_info("y", TensorProto.INT16, [2, 9])], opset=26)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = tensorforge.compile(m, target="opencl")
    assert any("runs on the host" in str(w.message) for w in caught)
    pl = compiled.desc["placement"]
    assert sorted(f["op"] for f in pl["fallbacks"]) == ["add", "bitcast"]
    assert all("code generation" in f["why"] for f in pl["fallbacks"])
    devices = {k["ops"][0]: k["device"] for k in compiled.desc["kernels"]}
    assert devices == {"neg": "opencl", "bitcast": "llvm"}
    assert any(c["from"] == "opencl" and c["to"] == "llvm" for c in pl["copies"])
    x = np.random.default_rng(4).standard_normal((2, 9)).astype("float16")
    n, y = compiled.run({"x": x})
    np.testing.assert_array_equal(n, -x)
    np.testing.assert_array_equal(y, ((-x).view("int16") * 2).astype("int16"))


def test_device_kernels_read_the_parts_of_a_host_concat_view(frontend, monkeypatch):
    """A concat view on the host (its parts and the whole share one host storage at offsets)
    read by device kernels: each value gets its own device copy, so uploading the whole does
    not clobber a part uploaded before (device pools place values at their start)."""
    import dataclasses

    from onnx import TensorProto, helper

    from tensorforge.graph import registry

    registry._ensure_loaded()
    for op in ("neg", "abs", "concat"):
        monkeypatch.setitem(registry._OPS, op, dataclasses.replace(registry._OPS[op], gpu=False))
    f = TensorProto.FLOAT
    m = _model([helper.make_node("Neg", ["x"], ["a"]), helper.make_node("Abs", ["x"], ["b"]),
                helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
                helper.make_node("Exp", ["b"], ["o1"]), helper.make_node("Sigmoid", ["c"], ["o2"]),
                helper.make_node("Tanh", ["b"], ["o3"])],
               [helper.make_tensor_value_info("x", f, [1, 64])],
               [helper.make_tensor_value_info("o1", f, [1, 64]),
                helper.make_tensor_value_info("o2", f, [1, 128]),
                helper.make_tensor_value_info("o3", f, [1, 64])])
    compiled = tensorforge.compile(m, target="opencl")
    assert compiled.desc["memory"]["concat_view_bytes"] > 0
    assert [k["device"] for k in compiled.desc["kernels"]].count("opencl") == 3
    x = np.random.default_rng(5).standard_normal((1, 64)).astype("float32")
    got = compiled.run({"x": x})
    for g, w in zip(got, _ort(m, {"x": x})):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
