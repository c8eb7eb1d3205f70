"""The operator cases every target must compute right: shapes, numpy references, tolerances.

The cases and tolerances of the llvm target's op tests (`test_ops_numpy.py`), without their
CPU schedules: `TargetConformance` schedules each with the target's strategy for the op (if it
registers one) and with core's generic schedule for the target.

Tolerances: float32 results `rtol=1e-5`, `atol=max(1e-5, 1e-6 * K)` with K the length of the
reduction behind one output element; references in float64. Integer and bool results
(int8 -> int32 matmul, uint8, masks, max pooling, transposes) exact. float16 elementwise
`rtol=1e-3`, `atol=2e-3` (a device without half arithmetic rounds once, at the store).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["CASES", "Built", "OpCase"]


@dataclass
class Built:
    """What a case builds: TE arguments (outputs last), input arrays, expected outputs."""

    args: list[Any]
    inputs: list[np.ndarray]
    expected: list[np.ndarray]
    k: int = 1
    exact: bool = False
    rtol: float = 1e-5
    atol: float | None = None

    @property
    def outputs(self) -> list[Any]:
        return self.args[len(self.inputs):]

    def tolerance(self) -> tuple[float, float]:
        return self.rtol, max(1e-5, 1e-6 * self.k) if self.atol is None else self.atol


@dataclass(frozen=True)
class OpCase:
    """`build(rng)` makes the case; `op` names the graph op whose strategy schedules it."""

    name: str
    op: str
    build: Callable[[np.random.Generator], Built]

    def __str__(self) -> str:
        return self.name


def rand(rng: np.random.Generator, shape: tuple[int, ...], dtype: str = "float32"
         ) -> np.ndarray:
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return rng.integers(lo, hi + 1, size=shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, size=shape).astype(dtype)


def _te() -> Any:
    from tensorforge import ops, te

    return te, ops


# ---------------------------------------------------------------------------- matmul, dense
def _matmul(m: int, n: int, k: int) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        A = te.placeholder((m, k), name="A")
        B = te.placeholder((k, n), name="B")
        a, b = rand(rng, (m, k)), rand(rng, (k, n))
        return Built([A, B, ops.matmul(A, B)], [a, b], [a.astype("float64") @ b], k=k)
    return build


def _dense(rng: np.random.Generator) -> Built:
    te, ops = _te()
    A = te.placeholder((9, 20), name="A")
    W = te.placeholder((13, 20), name="W")
    a, w = rand(rng, (9, 20)), rand(rng, (13, 20))
    return Built([A, W, ops.dense(A, W)], [a, w], [a.astype("float64") @ w.T], k=20)


def _dense_gemv(rng: np.random.Generator) -> Built:
    te, ops = _te()
    A = te.placeholder((1, 300), name="A")
    W = te.placeholder((70, 300), name="W")
    a, w = rand(rng, (1, 300)), rand(rng, (70, 300))
    return Built([A, W, ops.dense(A, W)], [a, w], [a.astype("float64") @ w.T], k=300)


def _matmul_int(dtype: str) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        m, n, k = (16, 24, 40) if dtype == "int8" else (8, 16, 33)
        A = te.placeholder((m, k), dtype, name="A")
        B = te.placeholder((k, n), dtype, name="B")
        if dtype == "int8":
            a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
        else:
            a = rng.integers(0, 256, size=(m, k)).astype(dtype)
            b = rng.integers(0, 256, size=(k, n)).astype(dtype)
        return Built([A, B, ops.matmul(A, B, out_dtype="int32")], [a, b],
                     [a.astype("int32") @ b.astype("int32")], exact=True)
    return build


# ---------------------------------------------------------------------------------- conv2d
# (N, C, H, W, O, K, stride, padding, dilation, groups)
CONV_CASES = {
    "basic": (1, 4, 10, 10, 8, 3, 1, 1, 1, 1),
    "odd_ch_stride2": (2, 3, 11, 14, 5, 3, 2, 1, 1, 1),
    "pad_hw_1_2": (1, 3, 9, 10, 4, 3, 1, (1, 2), 1, 1),
    "pad_asym": (1, 3, 9, 10, 4, 3, 1, (0, 1, 2, 1), 1, 1),
    "dilation2": (1, 4, 12, 12, 6, 3, 1, 2, 2, 1),
    "groups2": (1, 6, 8, 9, 4, 3, 1, 1, 1, 2),
    "groups4_stride2": (1, 8, 10, 10, 8, 3, 2, 1, 1, 4),
    "nopad_1x1": (1, 5, 7, 7, 6, 1, 1, 0, 1, 1),
}


def _conv(case: str) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        n, c, h, w, o, k, stride, pad, dil, groups = CONV_CASES[case]
        X = te.placeholder((n, c, h, w), name="X")
        W = te.placeholder((o, c // groups, k, k), name="W")
        x, wt = rand(rng, (n, c, h, w)), rand(rng, (o, c // groups, k, k))
        exp = ref.conv2d_nchw(x.astype("float64"), wt.astype("float64"), stride, pad, dil,
                              groups)
        return Built([X, W, ops.conv2d_nchw(X, W, stride, pad, dil, groups)], [x, wt], [exp],
                     k=c // groups * k * k)
    return build


def _conv_nhwc(case: str) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        n, c, h, w, o, k, stride, pad, dil, _ = CONV_CASES[case]
        X = te.placeholder((n, h, w, c), name="X")
        W = te.placeholder((k, k, c, o), name="W")
        x, wt = rand(rng, (n, h, w, c)), rand(rng, (k, k, c, o))
        exp = ref.conv2d_nhwc(x.astype("float64"), wt.astype("float64"), stride, pad, dil)
        return Built([X, W, ops.conv2d_nhwc(X, W, stride, pad, dil)], [x, wt], [exp],
                     k=c * k * k)
    return build


def _depthwise(cfg: tuple[Any, ...]) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        mult, stride, pad, dil = cfg
        c, h, w = 5, 11, 13
        X = te.placeholder((1, c, h, w), name="X")
        W = te.placeholder((c * mult, 1, 3, 3), name="W")
        x, wt = rand(rng, (1, c, h, w)), rand(rng, (c * mult, 1, 3, 3))
        exp = ref.depthwise_conv2d_nchw(x.astype("float64"), wt.astype("float64"), stride,
                                        pad, dil)
        return Built([X, W, ops.depthwise_conv2d_nchw(X, W, stride, pad, dil)], [x, wt],
                     [exp], k=9)
    return build


# --------------------------------------------------------------------------------- pooling
POOL_CASES = {
    "k2s2": ((2, 2), 2, 0, False),
    "k3s1p1": ((3, 3), 1, 1, False),
    "k3s2p1_ceil": ((3, 3), 2, 1, True),
    "k3s2_asym": ((3, 2), (2, 1), (1, 0, 0, 1), False),
}


def _max_pool(case: str) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        kernel, stride, pad, ceil = POOL_CASES[case]
        X = te.placeholder((2, 3, 11, 12), name="X")
        x = rand(rng, (2, 3, 11, 12))
        return Built([X, ops.max_pool2d(X, kernel, stride, pad, ceil_mode=ceil)], [x],
                     [ref.max_pool2d(x, kernel, stride, pad, ceil)], exact=True)
    return build


def _avg_pool(case: str, include_pad: bool) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        kernel, stride, pad, ceil = POOL_CASES[case]
        X = te.placeholder((1, 4, 10, 13), name="X")
        x = rand(rng, (1, 4, 10, 13))
        out = ops.avg_pool2d(X, kernel, stride, pad, count_include_pad=include_pad,
                             ceil_mode=ceil)
        exp = ref.avg_pool2d(x.astype("float64"), kernel, stride, pad, include_pad, ceil)
        return Built([X, out], [x], [exp], k=9)
    return build


def _global_avg_pool(rng: np.random.Generator) -> Built:
    te, ops = _te()
    X = te.placeholder((2, 5, 7, 9), name="X")
    x = rand(rng, (2, 5, 7, 9))
    return Built([X, ops.global_avg_pool2d(X)], [x],
                 [x.astype("float64").mean(axis=(2, 3), keepdims=True)], k=63)


def _pool_ceil(kind: str, h: int, k: int, stride: int, pad: int
               ) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        X = te.placeholder((1, 2, h, h), name="X")
        x = rand(rng, (1, 2, h, h))
        if kind == "max":
            out = ops.max_pool2d(X, (k, k), stride, pad, ceil_mode=True)
            exp = ref.max_pool2d(x, (k, k), stride, pad, ceil_mode=True)
        else:
            out = ops.avg_pool2d(X, (k, k), stride, pad, ceil_mode=True)
            exp = ref.avg_pool2d(x, (k, k), stride, pad, ceil_mode=True)
        return Built([X, out], [x], [exp], k=k * k)
    return build


# ------------------------------------------------------------------- softmax, reductions
def _softmax(axis: int) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops import reference as ref

        te, ops = _te()
        X = te.placeholder((6, 13, 9), name="X")
        x = rand(rng, (6, 13, 9))
        return Built([X, ops.softmax(X, axis=axis)], [x],
                     [ref.softmax(x.astype("float64"), axis=axis)], k=13)
    return build


def _softmax_rows(rng: np.random.Generator) -> Built:
    """A classifier's softmax: few rows, long ones (the cross-thread reduction)."""
    from tensorforge.ops import reference as ref

    te, ops = _te()
    X = te.placeholder((2, 1000), name="X")
    x = rand(rng, (2, 1000)) * 4
    return Built([X, ops.softmax(X, axis=-1)], [x], [ref.softmax(x.astype("float64"))],
                 k=1000)


