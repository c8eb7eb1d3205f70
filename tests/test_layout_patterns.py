"""Single-op models for the layout patterns of issue 15, compiled and checked against ONNX
Runtime: dilated convolutions whose outer taps read only padding (pruned), grouped
convolutions in NCHW[x]c, convolutions with channel counts no block divides (NCHW strategy),
pools in both layouts, a classifier whose width no panel divides (padded panel)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
helper = pytest.importorskip("onnx.helper")


def _model(nodes, c: int, hw: int, consts: dict[str, np.ndarray], x_shape=None):
    from onnx import TensorProto, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape or [1, c, hw, hw])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in consts.items()]
    g = helper.make_graph(nodes, "g", [x], [y], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _conv(c: int, o: int, hw: int, k: int = 3, d: int = 1, stride: int = 1, groups: int = 1,
          pad: int | None = None):
    pad = d * (k // 2) if pad is None else pad
    w = np.random.default_rng(1).standard_normal((o, c // groups, k, k)) / np.sqrt(c * k * k)
    node = helper.make_node("Conv", ["x", "w"], ["y"], dilations=[d, d], pads=[pad] * 4,
                            strides=[stride] * 2, group=groups)
    return _model([node], c, hw, {"w": w})


def _check(model, target: str):
    import tensorforge

    x_shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(x_shape).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cm = tensorforge.compile(model, target)
    out = np.asarray(cm.run({"x": x})[0])
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    return cm


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("case", [
    dict(c=32, o=32, hw=14, d=24),  # only the centre tap is live: a 1x1 conv
    dict(c=32, o=32, hw=14, d=12),  # every tap live for some output
    dict(c=16, o=16, hw=9, d=4, stride=2),
    dict(c=32, o=32, hw=14, d=6, groups=32),  # depthwise, dilated
    dict(c=16, o=16, hw=10, d=8, pad=5),  # asymmetric live range
    dict(c=16, o=24, hw=9, d=7),  # split into bands (rows and columns), blocks of 8
    dict(c=64, o=64, hw=12, groups=4),  # grouped: 16 channels per group
    dict(c=48, o=96, hw=9, groups=6, stride=2),  # 8 in, 16 out per group
    dict(c=12, o=12, hw=8, groups=6),  # 2 per group: no block, NCHW strategy
    dict(c=8, o=21, hw=11, k=1),  # 21 outputs: NCHW strategy, guarded row tile
    dict(c=16, o=5, hw=1, k=1),  # an SE reduction on a 1x1 map
])
def test_conv_patterns_match_onnxruntime(case: dict, threads: int, llvm_target, plugins) -> None:
    plugins.register("tensorforge_onnx.plugin")
    cm = _check(_conv(**case), f"{llvm_target} -num-threads={threads}")
    for k in cm.desc["kernels"]:
        if "conv" in k["master"]:
            assert k["schedule"].startswith("strategy"), k


def test_dead_taps_are_pruned(llvm_target, plugins) -> None:
    """3x3 at dilation 24 on a 14x14 map: the packed weight is 1x1 (8x less work); at
    dilation 12, bands of output positions meeting the same taps."""
    from tensorforge.compiler.compile import plan

    plugins.register("tensorforge_onnx.plugin")
    p = plan(_conv(32, 32, 14, d=24), llvm_target)
    conv = next(n for n in p.graph.nodes if n.op == "conv2d_nchwc")
    assert tuple(conv.inputs[1].shape[2:4]) == (1, 1)
    assert tuple(conv.attrs["pads"]) == (0, 0, 0, 0)
    # dilation 12: rows 0-1 meet taps 1-2, rows 2-11 tap 1, rows 12-13 taps 0-1 (and the
    # same for columns): 9 bands doing 18 x 18 tap-positions instead of 9 x 196
    p = plan(_conv(32, 32, 14, d=12), llvm_target)
    convs = [n for n in p.graph.nodes if n.op == "conv2d_nchwc"]
    assert len(convs) == 9
    assert sum(int(np.prod(n.inputs[1].shape[2:4])) * int(np.prod(n.outputs[0].shape[2:4]))
               for n in convs) == 18 * 18
    p = plan(_conv(32, 32, 14, d=6), llvm_target)  # bands would save too little: one conv
    assert sum(n.op == "conv2d_nchwc" for n in p.graph.nodes) == 1


def test_grouped_producer_takes_a_block_the_groups_divide(llvm_target, plugins) -> None:
    """conv 1x1 to 64 channels -> relu -> grouped 3x3 with 16 channels per group: the first
    conv's block is 16 (not 32), so no re-blocking transform runs between them."""
    from tensorforge.compiler.compile import plan
    from tensorforge.graph.passes.layout_nchwc import count_layout_transforms

    plugins.register("tensorforge_onnx.plugin")
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"]),
             helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["y"], pads=[1] * 4, group=4)]
    m = _model(nodes, 32, 8, {"w1": rng.standard_normal((64, 32, 1, 1)) * 0.2,
                              "w2": rng.standard_normal((64, 16, 3, 3)) * 0.1})
    p = plan(m, llvm_target)
    assert count_layout_transforms(p.graph) == 2  # network input, output
    assert all(n.inputs[0].shape[-1] <= 16 for n in p.graph.nodes if n.op == "conv2d_nchwc")
    _check(m, str(llvm_target))


