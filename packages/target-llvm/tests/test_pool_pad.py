"""Pools with the padding inlined (`pools.schedule_pool`, knob `inline_pad`, `-pool-pad=`)
against the numpy reference: blocked and NCHW, max and average (padding counted or not),
stride 2 on odd sizes, ceil mode, batch 2, both knob values."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.autotune.space import ConfigSpace
from tensorforge.ops import nn, reference
from tensorforge.ops.nn_blocked import avg_pool2d_nchwc, max_pool2d_nchwc
from tensorforge.target import Target
from tensorforge_llvm.pools import schedule_pool

RNG = np.random.default_rng(5)
CASES = [((3, 3), 2, (1, 1, 1, 1), False), ((3, 3), 2, (0, 1, 1, 0), True),
         ((2, 2), 1, (1, 0, 0, 1), False)]


def _blocked(x: np.ndarray, bn: int) -> np.ndarray:
    n, c, h, w = x.shape
    return x.reshape(n, c // bn, bn, h, w).transpose(0, 1, 3, 4, 2).copy()


def _run(out, args_te, args_np, inline: bool, llvm_target) -> np.ndarray:
    sp = ConfigSpace(llvm_target)
    schedule_pool([out], llvm_target, sp)
    vals = {name: sp[name].json() for name in sp.knobs}
    vals["inline_pad"] = inline
    s = schedule_pool([out], llvm_target, sp.from_json({"knobs": vals}))
    f = tensorforge.build(s, [*args_te, out], target=llvm_target)
    got = np.zeros([int(e.value) for e in out.shape], "float32")
    f(*args_np, got)
    return got


@pytest.mark.parametrize("kernel,stride,pads,ceil", CASES)
@pytest.mark.parametrize("kind", ["max", "avg", "avg_include_pad"])
@pytest.mark.parametrize("inline", [False, True])
def test_blocked_pools_match_numpy(llvm_target, kernel, stride, pads, ceil, kind,
                                   inline) -> None:
    bn, shape = 8, (2, 16, 11, 13)
    x = RNG.standard_normal(shape).astype("float32")
    d = te.placeholder((2, 2, 11, 13, bn), name="d")
    if kind == "max":
        out = max_pool2d_nchwc(d, kernel, stride, pads, ceil_mode=ceil)
        want = reference.max_pool2d(x, kernel, stride, pads, ceil)
    else:
        inc = kind == "avg_include_pad"
        out = avg_pool2d_nchwc(d, kernel, stride, pads, count_include_pad=inc, ceil_mode=ceil)
        want = reference.avg_pool2d(x.astype("float64"), kernel, stride, pads, inc, ceil)
    got = _run(out, [d], [_blocked(x, bn)], inline, llvm_target)
    np.testing.assert_allclose(got, _blocked(want.astype("float32"), bn), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("inline", [False, True])
def test_nchw_max_pool_matches_numpy(llvm_target, inline) -> None:
    x = RNG.standard_normal((2, 3, 21, 19)).astype("float32")
    d = te.placeholder(x.shape, name="d")
    out = nn.max_pool2d(d, (3, 3), 2, 1)
    got = _run(out, [d], [x], inline, llvm_target)
    np.testing.assert_array_equal(got, reference.max_pool2d(x, (3, 3), 2, 1))


def test_option_sets_the_default(llvm_target) -> None:
    d = te.placeholder((1, 1, 9, 9, 8), name="d")
    out = max_pool2d_nchwc(d, (3, 3), 2, 1)
    for policy, inline in (("inline", True), ("root", False)):
        sp = ConfigSpace(llvm_target)
        schedule_pool([out], Target.coerce(f"llvm -num-threads=1 -pool-pad={policy}"), sp)
        assert sp["inline_pad"].val is inline
