"""quantize / dequantize / requantize graph ops: generated kernels against the numpy
references, bit for bit (integer-only requantize), and their rounding rules."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorforge
from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, run_reference
from tensorforge.graph.ops.quantize import quantize_multiplier

TARGET = "llvm -num-threads=1"


def _compiled(g: Graph, feeds: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    got = tensorforge.compile(g, target=TARGET).run(feeds)[0]
    return got, run_reference(g, feeds)[0]


def test_quantize_rounds_half_to_even_and_saturates(llvm_target: Any) -> None:
    g = Graph("q")
    x = g.add_input("x", (10,), "float32")
    s = g.add_const("s", np.array(0.5, "float32"))
    z = g.add_const("z", np.array(3, "int8"))
    g.outputs = [g.add("quantize", x, s, z, to="int8")]
    xv = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 100.0, -100.0, 0.0, np.inf, -np.inf],
                  "float32")
    got, want = _compiled(g, {"x": xv})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, [3, 5, 3, 1, 5, 127, -128, 3, 127, -128])


def test_dequantize_per_axis(llvm_target: Any) -> None:
    g = Graph("dq")
    q = g.add_input("q", (2, 3, 4), "uint8")
    s = g.add_const("s", np.array([0.5, 0.25, 2.0], "float32").reshape(1, 3, 1))
    z = g.add_const("z", np.array([128, 0, 7], "uint8").reshape(1, 3, 1))
    g.outputs = [g.add("dequantize", q, s, z, to="float32")]
    qv = np.random.default_rng(0).integers(0, 256, (2, 3, 4)).astype("uint8")
    got, want = _compiled(g, {"q": qv})
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got, (qv.astype("float32") - z.const) * s.const)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.floats(min_value=1e-6, max_value=0.999), st.integers(-20, 20),
       st.lists(st.integers(-(2 ** 31), 2 ** 31 - 1), min_size=1, max_size=32))
def test_requantize_is_bit_exact(llvm_target: Any, real: float, zp: int,
                                 acc: list[int]) -> None:
    """Integer-only: clip(((acc * m + 2**(s-1)) >> s) + zp) equals the numpy reference for
    any int32 accumulator, and approximates acc * real within one unit."""
    m, s = quantize_multiplier(real)
    a = np.array(acc, "int32")
    g = Graph("rq")
    x = g.add_input("acc", a.shape, "int32")
    g.outputs = [g.add("requantize", x, multiplier=m, shift=s, zero_point=zp)]
    got, want = _compiled(g, {"acc": a})
    exact = np.clip(np.floor(a.astype("float64") * real + 0.5) + zp, -128, 127)
    assert np.abs(want.astype("float64") - exact).max() <= 1
    np.testing.assert_array_equal(got, want)


def test_quantize_multiplier() -> None:
    for real in (0.5, 0.1, 1e-5, 0.999999):
        m, s = quantize_multiplier(real)
        assert 2 ** 30 <= m < 2 ** 31
        assert abs(m * 2.0 ** -s - real) <= real * 2 ** -30
    with pytest.raises(ValueError, match="not in"):
        quantize_multiplier(1.5)


def test_requantize_rejects_overflowing_parameters() -> None:
    g = Graph("bad")
    x = g.add_input("acc", (2,), "int32")
    with pytest.raises(TensorforgeError, match="multiplier"):
        g.add("requantize", x, multiplier=2 ** 31, shift=31)