@pytest.mark.parametrize("op,c,hw,attrs", [
    ("MaxPool", 32, 17, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", 32, 16, dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("AveragePool", 16, 15, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    ("GlobalAveragePool", 64, 7, {}),
    ("MaxPool", 5, 40, dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])),
    ("AveragePool", 5, 9, dict(kernel_shape=[3, 3], strides=[2, 2])),
    ("GlobalAveragePool", 3, 9, {}),
])
def test_pools_use_the_pool_strategy(op: str, c: int, hw: int, attrs: dict, llvm_target,
                                     plugins) -> None:
    plugins.register("tensorforge_onnx.plugin")
    w = np.random.default_rng(1).standard_normal((c, c, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w"], ["h"]), helper.make_node(op, ["h"], ["y"],
                                                                            **attrs)]
    cm = _check(_model(nodes, c, hw, {"w": w}), f"{llvm_target} -num-threads=2")
    pools = [k for k in cm.desc["kernels"] if "pool" in k["master"]]
    assert pools and all(k["schedule"].endswith("/tiled") for k in pools)


def test_classifier_of_ten_uses_a_padded_panel(llvm_target, plugins) -> None:
    plugins.register("tensorforge_onnx.plugin")
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Gemm", ["x", "w", "b"], ["y"], transB=1)]
    m = _model(nodes, 0, 0, {"w": rng.standard_normal((10, 96)), "b": rng.standard_normal(10)},
               x_shape=[1, 96])
    cm = _check(m, str(llvm_target))
    (k,) = [k for k in cm.desc["kernels"] if "dense" in k["master"]]
    assert k["master"] == "dense_packed" and k["schedule"].startswith("strategy")


@pytest.mark.parametrize("order", ["xs", "sx"])
def test_silu_joins_the_convolution(order: str, llvm_target, plugins) -> None:
    """Conv -> Sigmoid, Mul(x, sigmoid(x)) (EfficientNet's SiLU as exported): one kernel."""
    plugins.register("tensorforge_onnx.plugin")
    w = np.random.default_rng(1).standard_normal((32, 16, 1, 1)) * 0.3
    ins = ["h", "s"] if order == "xs" else ["s", "h"]
    nodes = [helper.make_node("Conv", ["x", "w"], ["h"]),
             helper.make_node("Sigmoid", ["h"], ["s"]), helper.make_node("Mul", ins, ["y"])]
    cm = _check(_model(nodes, 16, 8, {"w": w}), str(llvm_target))
    (conv,) = [k for k in cm.desc["kernels"] if "conv" in k["master"]]
    assert "silu" in conv["ops"] and len(cm.desc["kernels"]) == 3  # + 2 layout transforms