def _reduce(kind: str, axes: Any, keepdims: bool) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        shape = (5, 7, 6)
        X = te.placeholder(shape, name="X")
        x = rand(rng, shape)
        fn = {"sum": np.sum, "max": np.max, "min": np.min, "mean": np.mean}[kind]
        exp = np.asarray(fn(x.astype("float64"), axis=axes, keepdims=keepdims))
        klen = int(np.prod([shape[a] for a in (axes if axes is not None else range(3))]))
        return Built([X, ops.reduce(X, axes, kind, keepdims)], [x], [exp], k=klen)
    return build


def _reduce_long(rng: np.random.Generator) -> Built:
    te, ops = _te()
    X = te.placeholder((3, 4099), name="X")
    x = rand(rng, (3, 4099))
    return Built([X, ops.reduce(X, (1,), "sum")], [x], [x.astype("float64").sum(axis=1)],
                 k=4099)


# ------------------------------------------------------------ elementwise, broadcast, misc
BCAST_SHAPES = [((4, 1, 6), (5, 1)), ((7,), (3, 7)), ((2, 3, 1), (1, 1, 9)), ((13,), (13,))]
#: binary functions: (TE expression, numpy reference)
BCAST_FNS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (lambda a, b: a + b, np.add),
    "mul": (lambda a, b: a * b, np.multiply),
    "max": (lambda a, b: _te()[0].max_expr(a, b), np.maximum),
    "sub_div": (lambda a, b: (a - b) / (b * b + 1.0), lambda a, b: (a - b) / (b * b + 1)),
}


