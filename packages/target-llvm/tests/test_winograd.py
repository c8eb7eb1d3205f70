"""Winograd F(2x2,3x3) and F(4x4,3x3) in NCHW[x]c against numpy, on awkward shapes.

Tolerance, stated relative to the output's range: max |ours - exact| <= TOL[m] * max |exact|
with the exact result a float64 direct convolution. F(2,3) has coefficients 1/2 and 1 and
loses almost nothing (measured ~2e-7 here); F(4,3) multiplies by up to 8 and divides by 24,
so it loses more (measured 1e-6 on these small shapes, 2.5e-5 on ResNet-18's 512-channel
layer): TOL = 1e-5 for m=2, 1e-4 for m=4. Element-wise rtol does not apply to Winograd:
an output near zero carries the rounding of its tile's large terms."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge.graph import Graph
from tensorforge.graph.passes import optimize
from tensorforge.ops import reference as ref
from tensorforge.ops.winograd import winograd_conv_np, winograd_weight_transform

RNG = np.random.default_rng(0)
TOL = {2: 1e-5, 4: 1e-4}


def _graph(n: int, c: int, o: int, h: int, w: int, pads: tuple[int, ...],
           epilogue: str) -> tuple[Graph, dict[str, np.ndarray], np.ndarray]:
    g = Graph()
    x = g.add_input("x", (n, c, h, w), "float32")
    wt = (RNG.standard_normal((o, c, 3, 3)) / np.sqrt(9 * c)).astype("float32")
    b = RNG.standard_normal(o).astype("float32")
    y = g.add("conv2d", x, g.add_const("w", wt), g.add_const("b", b), strides=(1, 1),
              pads=pads, dilations=(1, 1), groups=1)
    xs = RNG.standard_normal((n, c, h, w)).astype("float32")
    exact = ref.conv2d_nchw(xs.astype("float64"), wt.astype("float64"), (1, 1), pads, (1, 1),
                            1) + b.reshape(1, -1, 1, 1)
    if epilogue == "relu":
        y = g.add("relu", y)
        exact = np.maximum(exact, 0)
    inputs = {"x": xs}
    if epilogue == "add_relu":  # a residual add, then relu
        r = g.add_input("r", exact.shape, "float32")
        y = g.add("relu", g.add("add", y, r))
        inputs["r"] = RNG.standard_normal(exact.shape).astype("float32")
        exact = np.maximum(exact + inputs["r"], 0)
    g.outputs = [y]
    return g, inputs, exact


@pytest.mark.parametrize("m", [2, 4])
def test_numpy_reference_is_a_convolution(m: int) -> None:
    from tensorforge.graph.ops.nchwc import _pack

    x = RNG.standard_normal((2, 6, 7, 9)).astype("float32")
    w = RNG.standard_normal((8, 6, 3, 3)).astype("float32")
    want = ref.conv2d_nchw(x.astype("float64"), w.astype("float64"), (1, 1), (1, 0, 1, 2),
                           (1, 1), 1)
    got = winograd_conv_np(_pack(x, 3), winograd_weight_transform(w, m, 4), m, (1, 0, 1, 2))
    assert np.abs(got - _pack(want, 4)).max() <= TOL[m] * np.abs(want).max()


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("n,c,o,hw,pads,epi", [
    (2, 5, 16, (7, 9), (1, 1, 1, 1), "relu"),          # odd C, batch 2, H/W not tile multiples
    (1, 16, 32, (10, 5), (0, 0, 0, 0), "add_relu"),    # no padding, residual add
    (1, 24, 16, (6, 13), (1, 0, 2, 1), "none"),        # asymmetric padding, bias only
    (2, 17, 48, (3, 3), (1, 1, 1, 1), "relu"),         # one tile per image, odd C
])
def test_winograd_vs_numpy(llvm_target, m, n, c, o, hw, pads, epi) -> None:
    g, inputs, exact = _graph(n, c, o, *hw, pads, epi)
    target = f"llvm -winograd={m}"
    opt = optimize(g, tensorforge.Target.parse(target))
    assert opt.op_counts().get("conv2d_winograd_nchwc", 0) == 1, opt.op_counts()
    cm = tensorforge.compile(g, target=target)
    (kern,) = [k for k in cm.desc["kernels"] if k["master"] == "conv2d_winograd_nchwc"]
    assert kern["schedule"] == "strategy conv2d_winograd_nchwc/winograd"
    assert len(kern["ops"]) > 1 or epi == "none"  # the epilogue is fused into the kernel
    (out,) = cm.run(inputs)
    assert np.abs(out - exact).max() <= TOL[m] * np.abs(exact).max()


def test_policy_off_and_non_3x3_stay_direct(llvm_target) -> None:
    g, _, _ = _graph(1, 16, 16, 8, 8, (1, 1, 1, 1), "relu")
    counts = optimize(g, tensorforge.Target.parse("llvm -winograd=off")).op_counts()
    assert counts.get("conv2d_winograd_nchwc", 0) == 0 and counts["conv2d_nchwc"] == 1
    g2 = Graph()
    x = g2.add_input("x", (1, 16, 8, 8), "float32")
    y = g2.add("conv2d", x, g2.add_const("w", np.ones((16, 16, 3, 3), "float32")),
               strides=(2, 2), pads=(1, 1, 1, 1), dilations=(1, 1), groups=1)
    g2.outputs = [y]
    counts = optimize(g2, tensorforge.Target.parse("llvm -winograd=4")).op_counts()
    assert counts.get("conv2d_winograd_nchwc", 0) == 0  # stride 2: direct


def test_default_rule() -> None:
    from tensorforge_llvm.winograd import choose_tile, default_tile

    assert [default_tile(c, c, s, s) for c, s in [(64, 56), (128, 28), (256, 14), (512, 7)]] \
        == [4, 4, 4, 4]                              # ResNet-18: F(4,3) everywhere
    assert default_tile(8, 32, 32, 32) == 0          # few channels: direct
    assert default_tile(256, 256, 3, 3) == 2         # 1 tile of 4x4, 4 tiles of 2x2
    assert default_tile(512, 512, 2, 2) == 0         # weight-bound: direct
    assert choose_tile("off", 64, 64, 56, 56) == 0 and choose_tile("2", 8, 8, 4, 4) == 2
    # Intel Xeon (issue 15): F(4,3) from 28x28, F(2,3) at 14x14 and 7x7
    assert [default_tile(c, c, s, s, cpu="sapphirerapids") for c, s in
            [(64, 56), (128, 28), (256, 14), (512, 7), (512, 2)]] == [4, 4, 2, 2, 0]
    assert default_tile(256, 256, 14, 14, cpu="znver4") == 4


@pytest.mark.slow
def test_resnet18_winograd_matches_onnxruntime(llvm_target, plugins, tmp_path) -> None:
    """ResNet-18 with every 3x3 stride-1 conv in F(4,3) == ORT within rtol 1e-4, atol 1e-5."""
    ort = pytest.importorskip("onnxruntime")
    from tensorforge_onnx import models

    plugins.register("tensorforge_onnx.plugin")
    path = str(models.save("resnet18", tmp_path / "r18.onnx"))
    inputs = models.example_inputs("resnet18")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, inputs)
    cm = tensorforge.compile(path, target="llvm -winograd=4")
    assert sum(k["master"] == "conv2d_winograd_nchwc" for k in cm.desc["kernels"]) == 13
    np.testing.assert_allclose(cm.run(inputs)[0], want[0], rtol=1e-4, atol=1e-5)
