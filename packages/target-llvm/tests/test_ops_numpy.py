"""The operator library against numpy, each operator under several meaningful schedules.

Every case builds with the llvm target, runs on random data and compares with the numpy
reference (``tensorforge.ops.reference`` or plain numpy).

Tolerances: float32 results use ``rtol=1e-5`` and ``atol=1e-6 * K`` where K is the length of
the reduction behind one output element (``atol=1e-5`` at least, so elementwise results also
get 1e-5); the float32 numpy reference is computed in float64. Integer results (int8 -> int32
matmul, uint8, bool masks) must be exact. float16 elementwise results use ``rtol=1e-3``,
``atol=2e-3`` (one half-precision ulp near 2: LLVM may contract a*b+a into one fma).
On a mismatch the assertion message carries the lowered loop IR. The shapes and tolerances
are shared with `tensorforge.testing.op_cases`, the suite every target runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge import ops, te
from tensorforge.ops import reference as ref
from tensorforge.testing import op_cases

RNG = np.random.default_rng(0)


def rand(shape: tuple[int, ...], dtype: str = "float32") -> np.ndarray:
    return op_cases.rand(RNG, shape, dtype)


def run_and_check(
    s: Any, args: list[Any], inputs: list[np.ndarray], expected: np.ndarray,
    k: int = 1, exact: bool = False, rtol: float = 1e-5, atol: float | None = None,
) -> None:
    """Build `s`, run it on `inputs` (the output is the last arg) and compare with `expected`."""
    f = tensorforge.build(s, args, target="llvm")
    out_t = args[-1]
    out = np.full(tuple(int(d) for d in expected.shape), 7, dtype=out_t.dtype)
    f(*inputs, out)
    ok = (np.array_equal(out, expected) if exact else
          np.allclose(out, expected, rtol=rtol,
                      atol=max(1e-5, 1e-6 * k) if atol is None else atol))
    if not ok:
        ir = tensorforge.lower(s, args)
        diff = np.abs(out.astype("float64") - expected.astype("float64"))
        bad = np.argwhere(diff > 0)[:5].tolist()
        pytest.fail(f"mismatch (max abs err {diff.max()}, first bad {bad})\n{ir}")


# ---------------------------------------------------------------------------------- matmul
def _mm_default(s: Any, A: Any, B: Any, C: Any) -> None:
    pass


def _mm_split_vec(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=8)
    jo, ji = s[C].split(j, factor=8)
    s[C].reorder(io, jo, k, ii, ji)
    s[C].vectorize(ji)


def _mm_tile_par_unroll(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    xo, yo, xi, yi = s[C].tile(i, j, 4, 8)
    ko, ki = s[C].split(k, factor=4)
    s[C].reorder(xo, yo, ko, xi, ki, yi)
    s[C].parallel(xo)
    s[C].unroll(xi)
    s[C].unroll(ki)
    s[C].vectorize(yi)


def _mm_fuse_par(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = C.op.axis
    f = s[C].fuse(i, j)
    fo, fi = s[C].split(f, factor=16)
    s[C].parallel(fo)


def _mm_cache_write(s: Any, A: Any, B: Any, C: Any) -> None:
    CC = s.cache_write(C, "local")
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], 4, 8)
    s[CC].compute_at(s[C], no)
    mc, nc = s[CC].op.axis
    (kk,) = s[CC].op.reduce_axis
    ko, ki = s[CC].split(kk, factor=4)
    s[CC].reorder(ko, ki, mc, nc)
    s[CC].vectorize(nc)
    s[CC].unroll(mc)
    s[C].parallel(mo)
    s[C].vectorize(ni)


def _mm_cache_read(s: Any, A: Any, B: Any, C: Any) -> None:
    AA = s.cache_read(A, "local", [C])
    BB = s.cache_read(B, "global", [C])
    io, ii = s[C].split(C.op.axis[0], factor=4)
    s[AA].compute_at(s[C], io)
    s[BB].vectorize(s[BB].op.axis[1])


def _mm_nondivisible(s: Any, A: Any, B: Any, C: Any) -> None:
    i, j = C.op.axis
    (k,) = C.op.reduce_axis
    io, ii = s[C].split(i, factor=3)
    jo, ji = s[C].split(j, factor=5)
    ko, ki = s[C].split(k, factor=7)
    s[C].reorder(io, jo, ko, ii, ki, ji)
    s[C].vectorize(ji)
    s[C].unroll(ii)


MM_SCHEDULES = {
    "default": _mm_default,
    "split_vec": _mm_split_vec,
    "tile_par_unroll": _mm_tile_par_unroll,
    "fuse_par": _mm_fuse_par,
    "cache_write": _mm_cache_write,
    "cache_read": _mm_cache_read,
    "nondivisible": _mm_nondivisible,
}


@pytest.mark.parametrize("shape", [(32, 32, 32), (10, 14, 17), (1, 7, 3)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("sched", list(MM_SCHEDULES))
def test_matmul(llvm_target: Any, sched: str, shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    A = te.placeholder((m, k), name="A")
    B = te.placeholder((k, n), name="B")
    C = ops.matmul(A, B)
    s = te.create_schedule(C.op)
    MM_SCHEDULES[sched](s, A, B, C)
    a, b = rand((m, k)), rand((k, n))
    run_and_check(s, [A, B, C], [a, b], a.astype("float64") @ b, k=k)


def test_dense_split_vec(llvm_target: Any) -> None:
    A = te.placeholder((9, 20), name="A")
    W = te.placeholder((13, 20), name="W")
    D = ops.dense(A, W)
    s = te.create_schedule(D.op)
    io, ii = s[D].split(D.op.axis[1], factor=4)
    s[D].vectorize(ii)
    a, w = rand((9, 20)), rand((13, 20))
    run_and_check(s, [A, W, D], [a, w], a.astype("float64") @ w.T, k=20)


@pytest.mark.parametrize("sched", ["default", "split_vec", "cache_write", "nondivisible"])
def test_matmul_int8_to_int32_exact(llvm_target: Any, sched: str) -> None:
    m, n, k = 16, 24, 40
    A = te.placeholder((m, k), "int8", name="A")
    B = te.placeholder((k, n), "int8", name="B")
    C = ops.matmul(A, B, out_dtype="int32")
    s = te.create_schedule(C.op)
    MM_SCHEDULES[sched](s, A, B, C)
    a, b = rand((m, k), "int8"), rand((k, n), "int8")
    run_and_check(s, [A, B, C], [a, b], a.astype("int32") @ b.astype("int32"), exact=True)


def test_matmul_uint8_to_int32_exact(llvm_target: Any) -> None:
    A = te.placeholder((8, 33), "uint8", name="A")
    B = te.placeholder((33, 16), "uint8", name="B")
    C = ops.matmul(A, B, out_dtype="int32")
    s = te.create_schedule(C.op)
    _mm_split_vec(s, A, B, C)
    a = RNG.integers(0, 256, size=(8, 33)).astype("uint8")
    b = RNG.integers(0, 256, size=(33, 16)).astype("uint8")
    run_and_check(s, [A, B, C], [a, b], a.astype("int32") @ b.astype("int32"), exact=True)


# ---------------------------------------------------------------------------------- conv2d
def _cv_default(s: Any, P: Any, C: Any) -> None:
    pass


def _cv_inline(s: Any, P: Any, C: Any) -> None:
    if P is not None:
        s[P].compute_inline()
    n, f, y, x = C.op.axis
    xo, xi = s[C].split(x, factor=4)
    s[C].vectorize(xi)


def _cv_pad_at_row(s: Any, P: Any, C: Any) -> None:
    n, f, y, x = C.op.axis
    s[C].parallel(f)
    if P is not None:
        s[P].compute_at(s[C], y)


def _cv_pad_at_tile(s: Any, P: Any, C: Any) -> None:
    n, f, y, x = C.op.axis
    yo, xo, yi, xi = s[C].tile(y, x, 2, 4)
    if P is not None:
        s[P].compute_at(s[C], xo)
        s[P].vectorize(s[P].op.axis[3])
    s[C].unroll(yi)


def _cv_tile_par_vec(s: Any, P: Any, C: Any) -> None:
    n, f, y, x = C.op.axis
    rc, ry, rx = C.op.reduce_axis
    fo, fi = s[C].split(f, factor=2)
    xo, xi = s[C].split(x, factor=4)
    s[C].reorder(n, fo, y, xo, rc, ry, rx, fi, xi)
    s[C].parallel(fo)
    s[C].unroll(rx)
    s[C].vectorize(xi)
    if P is not None:
        s[P].compute_inline()


def _cv_fuse_par(s: Any, P: Any, C: Any) -> None:
    n, f, y, x = C.op.axis
    fused = s[C].fuse(n, f, y)
    s[C].parallel(fused)
    if P is not None:
        s[P].parallel(s[P].fuse(*s[P].op.axis[:3]))


def _cv_cache_write(s: Any, P: Any, C: Any) -> None:
    CC = s.cache_write(C, "local")
    n, f, y, x = C.op.axis
    yo, xo, yi, xi = s[C].tile(y, x, 2, 4)
    s[CC].compute_at(s[C], xo)
    _, fc, yc, xc = s[CC].op.axis
    rc, ry, rx = s[CC].op.reduce_axis
    s[CC].reorder(rc, ry, rx, yc, xc)
    s[CC].vectorize(xc)
    s[C].parallel(f)
    if P is not None:
        s[P].compute_inline()


def _cv_nondivisible(s: Any, P: Any, C: Any) -> None:
    n, f, y, x = C.op.axis
    rc, ry, rx = C.op.reduce_axis
    fo, fi = s[C].split(f, factor=3)
    yo, yi = s[C].split(y, factor=5)
    xo, xi = s[C].split(x, factor=7)
    s[C].reorder(n, fo, yo, xo, rc, fi, yi, ry, rx, xi)
    s[C].vectorize(xi)
    if P is not None:
        s[P].compute_at(s[C], yo)


CONV_SCHEDULES = {
    "default": _cv_default,
    "inline_pad": _cv_inline,
    "pad_at_row": _cv_pad_at_row,
    "pad_at_tile": _cv_pad_at_tile,
    "tile_par_vec": _cv_tile_par_vec,
    "fuse_par": _cv_fuse_par,
    "cache_write": _cv_cache_write,
    "nondivisible": _cv_nondivisible,
}

CONV_CASES = op_cases.CONV_CASES  # (N, C, H, W, O, K, stride, padding, dilation, groups)


def _pad_stage(C: Any) -> Any:
    for t in C.op.input_tensors:
        if t.op.tag and "pad" in t.op.tag:
            return t
    return None


@pytest.mark.parametrize("case", list(CONV_CASES))
@pytest.mark.parametrize("sched", list(CONV_SCHEDULES))
def test_conv2d_nchw(llvm_target: Any, sched: str, case: str) -> None:
    n, c, h, w, o, k, stride, pad, dil, groups = CONV_CASES[case]
    X = te.placeholder((n, c, h, w), name="X")
    W = te.placeholder((o, c // groups, k, k), name="W")
    C = ops.conv2d_nchw(X, W, stride, pad, dil, groups)
    s = te.create_schedule(C.op)
    CONV_SCHEDULES[sched](s, _pad_stage(C), C)
    x, wt = rand((n, c, h, w)), rand((o, c // groups, k, k))
    expected = ref.conv2d_nchw(x.astype("float64"), wt.astype("float64"), stride, pad, dil,
                               groups)
    run_and_check(s, [X, W, C], [x, wt], expected, k=c // groups * k * k)


@pytest.mark.parametrize("case", ["basic", "odd_ch_stride2", "pad_asym", "dilation2"])
@pytest.mark.parametrize("sched", ["default", "inline_vec", "pad_at_row", "cache_write"])
def test_conv2d_nhwc(llvm_target: Any, sched: str, case: str) -> None:
    n, c, h, w, o, k, stride, pad, dil, _ = CONV_CASES[case]
    X = te.placeholder((n, h, w, c), name="X")
    W = te.placeholder((k, k, c, o), name="W")
    C = ops.conv2d_nhwc(X, W, stride, pad, dil)
    s = te.create_schedule(C.op)
    P = _pad_stage(C)
    nn, y, x, f = C.op.axis
    if sched == "inline_vec":
        if P is not None:
            s[P].compute_inline()
        fo, fi = s[C].split(f, factor=4)
        s[C].vectorize(fi)
        s[C].parallel(y)
    elif sched == "pad_at_row":
        if P is not None:
            s[P].compute_at(s[C], y)
        s[C].vectorize(f)
    elif sched == "cache_write":
        CC = s.cache_write(C, "local")
        xo, xi = s[C].split(x, factor=3)
        s[CC].compute_at(s[C], xo)
        ry, rx, rc = s[CC].op.reduce_axis
        _, _, xc, fc = s[CC].op.axis
        s[CC].reorder(ry, rx, rc, xc, fc)
        s[CC].vectorize(fc)
    x_, wt = rand((n, h, w, c)), rand((k, k, c, o))
    expected = ref.conv2d_nhwc(x_.astype("float64"), wt.astype("float64"), stride, pad, dil)
    run_and_check(s, [X, W, C], [x_, wt], expected, k=c * k * k)


@pytest.mark.parametrize("cfg", [(1, 1, 0, 1), (2, 2, 1, 1), (1, 1, (1, 2), 2), (1, 2, 1, 1)],
                         ids=["m1", "m2_s2_p1", "pad12_dil2", "m1_s2"])
@pytest.mark.parametrize("sched", ["default", "inline_vec", "pad_at_row", "nondivisible"])
def test_depthwise_conv2d(llvm_target: Any, sched: str, cfg: tuple[Any, ...]) -> None:
    mult, stride, pad, dil = cfg
    c, h, w = 5, 11, 13
    X = te.placeholder((1, c, h, w), name="X")
    W = te.placeholder((c * mult, 1, 3, 3), name="W")
    C = ops.depthwise_conv2d_nchw(X, W, stride, pad, dil)
    s = te.create_schedule(C.op)
    P = _pad_stage(C)
    nn, f, y, x = C.op.axis
    ry, rx = C.op.reduce_axis
    if sched == "inline_vec":
        if P is not None:
            s[P].compute_inline()
        xo, xi = s[C].split(x, factor=4)
        s[C].reorder(nn, f, y, xo, ry, rx, xi)
        s[C].vectorize(xi)
        s[C].parallel(f)
    elif sched == "pad_at_row":
        if P is not None:
            s[P].compute_at(s[C], y)
    elif sched == "nondivisible":
        yo, yi = s[C].split(y, factor=3)
        xo, xi = s[C].split(x, factor=5)
        s[C].reorder(nn, f, yo, xo, ry, yi, rx, xi)
        s[C].unroll(rx)
        if P is not None:
            s[P].compute_at(s[C], xo)
    x_, wt = rand((1, c, h, w)), rand((c * mult, 1, 3, 3))
    expected = ref.depthwise_conv2d_nchw(x_.astype("float64"), wt.astype("float64"), stride,
                                         pad, dil)
    run_and_check(s, [X, W, C], [x_, wt], expected, k=9)


# --------------------------------------------------------------------------------- pooling
POOL_CASES = op_cases.POOL_CASES


def _pool_sched(s: Any, out: Any, sched: str) -> None:
    P = None
    stages = [out] + list(out.op.input_tensors)
    if "elemwise" in (out.op.tag or ""):  # avg: the division stage reads the sum stage
        sm = out.op.input_tensors[0]
        stages.append(sm)
        stages += list(sm.op.input_tensors)
        if sched != "default":
            s[sm].compute_at(s[out], out.op.axis[2])
    for t in stages:
        if "pad" in (t.op.tag or ""):
            P = t
    red = stages[0] if not out.op.reduce_axis else out
    n, c, y, x = out.op.axis
    if sched == "inline_vec":
        if P is not None:
            s[P].compute_inline()
        xo, xi = s[out].split(x, factor=4)
        s[out].vectorize(xi)
        s[out].parallel(c)
    elif sched == "pad_at_row":
        if P is not None:
            consumer = red if red.op.reduce_axis else out.op.input_tensors[0]
            if consumer is out:
                s[P].compute_at(s[out], y)
            else:
                s[P].compute_inline()
        s[out].parallel(s[out].fuse(n, c))
    del red


@pytest.mark.parametrize("case", list(POOL_CASES))
@pytest.mark.parametrize("sched", ["default", "inline_vec", "pad_at_row"])
def test_max_pool2d(llvm_target: Any, sched: str, case: str) -> None:
    kernel, stride, pad, ceil = POOL_CASES[case]
    X = te.placeholder((2, 3, 11, 12), name="X")
    out = ops.max_pool2d(X, kernel, stride, pad, ceil_mode=ceil)
    s = te.create_schedule(out.op)
    _pool_sched(s, out, sched)
    x = rand((2, 3, 11, 12))
    run_and_check(s, [X, out], [x], ref.max_pool2d(x, kernel, stride, pad, ceil), exact=True)


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize("case", list(POOL_CASES))
@pytest.mark.parametrize("sched", ["default", "inline_vec"])
def test_avg_pool2d(llvm_target: Any, sched: str, case: str, include_pad: bool) -> None:
    kernel, stride, pad, ceil = POOL_CASES[case]
    X = te.placeholder((1, 4, 10, 13), name="X")
    out = ops.avg_pool2d(X, kernel, stride, pad, count_include_pad=include_pad, ceil_mode=ceil)
    s = te.create_schedule(out.op)
    _pool_sched(s, out, sched)
    x = rand((1, 4, 10, 13))
    expected = ref.avg_pool2d(x.astype("float64"), kernel, stride, pad, include_pad, ceil)
    run_and_check(s, [X, out], [x], expected, k=9)


def test_global_avg_pool2d(llvm_target: Any) -> None:
    X = te.placeholder((2, 5, 7, 9), name="X")
    out = ops.global_avg_pool2d(X)
    s = te.create_schedule(out.op)
    x = rand((2, 5, 7, 9))
    run_and_check(s, [X, out], [x], x.astype("float64").mean(axis=(2, 3), keepdims=True), k=63)


# --------------------------------------------------------------------------------- softmax
@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("sched", ["default", "inline_exp_vec", "compute_at_row"])
def test_softmax(llvm_target: Any, sched: str, axis: int) -> None:
    shape = (6, 13, 9)
    X = te.placeholder(shape, name="X")
    out = ops.softmax(X, axis=axis)
    s = te.create_schedule(out.op)
    ex, sm = out.op.input_tensors
    mx = [t for t in ex.op.input_tensors if t is not X][0]
    if sched == "inline_exp_vec":
        s[ex].compute_inline()
        a0, a1, a2 = out.op.axis
        s[out].parallel(a0)
        s[out].vectorize(a2)
    elif sched == "compute_at_row":
        # the exp stage inlined: the max and the sum are computed per row of the output
        # (for axis 0 that recomputes them for every row: redundant, still correct)
        s[ex].compute_inline()
        a0 = out.op.axis[0]
        for t in (mx, sm):
            s[t].compute_at(s[out], a0)
        s[out].vectorize(out.op.axis[2])
    x = rand(shape)
    run_and_check(s, [X, out], [x], ref.softmax(x.astype("float64"), axis=axis), k=13)


# ------------------------------------------------------------------------------ reductions
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (-1,), (0, 2), (1, 2), (0, 1, 2), None],
                         ids=lambda a: "all" if a is None else "_".join(map(str, a)))
@pytest.mark.parametrize("kind", ["sum", "max", "min", "mean"])
def test_reduce(llvm_target: Any, kind: str, axes: Any, keepdims: bool) -> None:
    shape = (5, 7, 6)
    X = te.placeholder(shape, name="X")
    out = ops.reduce(X, axes, kind, keepdims)
    s = te.create_schedule(out.op)
    red = out if out.op.reduce_axis else out.op.input_tensors[0]
    dp = s[red].op.axis
    if dp and len(dp) >= 1 and not (keepdims and axes is None):
        o, i = s[red].split(dp[-1], factor=4)
        s[red].reorder(*dp[:-1], o, *s[red].op.reduce_axis, i)
        s[red].vectorize(i)
    x = rand(shape)
    fn = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}[kind]
    expected = fn(x.astype("float64"), axis=axes, keepdims=keepdims)
    klen = int(np.prod([shape[a] for a in (axes if axes is not None else range(3))]))
    if axes is not None:
        axes = tuple(axes)
    run_and_check(s, [X, out], [x], np.asarray(expected), k=klen)


def test_reduce_rsplit_unroll(llvm_target: Any) -> None:
    X = te.placeholder((9, 31), name="X")
    out = ops.reduce(X, (1,), "sum")
    s = te.create_schedule(out.op)
    (r,) = out.op.reduce_axis
    ro, ri = s[out].split(r, factor=4)
    s[out].unroll(ri)
    s[out].parallel(out.op.axis[0])
    x = rand((9, 31))
    run_and_check(s, [X, out], [x], x.astype("float64").sum(axis=1), k=31)


# --------------------------------------------------------------------- elementwise, broadcast
BCAST_SHAPES = op_cases.BCAST_SHAPES


@pytest.mark.parametrize("shapes", BCAST_SHAPES, ids=lambda s: f"{s[0]}-{s[1]}")
@pytest.mark.parametrize("sched", ["default", "vec_inner", "fuse_par_split"])
@pytest.mark.parametrize("op", ["add", "mul", "max", "sub_div"])
def test_broadcast(llvm_target: Any, op: str, sched: str, shapes: Any) -> None:
    sa, sb = shapes
    fns = op_cases.BCAST_FNS
    A = te.placeholder(sa, name="A")
    B = te.placeholder(sb, name="B")
    out = ops.broadcast_binary(A, B, fns[op][0])
    s = te.create_schedule(out.op)
    axes = out.op.axis
    if sched == "vec_inner":
        o, i = s[out].split(axes[-1], factor=4)
        s[out].vectorize(i)
    elif sched == "fuse_par_split":
        fused = s[out].fuse(*axes)
        fo, fi = s[out].split(fused, factor=5)
        s[out].parallel(fo)
        s[out].unroll(fi)
    a, b = rand(sa), rand(sb)
    run_and_check(s, [A, B, out], [a, b], fns[op][1](a.astype("float64"), b))


@pytest.mark.parametrize("fn", ["exp", "tanh", "sqrt_abs", "sigmoid", "log1p_abs"])
def test_elementwise_math_vectorized(llvm_target: Any, fn: str) -> None:
    fns = op_cases.math_fns()
    X = te.placeholder((3, 37), name="X")
    out = ops.elementwise(X, fns[fn][0])
    s = te.create_schedule(out.op)
    o, i = s[out].split(out.op.axis[1], factor=8)
    s[out].vectorize(i)
    x = rand((3, 37))
    run_and_check(s, [X, out], [x], fns[fn][1](x.astype("float64")))


def test_elementwise_uint8_wraps(llvm_target: Any) -> None:
    A = te.placeholder((50,), "uint8", name="A")
    B = te.placeholder((50,), "uint8", name="B")
    out = ops.broadcast_binary(A, B, lambda a, b: a + b * 3)
    s = te.create_schedule(out.op)
    o, i = s[out].split(out.op.axis[0], factor=16)
    s[out].vectorize(i)
    a = RNG.integers(0, 256, 50).astype("uint8")
    b = RNG.integers(0, 256, 50).astype("uint8")
    run_and_check(s, [A, B, out], [a, b], (a + b * np.uint8(3)).astype("uint8"), exact=True)


@pytest.mark.parametrize("sched", ["default", "vec"])
def test_elementwise_float16(llvm_target: Any, sched: str) -> None:
    A = te.placeholder((4, 24), "float16", name="A")
    B = te.placeholder((24,), "float16", name="B")
    out = ops.broadcast_binary(A, B, lambda a, b: a * b + a)
    s = te.create_schedule(out.op)
    if sched == "vec":
        o, i = s[out].split(out.op.axis[1], factor=8)
        s[out].vectorize(i)
    a, b = rand((4, 24), "float16"), rand((24,), "float16")
    expected = a * b + a  # numpy float16 arithmetic: rounded after each operation
    run_and_check(s, [A, B, out], [a, b], expected, rtol=1e-3, atol=2e-3)


@pytest.mark.parametrize("sched", ["default", "vec"])
def test_bool_mask_select(llvm_target: Any, sched: str) -> None:
    X = te.placeholder((5, 19), name="X")
    M = te.placeholder((5, 19), "bool", name="M")
    out = te.compute((5, 19), lambda i, j: te.if_then_else(M[i, j] & (X[i, j] > 0.0),
                                                           X[i, j] * 2.0, -X[i, j]), name="out")
    mask_out = te.compute((5, 19), lambda i, j: te.select(X[i, j] < 0.25, True, M[i, j]),
                          name="mask_out")
    s = te.create_schedule([out.op, mask_out.op])
    if sched == "vec":
        for t in (out, mask_out):
            o, i = s[t].split(t.op.axis[1], factor=4)
            s[t].vectorize(i)
    x = rand((5, 19))
    m = RNG.integers(0, 2, (5, 19)).astype(bool)
    f = tensorforge.build(s, [X, M, out, mask_out], target="llvm")
    y = np.zeros((5, 19), "float32")
    mo = np.zeros((5, 19), bool)
    f(x, m, y, mo)
    np.testing.assert_array_equal(y, np.where(m & (x > 0), x * 2, -x),
                                  err_msg=str(tensorforge.lower(s, [X, M, out, mask_out])))
    np.testing.assert_array_equal(mo, np.where(x < 0.25, True, m))


# ------------------------------------------------------------------------------- transpose
@pytest.mark.parametrize("perm", [(1, 0, 2), (2, 1, 0), (0, 2, 1), (2, 0, 1)],
                         ids=lambda p: "".join(map(str, p)))
@pytest.mark.parametrize("sched", ["default", "vec_inner", "tile_par", "cache_read"])
def test_transpose(llvm_target: Any, sched: str, perm: tuple[int, ...]) -> None:
    shape = (6, 10, 7)
    X = te.placeholder(shape, name="X")
    out = ops.transpose(X, perm)
    s = te.create_schedule(out.op)
    a0, a1, a2 = out.op.axis
    if sched == "vec_inner":
        o, i = s[out].split(a2, factor=4)
        s[out].vectorize(i)
    elif sched == "tile_par":
        xo, yo, xi, yi = s[out].tile(a1, a2, 3, 4)
        s[out].parallel(a0)
        s[out].unroll(xi)
        s[out].vectorize(yi)
    elif sched == "cache_read":
        XX = s.cache_read(X, "local", [out])
        s[XX].compute_at(s[out], a0)
    x = rand(shape)
    run_and_check(s, [X, out], [x], x.transpose(perm), exact=True)


# regression: ceil_mode added a last window that starts in the trailing padding (all -inf for
# max, a zero count -> NaN for avg); onnxruntime and PyTorch drop it
@pytest.mark.parametrize("h,k,stride,pad,out_size",
                         [(7, 2, 2, 1, 4), (6, 2, 3, 0, 2), (11, 3, 3, 1, 4), (5, 2, 3, 1, 2),
                          (11, 3, 2, 1, 6)])
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_ceil_mode_drops_window_in_padding(llvm_target: Any, kind: str, h: int, k: int,
                                                stride: int, pad: int, out_size: int) -> None:
    X = te.placeholder((1, 2, h, h), name="X")
    if kind == "max":
        out = ops.max_pool2d(X, (k, k), stride, pad, ceil_mode=True)
        expected = ref.max_pool2d
    else:
        out = ops.avg_pool2d(X, (k, k), stride, pad, ceil_mode=True)
        expected = ref.avg_pool2d
    assert tuple(d.value for d in out.shape) == (1, 2, out_size, out_size)
    s = te.create_schedule(out.op)
    x = rand((1, 2, h, h))
    exp = expected(x, (k, k), stride, pad, ceil_mode=True)
    assert exp.shape == (1, 2, out_size, out_size) and np.isfinite(exp).all()
    run_and_check(s, [X, out], [x], exp, k=k * k)


def test_pool_shapes_match_onnxruntime(llvm_target: Any) -> None:
    ort = pytest.importorskip("onnxruntime")
    helper = pytest.importorskip("onnx.helper")
    from onnx import TensorProto

    for op, h, k, stride, pad, cip in [("MaxPool", 7, 2, 2, 1, 0), ("AveragePool", 11, 3, 3, 1, 1),
                                       ("AveragePool", 10, 3, 2, 1, 0)]:
        attrs: dict[str, Any] = dict(kernel_shape=[k, k], strides=[stride, stride],
                                     pads=[pad] * 4, ceil_mode=1)
        if op == "AveragePool":
            attrs["count_include_pad"] = cip
        graph = helper.make_graph(
            [helper.make_node(op, ["x"], ["y"], **attrs)], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, h, h])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
        sess = ort.InferenceSession(model.SerializeToString())
        x = rand((1, 1, h, h))
        want = sess.run(None, {"x": x})[0]
        X = te.placeholder((1, 1, h, h), name="X")
        out = (ops.max_pool2d(X, (k, k), stride, pad, ceil_mode=True) if op == "MaxPool" else
               ops.avg_pool2d(X, (k, k), stride, pad, count_include_pad=bool(cip),
                              ceil_mode=True))
        run_and_check(te.create_schedule(out.op), [X, out], [x], want, k=k * k)


@pytest.mark.parametrize("perm", [(0, 2, 3, 1), (0, 3, 1, 2)], ids=["nchw_nhwc", "nhwc_nchw"])
def test_transpose_4d_layouts(llvm_target: Any, perm: tuple[int, ...]) -> None:
    shape = (2, 5, 6, 7)
    X = te.placeholder(shape, name="X")
    out = ops.transpose(X, perm)
    s = te.create_schedule(out.op)
    a0, a1, a2, a3 = out.op.axis
    s[out].parallel(s[out].fuse(a0, a1))
    o, i = s[out].split(a3, factor=4)
    s[out].vectorize(i)
    x = rand(shape)
    run_and_check(s, [X, out], [x], x.transpose(perm), exact=True)
