"""Shape and data-movement converters against onnxruntime, with opset variants, plus import
-time folding (Shape -> Gather -> Concat -> Reshape) and naming."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from tensorforge_onnx import load
from tensorforge_onnx.testing import check, model, node, rand, single

I64 = "int64"


def test_concat_transpose_flatten() -> None:
    single("Concat", {"a": rand(2, 3), "b": rand(2, 5)}, axis=-1)
    single("Transpose", {"x": rand(2, 3, 4)}, perm=[2, 0, 1])
    single("Transpose", {"x": rand(2, 3, 4)})
    for axis in (0, 1, 2, -1, -3):
        single("Flatten", {"x": rand(2, 3, 4)}, axis=axis, opset=13)


@pytest.mark.parametrize("shape", [[0, -1], [-1, 4], [2, 0, 2, 2], [24]])
def test_reshape(shape: list[int]) -> None:
    single("Reshape", {"x": rand(2, 3, 4)}, {"s": np.array(shape, I64)})


@pytest.mark.parametrize("opset", [11, 13, 21])
def test_squeeze_unsqueeze(opset: int) -> None:
    x = rand(1, 3, 1, 4)
    if opset < 13:
        single("Squeeze", {"x": x}, opset=opset, axes=[0, -2])
        single("Unsqueeze", {"x": rand(3, 4)}, opset=opset, axes=[0, -1])
    else:
        single("Squeeze", {"x": x}, {"a": np.array([0, -2], I64)}, opset=opset)
        single("Unsqueeze", {"x": rand(3, 4)}, {"a": np.array([0, 3], I64)}, opset=opset)
    single("Squeeze", {"x": x}, opset=opset)


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_split(opset: int) -> None:
    x = rand(6, 4)
    if opset < 13:
        single("Split", {"x": x}, opset=opset, n_out=2, split=[2, 4])
    else:
        single("Split", {"x": x}, {"s": np.array([1, 5], I64)}, opset=opset, n_out=2)
    if opset < 18:
        single("Split", {"x": x}, opset=opset, n_out=3)
    else:
        single("Split", {"x": rand(7, 2)}, opset=opset, n_out=3, num_outputs=3)


@pytest.mark.parametrize("starts,ends,axes,steps", [
    ([1], [3], [0], None), ([0, 1], [2, -1], None, None), ([-1], [-4], [1], [-1]),
    ([0, 10], [100, 0], [0, 1], [2, -2]), ([1], [1000], [-1], [3]),
])
def test_slice(starts: list, ends: list, axes: list | None, steps: list | None) -> None:
    x = rand(4, 5, 6)
    inits = {"st": np.array(starts, I64), "en": np.array(ends, I64)}
    if axes is not None or steps is not None:
        inits["ax"] = np.array(axes if axes is not None else list(range(len(starts))), I64)
    if steps is not None:
        inits["sp"] = np.array(steps, I64)
    single("Slice", {"x": x}, inits, opset=13)


def test_slice_opset1_attrs() -> None:
    single("Slice", {"x": rand(4, 5)}, opset=9, starts=[1, 0], ends=[3, -1], axes=[0, 1])


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("opset", [11, 13, 19])
def test_pad(mode: str, opset: int) -> None:
    x = rand(1, 2, 4, 5)
    pads = np.array([0, 0, 1, 2, 0, 0, 2, 1], I64)
    inits = {"p": pads}
    if mode == "constant":
        inits["v"] = np.array(1.5, "float32")
    single("Pad", {"x": x}, inits, opset=opset, mode=mode)


def test_pad_legacy_axes_negative() -> None:
    single("Pad", {"x": rand(3, 4)}, opset=10, pads=[1, 0, 0, 2], value=2.0)
    single("Pad", {"x": rand(3, 4)}, {"p": np.array([1, -1], I64), "v": np.array(0, "float32"),
                                      "a": np.array([1], I64)}, opset=18)
    single("Pad", {"x": rand(3, 4)}, {"p": np.array([0, -1, 0, 2], I64)}, opset=13)
    single("Pad", {"x": rand(3, 4)}, {"p": np.array([1, 2, 1, 0], I64)}, opset=19, mode="wrap")


RESIZE_CASES = [
    ("nearest", "asymmetric", "floor", [1, 1, 2, 2]),
    ("nearest", "half_pixel", "round_prefer_floor", [1, 1, 1.5, 2.5]),
    ("nearest", "align_corners", "round_prefer_ceil", [1, 1, 2, 3]),
    ("nearest", "pytorch_half_pixel", "ceil", [1, 1, 0.5, 2]),
    ("linear", "half_pixel", None, [1, 1, 2, 2]),
    ("linear", "half_pixel", None, [1, 1, 0.6, 0.5]),
    ("linear", "align_corners", None, [1, 1, 2, 1.5]),
    ("linear", "asymmetric", None, [1, 1, 3, 2]),
    ("linear", "pytorch_half_pixel", None, [1, 1, 2, 0.25]),
]


@pytest.mark.parametrize("mode,coord,nearest,scales", RESIZE_CASES)
@pytest.mark.parametrize("opset", [11, 13, 19])
def test_resize_scales(mode: str, coord: str, nearest: str | None, scales: list,
                       opset: int) -> None:
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    if nearest:
        attrs["nearest_mode"] = nearest
    inits = {"roi": np.array([], "float32"), "sc": np.array(scales, "float32")}
    single("Resize", {"x": rand(1, 2, 4, 6)}, inits, opset=opset, **attrs)


def test_resize_sizes_axes_and_legacy() -> None:
    inits = {"roi": np.array([], "float32"), "sc": np.array([], "float32"),
             "sz": np.array([1, 2, 7, 3], I64)}
    single("Resize", {"x": rand(1, 2, 4, 6)}, inits, opset=13, mode="linear")
    single("Resize", {"x": rand(1, 2, 4, 6)}, {"sz": np.array([8, 9], I64)}, opset=18,
           extra_inputs=["x", "", "", "sz"], axes=[2, 3], mode="nearest")
    single("Resize", {"x": rand(1, 2, 4, 6)}, {"sz": np.array([8, 9], I64)}, opset=18,
           extra_inputs=["x", "", "", "sz"], axes=[2, 3], keep_aspect_ratio_policy="not_larger")
    single("Resize", {"x": rand(1, 2, 3, 4)}, {"sc": np.array([1, 1, 2, 3], "float32")},
           opset=10, mode="nearest")
    single("Upsample", {"x": rand(1, 2, 3, 4)}, {"sc": np.array([1, 1, 2, 2], "float32")},
           opset=9, mode="linear")


def test_gather() -> None:
    x = rand(5, 4, 3)
    single("Gather", {"x": x}, {"i": np.array([[0, -1], [2, 3]], I64)}, axis=1)
    single("Gather", {"x": x}, {"i": np.array(-2, I64)}, axis=0)
    single("Gather", {"x": x, "i": np.array([4, 0, 1], I64)}, axis=0)  # data indices
    single("Gather", {"i": np.array([1, 2], "int32")}, {"x": x}, extra_inputs=["x", "i"])


def test_expand_where_broadcast() -> None:
    single("Expand", {"x": rand(3, 1)}, {"s": np.array([2, 1, 4], I64)})
    single("Expand", {"x": rand(2, 3)}, {"s": np.array([1, 1], I64)})


def test_constant_ops_fold() -> None:
    nodes = [
        node("ConstantOfShape", ["s"], ["z"], value=helper.make_tensor("v", TensorProto.FLOAT,
                                                                        [1], [2.5])),
        node("Add", ["x", "z"], ["y"]),
        helper.make_node("Constant", [], ["c"], value_floats=[1.0, 2.0, 3.0]),
        helper.make_node("Range", ["r0", "r1", "r2"], ["r"]),
        helper.make_node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["c", "rf"], ["y2"]),
        helper.make_node("Size", ["x"], ["sz"]),
        helper.make_node("Shape", ["x"], ["sh"], start=1),
    ]
    x = rand(2, 3)
    inits = {"s": np.array([2, 3], I64), "r0": np.array(1, I64), "r1": np.array(7, I64),
             "r2": np.array(2, I64)}
    m = model(nodes, {"x": x}, ["y", "y2", "sz", "sh"], inits, opset=15)
    g = check(m, {"x": x})
    assert g.op_counts() == {"add": 1}  # everything else folded at import


def test_shape_chain_folds_to_static_reshape() -> None:
    """x -> Shape -> Gather(0) -> Unsqueeze -> Concat([b, -1]) -> Reshape: one static reshape."""
    nodes = [
        node("Shape", ["x"], ["shp"]),
        node("Gather", ["shp", "zero"], ["b"], axis=0),
        node("Unsqueeze", ["b", "ax0"], ["b1"]),
        node("Concat", ["b1", "m1"], ["target"], axis=0),
        node("Reshape", ["x", "target"], ["y"]),
        node("Relu", ["y"], ["out"]),
    ]
    for i, n in enumerate(nodes):
        n.name = f"n{i}"
    inits = {"zero": np.array(0, I64), "ax0": np.array([0], I64), "m1": np.array([-1], I64)}
    x = rand(3, 4, 5)
    m = model(nodes, {"x": x}, ["out"], inits, opset=13)
    g = check(m, {"x": x})
    assert g.op_counts() == {"reshape": 1, "relu": 1}
    assert g.outputs[0].shape == (3, 20)


def test_names_inputs_outputs_constants() -> None:
    nodes = [node("Add", ["x", "w"], ["h"]), node("Identity", ["h"], ["out"]),
             node("Identity", ["x"], ["x_copy"])]
    nodes[1].name, nodes[2].name = "id1", "id2"
    x = rand(2, 3)
    m = model(nodes, {"x": x}, ["out", "h", "x_copy"], {"w": rand(3)})
    g = check(m, {"x": x})
    assert [v.name for v in g.inputs] == ["x"]
    assert [v.name for v in g.outputs] == ["out", "h", "x_copy"]
    assert {v.name for v in g.constants()} == {"w"}


def test_input_shapes_override_symbolic_batch() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3])
    g = helper.make_graph([node("Relu", ["x"], ["y"])], "g", [x], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    graph = load(m, input_shapes={"x": (5, 3)})
    assert graph.inputs[0].shape == (5, 3) and graph.outputs[0].shape == (5, 3)
    check(m, {"x": rand(4, 3)}, input_shapes={"x": (4, 3)})
