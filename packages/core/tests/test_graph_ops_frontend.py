"""The graph ops added for the ONNX frontend: each op's TE compute, built for llvm with a
trivial schedule, against its numpy reference (and the reference against plain numpy where
the semantics are not obvious)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.graph import get_op

RNG = np.random.default_rng(0)


def rand(*shape: int, dtype: str = "float32") -> np.ndarray:
    return RNG.uniform(-2, 2, size=shape).astype(dtype)


def check(target: Any, op: str, inputs: list[np.ndarray], attrs: dict[str, Any],
          rtol: float = 1e-5, atol: float = 1e-5) -> list[np.ndarray]:
    """Build op's TE compute and compare every output with the op's reference."""
    d = get_op(op)
    types = d.infer([(a.shape, str(a.dtype)) for a in inputs], attrs)
    phs = [te.placeholder(a.shape, dtype=str(a.dtype), name=f"in{i}")
           for i, a in enumerate(inputs)]
    outs = d.compute(phs, attrs, types)
    s = te.create_schedule([o.op for o in outs])
    f = tensorforge.build(s, [*phs, *outs], target=target)
    got = [np.zeros(shape, dtype=dt) for shape, dt in types]
    f(*inputs, *got)
    want = d.reference(inputs, attrs)
    for g, w, (shape, dt) in zip(got, want, types):
        assert tuple(np.shape(w)) == tuple(shape)
        np.testing.assert_allclose(g, np.asarray(w).astype(dt), rtol=rtol, atol=atol)
    return want


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("axes,keep", [((1,), True), ((0, 2), False), (None, False)])
def test_reduce(llvm_target: Any, kind: str, axes: Any, keep: bool) -> None:
    x = rand(3, 4, 5)
    want = check(llvm_target, f"reduce_{kind}", [x], {"axes": axes, "keepdims": keep})
    np.testing.assert_allclose(want[0], getattr(np, kind)(x, axis=axes, keepdims=keep),
                               rtol=1e-5)


def test_log_softmax_layer_norm(llvm_target: Any) -> None:
    check(llvm_target, "log_softmax", [rand(2, 3, 7)], {"axis": 1})
    check(llvm_target, "layer_norm", [rand(2, 3, 8), rand(8), rand(8)],
          {"axis": -1, "epsilon": 1e-5})
    check(llvm_target, "layer_norm", [rand(2, 3, 4), rand(3, 4)], {"axis": 1})


def test_strided_slice_split_take_broadcast(llvm_target: Any) -> None:
    x = rand(4, 6, 5)
    want = check(llvm_target, "strided_slice", [x],
                 {"begin": (3, 1, 0), "step": (-1, 2, 1), "size": (3, 3, 5)})
    np.testing.assert_array_equal(want[0], x[3:0:-1, 1:6:2, :])
    outs = check(llvm_target, "split", [x], {"axis": 1, "sizes": (2, 4)})
    np.testing.assert_array_equal(outs[1], x[:, 2:])
    idx = np.array([[0, -1], [2, 1]], dtype="int64")
    want = check(llvm_target, "take", [x, idx], {"axis": 1})
    np.testing.assert_array_equal(want[0], np.take(x, idx, axis=1))
    check(llvm_target, "broadcast_to", [rand(3, 1)], {"shape": (2, 3, 4)})


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad(llvm_target: Any, mode: str) -> None:
    check(llvm_target, "pad", [rand(2, 3, 4)],
          {"pads": ((0, 0), (1, 2), (2, 1)), "mode": mode, "value": 1.5})


def test_pad_negative_crops(llvm_target: Any) -> None:
    x = rand(3, 5)
    want = check(llvm_target, "pad", [x], {"pads": ((1, -1), (-2, 0)), "mode": "constant"})
    np.testing.assert_array_equal(want[0][1:, :], x[:2, 2:])


def test_activations(llvm_target: Any) -> None:
    x = rand(3, 4)
    check(llvm_target, "elu", [x], {"alpha": 0.5})
    check(llvm_target, "selu", [x], {})
    check(llvm_target, "softplus", [x * 20], {})
    check(llvm_target, "prelu", [rand(2, 3, 4, 4), rand(3, 1, 1)], {})
    check(llvm_target, "logical_not", [x > 0], {})


@pytest.mark.parametrize("strides,pads,dil,opad,groups", [
    ((1, 1), (0, 0, 0, 0), (1, 1), (0, 0), 1),
    ((2, 2), (1, 0, 1, 2), (1, 1), (1, 0), 1),
    ((2, 3), (0, 1, 0, 1), (2, 1), (0, 0), 2),
])
def test_conv2d_transpose(llvm_target: Any, strides: Any, pads: Any, dil: Any, opad: Any,
                          groups: int) -> None:
    x, w, b = rand(2, 4, 5, 6), rand(4, 3, 3, 2), rand(3 * groups)
    check(llvm_target, "conv2d_transpose", [x, w, b],
          {"strides": strides, "pads": pads, "dilations": dil, "output_padding": opad,
           "groups": groups}, atol=1e-4)


def test_conv2d_transpose_reference_matches_scatter() -> None:
    x, w = rand(1, 2, 3, 3), rand(2, 2, 2, 2)
    y = get_op("conv2d_transpose").reference([x, w], {"strides": (2, 2)})[0]
    want = np.zeros((1, 2, 6, 6))
    for c in range(2):
        for i in range(3):
            for j in range(3):
                want[0, :, 2 * i:2 * i + 2, 2 * j:2 * j + 2] += x[0, c, i, j] * w[c]
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode,coord,nearest", [
    ("nearest", "asymmetric", "floor"),
    ("nearest", "half_pixel", "round_prefer_floor"),
    ("nearest", "align_corners", "round_prefer_ceil"),
    ("linear", "half_pixel", ""),
    ("linear", "align_corners", ""),
    ("linear", "asymmetric", ""),
    ("linear", "pytorch_half_pixel", ""),
])
def test_resize(llvm_target: Any, mode: str, coord: str, nearest: str) -> None:
    at = {"size": (1, 2, 7, 10), "scales": (1.0, 1.0, 7 / 4, 2.0), "mode": mode,
          "coord": coord}
    if nearest:
        at["nearest_mode"] = nearest
    check(llvm_target, "resize", [rand(1, 2, 4, 5)], at)
