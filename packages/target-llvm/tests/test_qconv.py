"""The int8 convolution (`qconv2d` -> `qconv2d_nchwc`, graph/ops/qconv.py) on the llvm target,
bit-exact against numpy int64 arithmetic: the VNNI path (`vpdpbusd`, where this CPU has it)
and the widened int32 path (VNNI switched off in -mattr), uint8 and int8 activations with
zero points, channel counts no quad divides (3, 5), output blocks of 16/8/4, stride 2,
asymmetric padding, dilation, and the float32 requantizing epilogue fused in."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.ops.qconv import (
    dot4_reference,
    pack_weight_dot4,
    unpack_weight_dot4,
)
from tensorforge_llvm import jit

NO_VNNI = "llvm -num-threads=1 -mattr=-avx512vnni,-avxvnni"


def _host_vnni() -> bool:
    """Whether code for this machine may use vpdpbusd (LLVM's host features masked by what
    the OS reports, as the target resolves them)."""
    feats = jit.enabled_features(jit.resolve_options(tensorforge.Target.parse("llvm")))
    return bool({"avx512vnni", "avxvnni"} & feats)


def _graph(c: int, o: int, hw: tuple[int, int], k: tuple[int, int], stride: int,
           pads: tuple[int, int, int, int], xdtype: str, zx: int, requant: bool,
           dil: int = 1, seed: int = 0) -> tuple[Graph, dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    g = Graph()
    info = np.iinfo(xdtype)
    x = g.add_input("x", (1, c, *hw), xdtype)
    w = g.add_const("w", rng.integers(-128, 128, (o, c, *k)).astype("int8"))
    b = g.add_const("b", rng.integers(-5000, 5000, o).astype("int32"))
    y = g.add("qconv2d", x, w, b, strides=(stride, stride), pads=pads,
              dilations=(dil, dil), x_zero_point=zx)
    if requant:
        f = g.add("cast", y, to="float32")
        m = g.add_const("m", (rng.uniform(0.5, 2, (1, o, 1, 1)) / 3000).astype("float32"))
        y = g.add("quantize", g.add("mul", f, m), g.add_const("one", np.ones((), "float32")),
                  g.add_const("zy", np.array(-3, "int8")), to="int8", lo=-3)
    g.outputs = [y]
    return g, {"x": rng.integers(info.min, info.max + 1, (1, c, *hw)).astype(xdtype)}


def _check(g: Graph, inputs: dict[str, np.ndarray], target: str, opt_level: int = 3) -> str:
    """Compile, compare bit-exactly with the numpy reference; the kernels' assembly."""
    cm = tensorforge.compile(g, target=target, opt_level=opt_level)
    np.testing.assert_array_equal(cm.run(inputs)[0], run_reference(g, inputs)[0])
    masters = {k["master"]: k["schedule"] for k in cm.desc["kernels"]}
    if opt_level >= 2:
        assert masters.get("qconv2d_nchwc", "").startswith("strategy"), masters
        assert not {"conv2d", "conv2d_nchwc"} & set(masters), masters
    return cm.module.get_source("asm")


CASES = [  # c, o, hw, k, stride, pads, xdtype, zx, requant
    (3, 16, (9, 11), (3, 3), 1, (1, 1, 1, 1), "uint8", 7, True),
    (16, 32, (8, 8), (3, 3), 2, (1, 0, 2, 1), "int8", -5, False),
    (5, 24, (6, 7), (1, 1), 1, (0, 0, 0, 0), "int8", 100, True),
    (32, 20, (5, 5), (3, 3), 1, (1, 1, 1, 1), "uint8", 255, False),
]


@pytest.mark.parametrize("target", ["llvm -num-threads=1", NO_VNNI], ids=["host", "no_vnni"])
@pytest.mark.parametrize("case", CASES, ids=[f"c{c[0]}o{c[1]}_{c[6]}" for c in CASES])
def test_qconv_bit_exact(llvm_target, case, target) -> None:
    g, inputs = _graph(*case[:4], *case[4:])
    asm = _check(g, inputs, target)
    # the instruction is used exactly where the target has it (never assumed)
    assert ("vpdpbusd" in asm) == (_host_vnni() and target != NO_VNNI)


def test_qconv_generic_schedule_without_layout(llvm_target) -> None:
    """opt-level 1 (no layout pass): the NCHW `qconv2d` with the generic schedule."""
    g, inputs = _graph(6, 8, (7, 7), (3, 3), 2, (1, 1, 0, 0), "int8", 3, True, dil=1)
    _check(g, inputs, "llvm -num-threads=1", opt_level=1)


def test_qconv_two_threads_dilated(llvm_target) -> None:
    g, inputs = _graph(8, 16, (12, 12), (3, 3), 1, (2, 2, 2, 2), "uint8", 128, True, dil=2)
    _check(g, inputs, "llvm -num-threads=2")


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.function_scoped_fixture])
@given(c=st.integers(1, 9), o=st.sampled_from([4, 8, 16]), h=st.integers(3, 7),
       k=st.sampled_from([1, 3]), stride=st.sampled_from([1, 2]), pad=st.integers(0, 1),
       signed=st.booleans(), zx=st.integers(0, 255), seed=st.integers(0, 99))
def test_qconv_hypothesis(llvm_target, c, o, h, k, stride, pad, signed, zx, seed) -> None:
    xdtype = "int8" if signed else "uint8"
    zx = zx - 128 if signed else zx
    g, inputs = _graph(c, o, (h, h + 1), (k, k), stride, (pad,) * 4, xdtype, zx, False,
                       seed=seed)
    _check(g, inputs, "llvm -num-threads=1")


def test_weight_packing_round_trip_and_dot4() -> None:
    rng = np.random.default_rng(3)
    w = rng.integers(-128, 128, (8, 5, 3, 3)).astype("int8")
    w4 = pack_weight_dot4(w, 4)
    assert w4.shape == (2, 2, 3, 3, 4) and w4.dtype == np.int32
    np.testing.assert_array_equal(unpack_weight_dot4(w4, 5), w)
    a = rng.integers(0, 2 ** 32, 50, dtype=np.uint64).astype("uint32")
    b = rng.integers(-2 ** 31, 2 ** 31, 50).astype("int32")
    def sbyte(v: int, j: int) -> int:
        u = (v >> 8 * j) & 255
        return u - 256 if u > 127 else u

    want = [sum(((int(x) >> 8 * j) & 255) * sbyte(int(y), j) for j in range(4))
            for x, y in zip(a, b)]
    np.testing.assert_array_equal(dot4_reference(a, b), want)


def test_bad_qconv_inputs_are_clear_errors() -> None:
    g = Graph()
    x = g.add_input("x", (1, 4, 5, 5), "float32")
    with pytest.raises(tensorforge.TensorforgeError, match="int8/uint8 data"):
        g.add("qconv2d", x, g.add_const("w", np.zeros((4, 4, 1, 1), "int8")))
    x8 = g.add_input("x8", (1, 4, 5, 5), "int8")
    with pytest.raises(tensorforge.TensorforgeError, match="bias must be int32"):
        g.add("qconv2d", x8, g.add_const("w2", np.zeros((4, 4, 1, 1), "int8")),
              g.add_const("b", np.zeros(4, "float32")))