def math_fns() -> dict[str, tuple[Callable[..., Any], Callable[..., Any]]]:
    """Unary math: (TE expression, numpy reference) by name."""
    te, _ = _te()
    return {
        "exp": (te.exp, np.exp),
        "tanh": (te.tanh, np.tanh),
        "sqrt_abs": (lambda x: te.sqrt(te.abs(x)), lambda x: np.sqrt(np.abs(x))),
        "sigmoid": (te.sigmoid, lambda x: 1 / (1 + np.exp(-x))),
        "log1p_abs": (lambda x: te.log(te.abs(x) + 1.0), lambda x: np.log(np.abs(x) + 1)),
    }


def _broadcast(op: str, shapes: Any) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        sa, sb = shapes
        A = te.placeholder(sa, name="A")
        B = te.placeholder(sb, name="B")
        a, b = rand(rng, sa), rand(rng, sb)
        return Built([A, B, ops.broadcast_binary(A, B, BCAST_FNS[op][0])], [a, b],
                     [BCAST_FNS[op][1](a.astype("float64"), b)])
    return build


def _math(fn: str) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        fns = math_fns()
        X = te.placeholder((3, 37), name="X")
        x = rand(rng, (3, 37))
        return Built([X, ops.elementwise(X, fns[fn][0])], [x], [fns[fn][1](x.astype("float64"))])
    return build


