"""tensorforge.quantize: calibrated int8 graphs, 32-bit-safe requantize parameters, and the
int8 x int8 -> int32 convolution and dense (`out_dtype`) compiled bit-exact with the numpy
references."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.passes.quantize import requantize_params

TARGET = "llvm -num-threads=1"


def small_resnet(seed: int = 0) -> Graph:
    """stem conv (3 channels) + relu, max pool, a residual block, global pool, classifier."""
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype("float32")

    g = Graph("small_resnet")
    x = g.add_input("x", (1, 3, 12, 12), "float32")
    conv = dict(strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), groups=1)
    y = g.add("relu", g.add("conv2d", x, g.add_const("w0", w(16, 3, 3, 3)),
                            g.add_const("b0", w(16, 1)[:, 0]), **conv))
    y = g.add("max_pool2d", y, kernel=(2, 2), strides=(2, 2), pads=(0, 0, 0, 0),
              ceil_mode=False)
    z = g.add("relu", g.add("conv2d", y, g.add_const("w1", w(16, 16, 3, 3)),
                            g.add_const("b1", w(16, 1)[:, 0]), **conv))
    z = g.add("conv2d", z, g.add_const("w2", w(16, 16, 3, 3)), **conv)
    y = g.add("relu", g.add("add", y, z))
    y = g.add("reshape", g.add("global_avg_pool2d", y), shape=(1, 16))
    g.outputs = [g.add("dense", y, g.add_const("wf", w(10, 16)), g.add_const("bf", w(10, 1)[:, 0]))]
    return g


def _inputs(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((1, 3, 12, 12)).astype("float32") for _ in range(n)]


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-7, 0.999), st.integers(1, 2 ** 30))
def test_requantize_params_never_overflow_32_bits(real: float, bound: int) -> None:
    """At the extremes +-bound the 32-bit product (as VDLA's ALU and any int32 kernel compute
    it) equals the 64-bit one: the multiplier fits a 16-bit immediate and bound * m +
    2**(s-1) < 2**31; and the pair is the closest of its shift."""
    try:
        m, s = requantize_params(real, bound)
    except TensorforgeError:  # then no shift has a 32-bit form
        assert not any(1 <= round(real * 2 ** s) < 2 ** 15 and
                       bound * round(real * 2 ** s) + (1 << (s - 1)) < 2 ** 31
                       for s in range(1, 63))
        return
    assert 1 <= m < 2 ** 15 and 1 <= s <= 62
    assert bound * m + (1 << (s - 1)) < 2 ** 31
    assert abs(m - real * 2 ** s) <= 0.5
    acc = np.array([bound, -bound, bound - 1, 0], np.int64)
    wide = (acc * m + (1 << (s - 1))) >> s
    with np.errstate(over="ignore"):
        narrow = (acc.astype(np.int32) * np.int32(m) + np.int32(1 << (s - 1))) >> np.int32(s)
    np.testing.assert_array_equal(wide, narrow)


def test_requantize_params_keep_precision_when_the_bound_allows() -> None:
    m, s = requantize_params(0.0123, 1000)
    assert m >= 2 ** 14  # the full 15 bits
    m, s = requantize_params(0.0123, 2 ** 24)  # a large accumulator: fewer bits, still exact
    assert 2 ** 6 <= m < 2 ** 7 and abs(m / 2 ** s / 0.0123 - 1) < 1 / 2 ** 6
    with pytest.raises(TensorforgeError, match="not in"):
        requantize_params(1.5, 10)


def test_quantized_graph_structure_and_accuracy(llvm_target: Any) -> None:
    g = small_resnet()
    qg = tensorforge.quantize(g, _inputs(8, 1))
    ops = qg.op_counts()
    assert ops["conv2d"] == 3 and ops["requantize"] == 4 and ops["dense"] == 1
    assert "relu" not in ops  # relu is the requantize's clip at 0
    for n in qg.nodes:
        if n.op in ("conv2d", "dense"):
            assert n.inputs[0].dtype == n.inputs[1].dtype == "int8"
            assert n.attrs["out_dtype"] == "int32" and n.outputs[0].dtype == "int32"
            assert len(n.inputs) < 3 or n.inputs[2].dtype == "int32"
        if n.op == "max_pool2d":
            assert n.inputs[0].dtype == "int8"
    relu_clips = [n.attrs["lo"] for n in qg.nodes if n.op == "requantize"]
    assert relu_clips.count(0) == 3  # stem, block's first conv, the residual add
    # the residual add is integer arithmetic: no float value between the convs and the pool
    floats = [n.op for n in qg.nodes if n.outputs[0].dtype == "float32"]
    assert floats == ["dequantize", "global_avg_pool2d", "reshape", "dequantize"]
    cos = []
    for x in _inputs(6, 2):
        f = run_reference(g, {"x": x})[0].ravel()
        q = run_reference(qg, {"x": x})[0].ravel()
        cos.append(f @ q / np.linalg.norm(f) / np.linalg.norm(q))
    assert min(cos) > 0.99, cos


def test_quantized_graph_compiles_bit_exact(llvm_target: Any) -> None:
    qg = tensorforge.quantize(small_resnet(), _inputs(4, 1))
    cm = tensorforge.compile(qg, target=TARGET)
    for x in _inputs(3, 3) + [np.full((1, 3, 12, 12), 1e4, "float32")]:  # + saturated
        np.testing.assert_array_equal(cm.run({"x": x})[0], run_reference(qg, {"x": x})[0])


@pytest.mark.parametrize("op", ["conv2d", "dense"])
def test_int8_products_accumulate_in_int32(llvm_target: Any, op: str) -> None:
    """Extreme int8 operands (-128 * -128 summed): the reference and the kernel agree and
    exceed what int8 or int16 holds."""
    g = Graph("i8")
    if op == "conv2d":
        x = g.add_input("x", (1, 8, 5, 5), "int8")
        w = g.add_const("w", np.full((4, 8, 3, 3), -128, np.int8))
        y = g.add("conv2d", x, w, g.add_const("b", np.arange(4, dtype=np.int32)),
                  strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1), groups=1,
                  out_dtype="int32")
        xv = np.full((1, 8, 5, 5), -128, np.int8)
    else:
        x = g.add_input("x", (1, 64), "int8")
        w = g.add_const("w", np.full((20, 64), -128, np.int8))
        y = g.add("dense", x, w, out_dtype="int32")
        xv = np.full((1, 64), -128, np.int8)
    g.outputs = [y]
    want = run_reference(g, {"x": xv})[0]
    assert want.dtype == np.int32 and int(want.max()) >= 64 * 16384
    got = tensorforge.compile(g, target=TARGET).run({"x": xv})[0]
    np.testing.assert_array_equal(got, want)


def test_bad_calibration_inputs_are_clear_errors() -> None:
    g = small_resnet()
    with pytest.raises(TensorforgeError, match="at least one calibration input"):
        tensorforge.quantize(g, [])
    with pytest.raises(TensorforgeError, match="lacks graph input"):
        tensorforge.quantize(g, [{"image": _inputs(1, 0)[0]}])


def test_relu_after_a_pool_is_an_int8_max(llvm_target: Any) -> None:
    """A relu that no requantize absorbs stays in int8: max(x, 0) at the same scale."""
    g = Graph("pool_relu")
    x = g.add_input("x", (1, 3, 12, 12), "float32")
    y = g.add("conv2d", x, g.add_const("w", np.ones((4, 3, 1, 1), "float32")),
              strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), groups=1)
    y = g.add("relu", g.add("max_pool2d", y, kernel=(2, 2), strides=(2, 2),
                            pads=(0, 0, 0, 0), ceil_mode=False))
    g.outputs = [y]
    qg = tensorforge.quantize(g, _inputs(4, 5))
    relu = next(n for n in qg.nodes if n.op == "maximum")
    assert relu.inputs[0].dtype == "int8" and relu.outputs[0].dtype == "int8"
    cm = tensorforge.compile(qg, target=TARGET)
    for x in _inputs(2, 6):
        got = cm.run({"x": x})[0]
        np.testing.assert_array_equal(got, run_reference(qg, {"x": x})[0])
        assert got.min() >= 0
        np.testing.assert_allclose(got, run_reference(g, {"x": x})[0], atol=0.05)
