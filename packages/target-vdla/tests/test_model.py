"""A quantized ResNet-18 compiled for `vdla -host=llvm`: its convolutions and classifier on
the simulator, the rest on the host, bit-identical to the same int8 graph compiled for llvm,
and the same after `.tfpkg` export and `tensorforge.load`.

The test uses 32x32 inputs (every layer of ResNet-18, the 224x224 spatial sizes divided by 7;
the simulator runs them in about a second); benchmarks/vdla_resnet18_int8.py runs the full
224x224 model and reports the accuracy against the float model (docs/vdla.md)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.graph import Graph, run_reference

SHAPE = (1, 3, 32, 32)


@pytest.fixture(scope="module")
def quantized_resnet18() -> Graph:
    from tensorforge_onnx.frontend import load
    from tensorforge_onnx.models import build

    g = load(build("resnet18"), input_shapes={"input": SHAPE})
    rng = np.random.default_rng(7)
    return tensorforge.quantize(g, [rng.standard_normal(SHAPE).astype("float32")
                                    for _ in range(2)])


@pytest.fixture
def compiled(vdla, llvm_target, quantized_resnet18) -> tuple[Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no group may fall back after a failed schedule
        on_vdla = tensorforge.compile(quantized_resnet18, target="vdla -host=llvm")
    return on_vdla, tensorforge.compile(quantized_resnet18, target="llvm -num-threads=1")


def test_resnet18_int8_on_vdla_is_bit_identical_to_llvm(compiled, quantized_resnet18, tmp_path
                                                        ) -> None:
    on_vdla, on_llvm = compiled
    kernels = on_vdla.desc["placement"]["kernels"]
    assert kernels["vdla"] == 21  # 20 convolutions (+ bias, requantize, relu) + classifier
    placed = {k["name"]: k["device"] for k in on_vdla.desc["kernels"]}
    assert sum(1 for n, d in placed.items() if "conv2d_nchwc" in n and d == "vdla") == 20
    assert any("dense_packed" in n and d == "vdla" for n, d in placed.items())
    path = on_vdla.export(tmp_path / "resnet18_int8.tfpkg")
    loaded = tensorforge.load(path)
    rng = np.random.default_rng(11)
    for _ in range(2):
        x = {"input": rng.standard_normal(SHAPE).astype("float32")}
        got = on_vdla.run(x)[0]
        np.testing.assert_array_equal(got, on_llvm.run(x)[0])
        np.testing.assert_array_equal(got, run_reference(quantized_resnet18, x)[0])
        np.testing.assert_array_equal(loaded.run(x)[0], got)


def test_stem_channels_are_zero_padded_to_the_block(vdla, quantized_resnet18) -> None:
    from tensorforge.graph.passes.simplify import copy_graph
    from tensorforge_vdla.layout import convert_layout

    g = convert_layout(copy_graph(quantized_resnet18), vdla("vdla"))
    pads = [n for n in g.nodes if n.op == "pad"]
    assert len(pads) == 1 and pads[0].outputs[0].shape == (1, 16, 32, 32)
    stem = next(n for n in g.nodes if n.op == "conv2d_nchwc")
    assert stem.inputs[0].shape == (1, 1, 32, 32, 16)
    assert stem.inputs[1].shape == (4, 1, 7, 7, 16, 16)
    assert stem.attrs["device"] == "vdla"


def test_wide_multiplier_stays_on_the_host(vdla) -> None:
    """A requantize whose multiplier is no 16-bit ALU immediate (core's quantize_multiplier
    gives 31 bits) is not claimed: the conv runs on the host."""
    from tensorforge.graph.ops.quantize import quantize_multiplier
    from tensorforge_vdla.layout import convert_layout

    g = Graph("wide")
    x = g.add_input("x", (1, 16, 8, 8), "int8")
    w = g.add_const("w", np.ones((16, 16, 3, 3), np.int8))
    acc = g.add("conv2d", x, w, strides=(1, 1), pads=(1, 1, 1, 1), dilations=(1, 1),
                groups=1, out_dtype="int32")
    m, s = quantize_multiplier(0.01)
    g.outputs = [g.add("requantize", acc, multiplier=m, shift=s)]
    g = convert_layout(g, vdla("vdla"))
    assert [n.op for n in g.nodes] == ["conv2d", "requantize"]
    assert all("device" not in n.attrs for n in g.nodes)


@settings(max_examples=100, deadline=None)
@given(st.floats(1e-6, 0.999), st.integers(1, 2 ** 28), st.booleans())
def test_alu_requantize_equals_the_64_bit_requantize(real: float, bound: int, relu: bool
                                                     ) -> None:
    """VDLA's 32-bit ALU sequence (split shift, 16-bit immediates) equals core's requantize
    (64-bit product) for every accumulator within the bound the multiplier was chosen for."""
    from tensorforge.graph.ops.quantize import _requantize_ref
    from tensorforge.graph.passes.quantize import requantize_params
    from tensorforge_vdla.graph_ops import alu_requantize

    m, s = requantize_params(real, bound)
    lo = 0 if relu else -127
    rng = np.random.default_rng(bound)
    acc = np.concatenate([[bound, -bound, 0, 1, -1], rng.integers(-bound, bound + 1, 64)])
    acc = acc.astype(np.int32)
    want = _requantize_ref([acc], {"multiplier": m, "shift": s, "lo": lo, "hi": 127})[0]
    np.testing.assert_array_equal(alu_requantize(acc, m, s, lo, 127), want)