def test_sigmoid_read_elsewhere_is_kept(llvm_target, plugins) -> None:
    from tensorforge.graph.passes.activations import combine_swish
    from tensorforge_onnx.frontend import load

    plugins.register("tensorforge_onnx.plugin")
    nodes = [helper.make_node("Sigmoid", ["x"], ["s"]), helper.make_node("Mul", ["x", "s"], ["m"]),
             helper.make_node("Add", ["m", "s"], ["y"])]
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/m.onnx"
        with open(path, "wb") as f:
            f.write(_model(nodes, 4, 3, {}).SerializeToString())
        g = combine_swish(load(path))
    assert [n.op for n in g.nodes] == ["sigmoid", "mul", "add"]


def test_bilinear_resize_is_separable_and_matches(llvm_target, plugins) -> None:
    """DeepLab's final 16x upsampling: the rows pass (gathers along W at the 14 input rows) is
    computed once at root, the second pass reads it with contiguous vectors."""
    from onnx import TensorProto, numpy_helper

    from tensorforge.compiler.kernels import lower_group
    from tensorforge.graph.ir import Graph
    from tensorforge.graph.passes import fuse_ops

    plugins.register("tensorforge_onnx.plugin")
    g = Graph()
    x = g.add_input("x", (1, 5, 14, 14), "float32")
    g.outputs = [g.add("resize", x, size=(1, 5, 224, 224), scales=(1.0, 1.0, 16.0, 16.0),
                       mode="linear", coord="half_pixel")]
    func, _ = lower_group(fuse_ops(g)[0], llvm_target)
    assert "resize_linear_rows" in str(func)  # its own buffer, not inlined
    sc = numpy_helper.from_array(np.array([1, 1, 16, 16], np.float32), "sc")
    node = helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear")
    m = helper.make_model(helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 14, 14])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [sc]),
        opset_imports=[helper.make_opsetid("", 17)])
    _check(m, str(llvm_target))


@pytest.mark.parametrize("exponent", [3.0, 2.0, 2.5])
def test_tanh_gelu_cube_is_products_in_the_dense_epilogue(llvm_target, plugins,
                                                         exponent: float) -> None:
    """GPT-2's tanh GELU spells x^3 as Pow(x, 3): `expand_small_powers` makes it
    mul(mul(x, x), x) (a float pow is a scalar powf call per lane), still in the dense's
    epilogue; other exponents stay a pow. Checked against ONNX Runtime."""
    plugins.register("tensorforge_onnx.plugin")
    w = np.random.default_rng(2).standard_normal((24, 40)) / 5
    consts = {"w": w, "e": np.array(exponent), "c": np.array(0.044715),
              "k": np.array(np.sqrt(2 / np.pi)), "half": np.array(0.5), "one": np.array(1.0)}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("Pow", ["h", "e"], ["cube"]),
             helper.make_node("Mul", ["cube", "c"], ["cc"]),
             helper.make_node("Add", ["h", "cc"], ["inner"]),
             helper.make_node("Mul", ["inner", "k"], ["ik"]),
             helper.make_node("Tanh", ["ik"], ["t"]),
             helper.make_node("Add", ["t", "one"], ["t1"]),
             helper.make_node("Mul", ["h", "half"], ["hh"]),
             helper.make_node("Mul", ["hh", "t1"], ["y"])]
    cm = _check(_model(nodes, 0, 0, consts, x_shape=[8, 24]), str(llvm_target))
    (dense,) = [k for k in cm.desc["kernels"] if k["master"] == "dense_packed"]
    assert ("pow" in dense["ops"]) == (exponent == 2.5)
    assert len(cm.desc["kernels"]) == 1


def test_expand_small_powers_keeps_a_broadcasting_pow() -> None:
    """A pow whose constant exponent widens x's shape, or whose exponents differ, stays."""
    from tensorforge.graph.ir import Graph
    from tensorforge.graph.passes.activations import expand_small_powers

    g = Graph()
    x = g.add_input("x", (3,), "float32")
    wide = g.add("pow", x, g.add_const("e", np.full((2, 3), 3.0, np.float32)))
    mixed = g.add("pow", x, g.add_const("f", np.array([2, 3, 3], np.float32)))
    square = g.add("pow", x, g.add_const("s", np.array(2.0, np.float32)))
    g.outputs = [wide, mixed, square]
    assert [n.op for n in expand_small_powers(g).nodes] == ["pow", "pow", "mul"]
    assert g.nodes[2].inputs[0] is x and g.nodes[2].inputs[1] is x
