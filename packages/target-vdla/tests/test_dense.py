"""Dense (one row, int8 x int8 -> int32) on VDLA: exact, with one and two virtual threads,
with a bias + requantization epilogue on the ALU, and its tiling errors."""

import numpy as np
import pytest

import tensorforge
from tensorforge import te
from tensorforge_vdla.dense import DenseShape, dense_schedule, dense_te, schedule_dense
from tensorforge_vdla.errors import VDLABufferOverflowError, VDLACompileError


def _arrays(shape, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-128, 128, (1, shape.k)).astype(np.int8)
    w = rng.integers(-128, 128, (shape.n, shape.k)).astype(np.int8)
    packed = w.reshape(shape.n // 16, 16, shape.k).transpose(0, 2, 1).copy()
    return x, w, packed


@pytest.mark.parametrize("n_vthreads,seed", [(1, None), (2, None), (2, 1), (2, 2), (2, 3)])
def test_dense_is_exact(vdla, n_vthreads, seed):
    from tensorforge_vdla.config import VDLAConfig
    from tensorforge_vdla.driver import SimDriver

    shape = DenseShape(k=256, n=128)
    s, args = dense_schedule(shape, vdla(), (2, 4), n_vthreads)
    mod = tensorforge.build(s, args, target="vdla")
    mod.use_driver(SimDriver(VDLAConfig(), jitter_seed=seed))
    x, w, packed = _arrays(shape)
    out = np.zeros((1, shape.n), np.int32)
    mod(x, packed, out)
    np.testing.assert_array_equal(out, x.astype(np.int64) @ w.T.astype(np.int64))


def test_dense_bias_requantize_epilogue(vdla):
    from tensorforge_vdla.config import VDLAConfig

    shape = DenseShape(k=64, n=64)
    data, weight, dense = dense_te(shape, VDLAConfig())
    bias = te.placeholder((1, shape.n), "int32", name="bias")
    b = te.compute(dense.shape, lambda i, j: dense[i, j] + bias[0, j], name="bias_add")
    q = te.compute(dense.shape, lambda i, j: te.max_expr(
        te.min_expr(te.floordiv(b[i, j] * 5 + 512, 1024), 127), -128), name="requant")
    out = te.compute(dense.shape, lambda i, j: q[i, j].astype("int8"), name="out")
    s = schedule_dense([out], vdla(), None, 2)
    mod = tensorforge.build(s, [data, weight, bias, out], target="vdla")
    x, w, packed = _arrays(shape)
    bb = np.random.default_rng(1).integers(-9000, 9000, (1, shape.n)).astype(np.int32)
    got = np.zeros((1, shape.n), np.int8)
    mod(x, packed, bb, got)
    acc = x.astype(np.int64) @ w.T.astype(np.int64) + bb
    np.testing.assert_array_equal(got, np.clip((acc * 5 + 512) // 1024, -128, 127))


def test_dense_tiling_errors(vdla):
    with pytest.raises(VDLACompileError, match="two virtual threads need an even number"):
        dense_schedule(DenseShape(k=64, n=48), vdla(), (1, 1), 2)
    with pytest.raises(VDLABufferOverflowError, match="bytes of wgt_buffer but the design has "
                                                      "8192"):
        dense_schedule(DenseShape(k=256, n=128), vdla("vdla -wgt-kib=8"), (8, 16), 1)
    with pytest.raises(VDLACompileError, match="pad the channels"):
        dense_schedule(DenseShape(k=60, n=64), vdla())