def _erf(x: np.ndarray) -> np.ndarray:
    import math

    return np.vectorize(math.erf)(x)


#: every unary math intrinsic of `te` (`te.intrin.UNARY_MATH`): (input map into its domain,
#: numpy reference); the rounding ones see exact halves (ties go to even)
INTRIN_REFS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], Callable[..., Any]]] = {
    "exp": (lambda x: x * 3, np.exp), "exp2": (lambda x: x * 3, np.exp2),
    "log": (lambda x: np.abs(x) + 0.1, np.log), "log2": (lambda x: np.abs(x) + 0.1, np.log2),
    "sqrt": (np.abs, np.sqrt), "rsqrt": (lambda x: np.abs(x) + 0.1, lambda x: 1 / np.sqrt(x)),
    "tanh": (lambda x: x * 4, np.tanh),
    "sigmoid": (lambda x: x * 6, lambda x: 1 / (1 + np.exp(-x))),
    "erf": (lambda x: x * 2, _erf), "floor": (lambda x: np.round(x * 8) / 2, np.floor),
    "ceil": (lambda x: np.round(x * 8) / 2, np.ceil),
    "round": (lambda x: np.round(x * 8) / 2, np.round),
    "trunc": (lambda x: np.round(x * 8) / 2, np.trunc), "sin": (lambda x: x * 3, np.sin),
    "cos": (lambda x: x * 3, np.cos), "tan": (lambda x: x * 1.2, np.tan),
    "asin": (lambda x: x * 0.95, np.arcsin), "acos": (lambda x: x * 0.95, np.arccos),
    "atan": (lambda x: x * 5, np.arctan), "sinh": (lambda x: x * 3, np.sinh),
    "cosh": (lambda x: x * 3, np.cosh), "asinh": (lambda x: x * 5, np.arcsinh),
    "acosh": (lambda x: np.abs(x) * 5 + 1, np.arccosh),
    "atanh": (lambda x: x * 0.95, np.arctanh), "log1p": (lambda x: np.abs(x) * 3, np.log1p),
    "expm1": (lambda x: x * 2, np.expm1),
}


def _intrin(fn: str) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        domain, ref = INTRIN_REFS[fn]
        X = te.placeholder((3, 37), name="X")
        x = domain(rand(rng, (3, 37))).astype("float32")
        return Built([X, ops.elementwise(X, getattr(te, fn))], [x], [ref(x.astype("float64"))])
    return build


