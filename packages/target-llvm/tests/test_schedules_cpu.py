"""The hand-written CPU schedules of `tensorforge.ops.schedules_cpu` compute the right thing
(small shapes; the benchmarks time the big ones)."""

from __future__ import annotations

import numpy as np
import pytest

import tensorforge
from tensorforge.ops import conv2d_nchwc, pack_nchwc, pack_oihw_xi_yo, unpack_nchwc
from tensorforge.ops.schedules_cpu import cpu_tiles, schedule_conv2d_nchwc, schedule_matmul_packed


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tiles", [cpu_tiles(16)["matmul"], cpu_tiles(8)["matmul"],
                                   dict(mr=2, bn=8, ku=2)])
def test_matmul_packed(llvm_target, tiles, threads):
    M, N, K = 48, 64, 40
    s, args = schedule_matmul_packed(M, N, K, **tiles)
    f = tensorforge.build(s, args, target=f"llvm -num-threads={threads}")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K), dtype="float32")
    b = rng.standard_normal((K, N), dtype="float32")
    c = np.zeros((M, N), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_packed_rejects_ragged_shapes():
    with pytest.raises(ValueError, match="multiples"):
        schedule_matmul_packed(10, 32, 8, mr=8, bn=32)


def _conv_ref(x, w, stride, pad):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), "float64")
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j])
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tiles,stride,pad", [
    (cpu_tiles(16)["conv2d"], 1, 1),
    (cpu_tiles(8)["conv2d"], 1, 1),
    (dict(ic_bn=4, oc_bn=8, reg_n=2), 2, 0),
])
def test_conv2d_nchwc(llvm_target, tiles, stride, pad, threads):
    N, C, H, W, OC = 1, 32, 14, 14, 32
    OW = (W + 2 * pad - 3) // stride + 1
    if OW % tiles["reg_n"]:
        tiles = dict(tiles, reg_n=OW)
    s, args = schedule_conv2d_nchwc(N, C, H, W, OC, 3, 3, stride, pad, **tiles)
    f = tensorforge.build(s, args, target=f"llvm -num-threads={threads}")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, C, H, W), dtype="float32")
    w = rng.standard_normal((OC, C, 3, 3), dtype="float32")
    out = np.zeros(tuple(d.value for d in args[-1].shape), "float32")
    f(pack_nchwc(x, tiles["ic_bn"]), pack_oihw_xi_yo(w, tiles["ic_bn"], tiles["oc_bn"]), out)
    np.testing.assert_allclose(unpack_nchwc(out), _conv_ref(x, w, stride, pad), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_nchwc_checks_blocking():
    from tensorforge import te

    data = te.placeholder((1, 4, 8, 8, 16), name="data")
    kernel = te.placeholder((2, 8, 3, 3, 8, 32), name="kernel")
    with pytest.raises(ValueError, match="blocking"):
        conv2d_nchwc(data, kernel)


def test_build_of_lowered_func_does_not_lower_again(llvm_target, monkeypatch):
    from tensorforge.tir.transform import pipeline

    calls = []
    real = pipeline.run_passes
    monkeypatch.setattr(pipeline, "run_passes", lambda *a, **k: calls.append(1) or real(*a, **k))
    s, args = schedule_matmul_packed(16, 32, 8, mr=4, bn=32, ku=2)
    func = tensorforge.lower(s, args)
    assert tensorforge.lower(func) is func
    f = tensorforge.build([func], target="llvm -num-threads=1")
    assert len(calls) == 1
    a, b = np.ones((16, 8), "float32"), np.ones((8, 32), "float32")
    c = np.zeros((16, 32), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b)
