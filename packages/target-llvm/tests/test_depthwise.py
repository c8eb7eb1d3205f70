"""Depthwise NCHW[x]c convolution: the zero padding read inline (guarded taps) or from a
padded copy (`-depthwise-pad=copy`), both against numpy over strides, dilations, kernel sizes,
asymmetric pads and widths no register tile divides."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge.ops import nn_blocked, pack_nchwc
from tensorforge.ops import reference as ref_ops
from tensorforge.target import Target
from tensorforge_llvm.strategies import schedule_depthwise_nchwc

RNG = np.random.default_rng(7)


def _depthwise(c: int, h: int, w: int, k: int, stride: int, pads: tuple[int, int, int, int],
               dilation: int, bn: int):
    x = te.placeholder((1, c // bn, h, w, bn), name="x")
    wt = te.placeholder((c // bn, 1, k, k, 1, bn), name="w")
    b = te.placeholder((c,), name="b")
    y = nn_blocked.depthwise_conv2d_nchwc(x, wt, stride, pads, dilation)
    z = te.compute(y.shape, lambda n, q, i, j, r: te.min_expr(te.max_expr(
        y[n, q, i, j, r] + b[q * bn + r], te.const(0.0, "float32")), te.const(6.0, "float32")),
        name="clip", tag="elemwise")
    return x, wt, b, z


@pytest.mark.parametrize("pad_mode", ["inline", "copy"])
@pytest.mark.parametrize("c,h,w,k,stride,pads,dilation,bn", [
    (32, 14, 13, 3, 1, (1, 1, 1, 1), 1, 16),   # MobileNet stride 1, OW 13 prime
    (64, 15, 15, 3, 2, (1, 1, 1, 1), 1, 32),   # stride 2, odd input
    (48, 12, 17, 5, 2, (2, 2, 2, 2), 1, 16),   # EfficientNet 5x5 stride 2
    (24, 9, 9, 3, 2, (0, 1, 1, 0), 1, 8),      # asymmetric (TF "same") pads
    (16, 11, 10, 3, 1, (2, 2, 2, 2), 2, 16),   # dilated (DeepLab's backbone)
    (8, 7, 7, 3, 1, (1, 1, 1, 1), 1, 4),       # ShuffleNet's quarter-vector blocks
    (16, 6, 6, 3, 1, (0, 0, 0, 0), 1, 16),     # no padding at all
])
def test_depthwise_matches_numpy(llvm_target, pad_mode, c, h, w, k, stride, pads, dilation,
                                 bn) -> None:
    target = Target.coerce(f"llvm -num-threads=1 -depthwise-pad={pad_mode}")
    x, wt, b, z = _depthwise(c, h, w, k, stride, pads, dilation, bn)
    f = tensorforge.build(schedule_depthwise_nchwc([z], target), [x, wt, b, z], target=target)
    xv = RNG.standard_normal((1, c, h, w)).astype("float32")
    wv = RNG.standard_normal((c, 1, k, k)).astype("float32")
    bv = RNG.standard_normal(c).astype("float32")
    ref = ref_ops.conv2d_nchw(xv, wv, stride, pads, dilation, groups=c)
    ref = pack_nchwc(np.clip(ref + bv[None, :, None, None], 0.0, 6.0), bn)
    wp = np.ascontiguousarray(wv.reshape(c // bn, bn, 1, k, k).transpose(0, 2, 3, 4, 1))
    out = np.full(ref.shape, np.nan, "float32")
    f(pack_nchwc(xv, bn), wp[:, :, :, :, None, :], bv, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("pad_mode,copies", [("inline", False), ("copy", True)])
def test_inline_padding_makes_no_padded_copy(llvm_target, pad_mode: str, copies: bool) -> None:
    """The default reads the padding inline: the kernel allocates no padded input."""
    target = Target.coerce(f"llvm -num-threads=1 -depthwise-pad={pad_mode}")
    x, wt, b, z = _depthwise(32, 14, 14, 3, 2, (1, 1, 1, 1), 1, 16)
    text = str(tensorforge.lower(schedule_depthwise_nchwc([z], target), [x, wt, b, z]))
    assert ("depthwise_conv2d_nchwc_pad = allocate" in text) == copies, text[:400]


def test_depthwise_pad_option_is_checked(llvm_target) -> None:
    from tensorforge.errors import TensorforgeError

    with pytest.raises(TensorforgeError, match="depthwise-pad"):
        Target.coerce("llvm -depthwise-pad=fast")