def _bit_ops(dtype: str) -> Callable[[np.random.Generator], Built]:
    """Bit operations on nested operands (operator precedence in C-like printers) and narrow
    arithmetic that wraps before it is shifted (C computes narrow integers in int). int32 and
    int64 operands stay in half their range (their overflow is undefined in C)."""
    def build(rng: np.random.Generator) -> Built:
        te, _ = _te()
        n, info = 40, np.iinfo(dtype)
        lo, hi = (int(info.min), int(info.max)) if info.bits < 32 else (
            int(info.min) // 2, int(info.max) // 2)
        A = te.placeholder((n,), dtype, name="A")
        B = te.placeholder((n,), dtype, name="B")
        a = rng.integers(lo, hi + 1, n).astype(dtype)
        b = rng.integers(lo, hi + 1, n).astype(dtype)
        c = {k: te.const(k, dtype) for k in (3, 15, info.bits - 1)}

        def f(i: Any) -> Any:
            return te.bitwise_xor(
                te.shift_right(A[i] + B[i], te.bitwise_and(B[i], c[info.bits - 1])),
                te.bitwise_or(te.shift_left(te.bitwise_and(A[i], c[15]),
                                            te.bitwise_and(B[i], c[3])),
                              te.bitwise_and(A[i], B[i])))
        out = te.compute((n,), f, name="bits")
        k = {v: np.array(v, dtype) for v in (3, 15, info.bits - 1)}
        with np.errstate(over="ignore"):
            want = ((a + b) >> (b & k[info.bits - 1])) ^ (((a & k[15]) << (b & k[3])) | (a & b))
        return Built([A, B, out], [a, b], [want.astype(dtype)], exact=True)
    return build


def _int_pow(dtype: str) -> Callable[[np.random.Generator], Built]:
    """Integer Pow (a let-bound chain of squares, wrapping like numpy; negative exponents)."""
    def build(rng: np.random.Generator) -> Built:
        from tensorforge.ops.arith import int_pow, int_pow_np

        te, _ = _te()
        X = te.placeholder((40,), dtype, name="X")
        E = te.placeholder((40,), dtype, name="E")
        x = rng.integers(-6, 7, 40).astype(dtype)
        e = rng.integers(-2, 40, 40).astype(dtype)
        out = te.compute((40,), lambda i: int_pow(X[i], E[i]), name="pow")
        return Built([X, E, out], [x, e], [int_pow_np(x, e)], exact=True)
    return build


def _reinterpret(rng: np.random.Generator) -> Built:
    te, _ = _te()
    X = te.placeholder((30,), name="X")
    x = (rand(rng, (30,)) * 100).astype("float32")
    bits = te.compute((30,), lambda i: te.reinterpret(X[i], "int32") + 1, name="bits")
    back = te.compute((30,), lambda i: te.reinterpret(bits[i] - 1, "float32"), name="back")
    return Built([X, bits, back], [x], [x.view("int32") + 1, x], exact=True)


def _uint8_wraps(rng: np.random.Generator) -> Built:
    te, ops = _te()
    A = te.placeholder((50,), "uint8", name="A")
    B = te.placeholder((50,), "uint8", name="B")
    a = rng.integers(0, 256, 50).astype("uint8")
    b = rng.integers(0, 256, 50).astype("uint8")
    return Built([A, B, ops.broadcast_binary(A, B, lambda x, y: x + y * 3)], [a, b],
                 [(a + b * np.uint8(3)).astype("uint8")], exact=True)


def _float16(rng: np.random.Generator) -> Built:
    te, ops = _te()
    A = te.placeholder((4, 24), "float16", name="A")
    B = te.placeholder((24,), "float16", name="B")
    a, b = rand(rng, (4, 24), "float16"), rand(rng, (24,), "float16")
    return Built([A, B, ops.broadcast_binary(A, B, lambda x, y: x * y + x)], [a, b],
                 [a * b + a], rtol=1e-3, atol=2e-3)


def _bool_mask(rng: np.random.Generator) -> Built:
    te, _ = _te()
    X = te.placeholder((5, 19), name="X")
    M = te.placeholder((5, 19), "bool", name="M")
    out = te.compute((5, 19), lambda i, j: te.if_then_else(M[i, j] & (X[i, j] > 0.0),
                                                           X[i, j] * 2.0, -X[i, j]), name="out")
    mask = te.compute((5, 19), lambda i, j: te.select(X[i, j] < 0.25, True, M[i, j]),
                      name="mask_out")
    x = rand(rng, (5, 19))
    m = rng.integers(0, 2, (5, 19)).astype(bool)
    return Built([X, M, out, mask], [x, m],
                 [np.where(m & (x > 0), x * 2, -x), np.where(x < 0.25, True, m)], exact=True)


def _transpose(perm: tuple[int, ...]) -> Callable[[np.random.Generator], Built]:
    def build(rng: np.random.Generator) -> Built:
        te, ops = _te()
        shape = (6, 10, 7) if len(perm) == 3 else (2, 5, 6, 7)
        X = te.placeholder(shape, name="X")
        x = rand(rng, shape)
        return Built([X, ops.transpose(X, perm)], [x], [x.transpose(perm)], exact=True)
    return build


def _cases() -> list[OpCase]:
    out = [OpCase(f"matmul_{m}x{n}x{k}", "matmul", _matmul(m, n, k))
           for m, n, k in [(32, 32, 32), (10, 14, 17), (1, 7, 3), (64, 96, 80)]]
    out += [OpCase("dense", "dense", _dense), OpCase("dense_gemv", "dense", _dense_gemv),
            OpCase("matmul_int8_int32", "matmul", _matmul_int("int8")),
            OpCase("matmul_uint8_int32", "matmul", _matmul_int("uint8"))]
    out += [OpCase(f"conv2d_{c}", "conv2d", _conv(c)) for c in CONV_CASES]
    out += [OpCase(f"conv2d_nhwc_{c}", "conv2d_nhwc", _conv_nhwc(c))
            for c in ("basic", "odd_ch_stride2", "pad_asym", "dilation2")]
    out += [OpCase(f"depthwise_{name}", "conv2d", _depthwise(cfg)) for name, cfg in
            zip(["m1", "m2_s2_p1", "pad12_dil2", "m1_s2"],
                [(1, 1, 0, 1), (2, 2, 1, 1), (1, 1, (1, 2), 2), (1, 2, 1, 1)])]
    out += [OpCase(f"max_pool_{c}", "max_pool2d", _max_pool(c)) for c in POOL_CASES]
    out += [OpCase(f"avg_pool_{c}_{'incl' if p else 'excl'}", "avg_pool2d", _avg_pool(c, p))
            for c in POOL_CASES for p in (False, True)]
    out += [OpCase("global_avg_pool", "global_avg_pool2d", _global_avg_pool)]
    out += [OpCase(f"pool_ceil_{kind}_{h}_{k}_{s}_{p}", f"{kind}_pool2d",
                   _pool_ceil(kind, h, k, s, p))
            for kind in ("max", "avg") for h, k, s, p in
            [(7, 2, 2, 1), (6, 2, 3, 0), (11, 3, 3, 1), (5, 2, 3, 1), (11, 3, 2, 1)]]
    out += [OpCase(f"softmax_axis{a}", "softmax", _softmax(a)) for a in (-1, 0, 1)]
    out += [OpCase("softmax_1000", "softmax", _softmax_rows)]
    for kind in ("sum", "max", "min", "mean"):
        for axes in [(0,), (1,), (2,), (-1,), (0, 2), (1, 2), (0, 1, 2), None]:
            for keep in (False, True):
                ax = "all" if axes is None else "_".join(map(str, axes))
                out.append(OpCase(f"reduce_{kind}_{ax}{'_keep' if keep else ''}",
                                  f"reduce_{kind}", _reduce(kind, axes, keep)))
    out += [OpCase("reduce_sum_4099", "reduce_sum", _reduce_long)]
    out += [OpCase(f"broadcast_{op}_{i}", op, _broadcast(op, sh))
            for op in BCAST_FNS for i, sh in enumerate(BCAST_SHAPES)]
    out += [OpCase(f"math_{fn}", fn, _math(fn))
            for fn in ("exp", "tanh", "sqrt_abs", "sigmoid", "log1p_abs")]
    out += [OpCase(f"intrin_{fn}", fn, _intrin(fn)) for fn in INTRIN_REFS]
    out += [OpCase(f"bit_ops_{t}", "bitwise_and", _bit_ops(t))
            for t in ("int32", "uint8", "int16", "int64")]
    out += [OpCase("reinterpret", "bitcast", _reinterpret)]
    out += [OpCase(f"int_pow_{t}", "pow", _int_pow(t)) for t in ("int32", "int64")]
    out += [OpCase("uint8_wraps", "add", _uint8_wraps), OpCase("float16", "add", _float16),
            OpCase("bool_mask_select", "where", _bool_mask)]
    out += [OpCase(f"transpose_{''.join(map(str, p))}", "transpose", _transpose(p))
            for p in [(1, 0, 2), (2, 1, 0), (0, 2, 1), (2, 0, 1), (0, 2, 3, 1), (0, 3, 1, 2)]]
    return out


CASES: list[OpCase] = _cases()
