"""The frontend's deliberate errors: bad files, unsupported ops and versions, unsupported
attribute values, symbolic shapes; each is a TensorforgeError that says what to do."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto, helper

from tensorforge.errors import TensorforgeError
from tensorforge_onnx import load
from tensorforge_onnx.errors import (
    DynamicShapeError,
    ModelFileError,
    UnsupportedAttributeError,
    UnsupportedOpError,
)
from tensorforge_onnx.testing import model, node, rand


def _relu_model() -> bytes:
    return model([node("Relu", ["x"], ["y"])], {"x": rand(2, 3)}, ["y"]).SerializeToString()


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="does not exist.*Check the path"):
        load(tmp_path / "nope.onnx")


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.onnx"
    p.write_bytes(b"")
    with pytest.raises(ModelFileError, match="is empty.*did not finish"):
        load(p)


def test_truncated_file(tmp_path: Path) -> None:
    p = tmp_path / "trunc.onnx"
    data = _relu_model()
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="truncated or corrupted.*again"):
        load(p)


@pytest.mark.parametrize("content", [b"hello, I am a text file\n", b"PK\x03\x04zipzipzip",
                                     b"\x89HDF\r\n\x1a\n"])
def test_not_onnx(tmp_path: Path, content: bytes) -> None:
    p = tmp_path / "model.onnx"
    p.write_bytes(content)
    with pytest.raises(ModelFileError, match="not an ONNX model") as e:
        load(p)
    assert isinstance(e.value, TensorforgeError)


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelFileError, match="is a directory"):
        load(tmp_path)


def test_loads_path_bytes_and_proto(tmp_path: Path) -> None:
    p = tmp_path / "m.onnx"
    p.write_bytes(_relu_model())
    for src in (p, str(p), p.read_bytes()):
        assert load(src).op_counts() == {"relu": 1}


def test_all_unsupported_ops_in_one_error() -> None:
    nodes = [helper.make_node("Foo", ["x"], ["a"], name="n1"),
             helper.make_node("Bar", ["a"], ["b"], name="n2"),
             helper.make_node("Relu", ["b"], ["c"], name="ok"),
             helper.make_node("Bar", ["c"], ["y"], name="n3")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [2])],
                          [helper.make_tensor_value_info("y", 1, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(UnsupportedOpError) as e:
        load(m)
    msg = str(e.value)
    assert "2 unsupported ops at opset 17" in msg
    assert "Foo (node 'n1')" in msg and "Bar (nodes 'n2', 'n3')" in msg
    assert "supported_ops()" in msg and "Relu" not in msg.split("supported_ops")[0]


def test_custom_domain_op_unsupported() -> None:
    n = helper.make_node("FusedGemm", ["x"], ["y"], name="fg", domain="com.microsoft")
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", 1, [2])],
                          [helper.make_tensor_value_info("y", 1, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17),
                                            helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(UnsupportedOpError, match=r"com\.microsoft\.FusedGemm \(node 'fg'\)"):
        load(m)


def test_op_version_out_of_range() -> None:
    """Clip-1 (opset 5) has a different signature: named with its version and the range."""
    n = helper.make_node("Clip", ["x"], ["y"], name="c", min=0.0)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", 1, [2])],
                          [helper.make_tensor_value_info("y", 1, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 5)])
    with pytest.raises(UnsupportedOpError, match=r"Clip-1 \(supported: versions 6-13\).*"
                                                 r"version_converter"):
        load(m)


def test_unsupported_attribute_values() -> None:
    m = model([node("Dropout", ["x", "r", "t"], ["y"])], {"x": rand(3, 2)}, ["y"],
              {"r": np.array(0.5, "float32"), "t": np.array(True)}, opset=13)
    with pytest.raises(UnsupportedAttributeError, match="training_mode=True"):
        load(m)
    m = model([node("LpNormalization", ["x"], ["y"], p=3)], {"x": rand(2, 3)}, ["y"])
    with pytest.raises(UnsupportedAttributeError, match="p=3"):
        load(m)
    m = model([node("GridSample", ["x", "g"], ["y"], padding_mode="mirror")],
              {"x": rand(1, 1, 3, 3), "g": rand(1, 2, 2, 2)}, ["y"], opset=16)
    with pytest.raises(UnsupportedAttributeError, match="padding_mode='mirror'"):
        load(m)


def test_symbolic_dim_needs_input_shapes() -> None:
    x = helper.make_tensor_value_info("images", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 8, 8])
    m = helper.make_model(helper.make_graph([node("Relu", ["images"], ["y"])], "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(DynamicShapeError) as e:
        load(m)
    msg = str(e.value)
    assert "'images'" in msg and "'N'" in msg and "input_shapes={'images': (1, 3, 8, 8)}" in msg
    with pytest.raises(DynamicShapeError, match="which .* does not have as inputs"):
        load(m, input_shapes={"imgs": (1, 3, 8, 8)})


def test_runtime_shape_argument() -> None:
    m = model([node("Reshape", ["x", "s"], ["y"])], {"x": rand(2, 3),
                                                     "s": np.array([3, 2], "int64")}, ["y"])
    with pytest.raises(DynamicShapeError, match="takes its shape from 's'.*only known at run"):
        load(m)
    g = load(m, constant_inputs={"s": np.array([3, 2], "int64")})
    assert g.outputs[0].shape == (3, 2) and [v.name for v in g.inputs] == ["x"]
