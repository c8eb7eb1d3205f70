"""Vector loads at compile-time lane offsets (`lane_gather.py`): the offsets found from the
index, and kernels (a permutation, a stride, lanes near the buffer's end) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.expr import Broadcast, IntImm, Ramp, Var, const
from tensorforge_llvm.lane_gather import MAX_WINDOWS, constant_lane_offsets


def test_offsets_of_a_broadcast_base_plus_a_constant_pattern() -> None:
    i = Var("i", "int32")
    r = Ramp(IntImm(0), IntImm(1), 8)
    two = Broadcast(IntImm(2), 8)
    idx = Broadcast(i * 16, 8) + (r % two) * Broadcast(IntImm(100), 8) + r // two
    base, offsets = constant_lane_offsets(idx, 8)
    assert len(base) == 1
    assert offsets == [(k % 2) * 100 + k // 2 for k in range(8)]


def test_a_loop_variable_in_the_lane_pattern_is_not_constant() -> None:
    i = Var("i", "int32")
    r = Ramp(i, IntImm(1), 4)
    assert constant_lane_offsets(r * Broadcast(IntImm(3), 4), 4) is None
    assert constant_lane_offsets(Broadcast(i, 4) - Ramp(const(0), const(1), 4), 4) == (
        [i], [0, -1, -2, -3])


@pytest.mark.parametrize("perm", ["interleave", "stride3", "reverse_tail", "scatter"])
def test_permuted_vector_loads_match_numpy(llvm_target, perm: str) -> None:
    """out[i, k] = x[i, src(k)] with `k` vectorized (a constant pattern per lane): the window
    loads' result, including lanes read from the last elements of `x`."""
    from tensorforge.target import Target

    lanes, rows = 16, 5
    src = {"interleave": [(k % 2) * 24 + k // 2 for k in range(lanes)],
           "stride3": [3 * k for k in range(lanes)],
           "reverse_tail": [47 - k for k in range(lanes)],
           "scatter": [k * 7 % 48 for k in range(lanes)]}[perm]
    x = te.placeholder((rows, 48), name="x")

    def f(i, k):
        if perm == "interleave":
            return x[i, (k % 2) * 24 + k // 2]
        if perm == "stride3":
            return x[i, 3 * k]
        if perm == "reverse_tail":
            return x[i, 47 - k]
        return x[i, k * 7 % 48]

    y = te.compute((rows, lanes), f, name="y")
    s = te.create_schedule(y.op)
    s[y].vectorize(y.op.axis[1])
    target = Target.coerce(str(llvm_target))
    fn = tensorforge.build(s, [x, y], target=target)
    xv = np.random.default_rng(0).standard_normal((rows, 48)).astype("float32")
    out = np.zeros((rows, lanes), "float32")
    fn(xv, out)
    np.testing.assert_array_equal(out, xv[:, src])
    text = fn.get_source("ll") if hasattr(fn, "get_source") else ""
    if text:  # 16 lanes over 48 elements: at most MAX_WINDOWS = 4 vector loads, none per lane
        assert "load float," not in text and "load <16 x float>" in text or (
            "llvm.masked.load" in text), text
    assert MAX_WINDOWS >= 3
