"""The semantics generated code follows (docs/semantics.md) hold on OpenCL too: data checks
report the failing node and value (the kernel's status, read back after the launch plan), and
min/max propagate NaN and keep -0.0 (Relu) instead of C's fmin/fmax."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge.errors import DataCheckError

pytestmark = pytest.mark.opencl
onnx = pytest.importorskip("onnx")


def _model(nodes, inputs, outputs, inits=()):
    from onnx import helper

    g = helper.make_graph(nodes, "m", inputs, outputs, list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def onnx_frontend(plugins, opencl_target):
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")


def test_an_index_out_of_range_names_the_node_and_the_value(onnx_frontend):
    from onnx import TensorProto, helper, numpy_helper

    table = np.arange(20, dtype="float32").reshape(10, 2)
    m = _model([helper.make_node("Gather", ["table", "ids"], ["y"], name="embed")],
               [helper.make_tensor_value_info("ids", TensorProto.INT64, [3])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2])],
               [numpy_helper.from_array(table, "table")])
    compiled = tensorforge.compile(m, target="opencl")
    assert {k["device"] for k in compiled.desc["kernels"]} == {"opencl"}
    (ok,) = compiled.run({"ids": np.array([0, 9, -1], "int64")})
    np.testing.assert_array_equal(ok, table[[0, 9, -1]])
    with pytest.raises(DataCheckError, match=r"embed.*12"):
        compiled.run({"ids": np.array([0, 12, 3], "int64")})


def test_relu_keeps_nan_and_negative_zero(onnx_frontend):
    from onnx import TensorProto, helper

    m = _model([helper.make_node("Relu", ["x"], ["y"]),
                helper.make_node("Max", ["x", "z"], ["w"])],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4]),
                helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
                helper.make_tensor_value_info("w", TensorProto.FLOAT, [4])])
    compiled = tensorforge.compile(m, target="opencl")
    x = np.array([np.nan, -0.0, -1.0, 2.0], "float32")
    z = np.array([1.0, 0.0, np.nan, 1.0], "float32")
    y, w = compiled.run({"x": x, "z": z})
    assert np.isnan(y[0]) and y[1] == 0 and np.signbit(y[1]) and y[2] == 0 and y[3] == 2
    assert np.isnan(w[0]) and np.isnan(w[2]) and np.signbit(w[1]) and w[3] == 2
