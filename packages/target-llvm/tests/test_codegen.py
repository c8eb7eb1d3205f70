"""LLVM codegen: loops, vectors, reductions, casts, integer semantics, allocations, errors."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tensorforge.errors import TensorforgeError
from tensorforge.expr import (
    Broadcast,
    Buffer,
    BufferLoad,
    Cast,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Max,
    Min,
    Select,
    Var,
)
from tensorforge.tir import Allocate, AssertStmt, BufferStore, PrimFunc, seq

sys.path.insert(0, str(Path(__file__).parent))
from test_codegen_support import (  # noqa: E402
    buf,
    compile1,
    elementwise,
    load,
    loop,
    ramp,
    store,
)


def test_elementwise_add_mul_scalar_loop():
    n = 1000
    f = elementwise("addmul", n, lambda a, b: a * b + a, n_in=2)
    mod = compile1(f)
    a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
    y = np.zeros(n, "float32")
    mod(a, b, y)
    np.testing.assert_allclose(y, a * b + a, rtol=1e-6)
    mod["addmul"](a, b, y)
    mod.get_function("addmul")(a, b, y)
    assert mod.entry_name == "addmul"


def test_vector_contiguous_and_strided_loads():
    n, lanes = 256, 8
    A, B, C = buf("A", n, "float32"), buf("B", 2 * n, "float32"), buf("C", n, "float32")
    i = Var("i")
    idx = ramp(i * lanes, lanes)
    strided = load(B, ramp(i * (2 * lanes) + 1, lanes, stride=2))  # B[2*j + 1]
    value = load(A, idx) * Broadcast(FloatImm(2.0), lanes) + strided
    f = PrimFunc("vec", (A, B, C), loop(i, n // lanes, store(C, value, idx)))
    a = np.random.rand(n).astype("float32")
    b = np.random.rand(2 * n).astype("float32")
    c = np.zeros(n, "float32")
    compile1(f)(a, b, c)
    np.testing.assert_allclose(c, a * 2 + b[1::2], rtol=1e-6)


def test_vector_scatter_store_and_broadcast_scalar():
    n, lanes = 64, 4
    A, C = buf("A", n), buf("C", n)
    s = Var("s", "float32")
    i = Var("i")
    # C[4*i + k*... ] transposed: C[k * 16 + i] = A[4*i + k] + s
    value = load(A, ramp(i * lanes, lanes)) + Broadcast(s, lanes)
    f = PrimFunc("scatter", (A, C, s), loop(i, n // lanes, store(C, value, ramp(i, lanes, 16))))
    a = np.random.rand(n).astype("float32")
    c = np.zeros(n, "float32")
    compile1(f)(a, c, 1.5)
    np.testing.assert_allclose(c, a.reshape(16, 4).T.reshape(-1) + 1.5, rtol=1e-6)


def test_reduction_with_local_accumulator():
    n, m = 16, 100
    A, S = buf("A", n * m), buf("S", n)
    acc = Buffer("acc", (1,), "float32", "local")
    i, k = Var("i"), Var("k")
    zero = IntImm(0)
    body = Allocate(acc, seq(
        store(acc, FloatImm(0.0), zero),
        loop(k, m, store(acc, load(acc, zero) + load(A, i * m + k), zero)),
        store(S, load(acc, zero), i),
    ))
    f = PrimFunc("rowsum", (A, S), loop(i, n, body))
    a = np.random.rand(n * m).astype("float32")
    s = np.zeros(n, "float32")
    compile1(f)(a, s)
    np.testing.assert_allclose(s, a.reshape(n, m).sum(1), rtol=1e-5)


def test_large_allocation_uses_heap():
    n = 40000  # 160 KB of float32: over the stack limit
    A, C = buf("A", n), buf("C", n)
    tmp = Buffer("tmp", (n,), "float32", "global")
    i, j = Var("i"), Var("j")
    body = Allocate(tmp, seq(
        loop(i, n, store(tmp, load(A, i) * FloatImm(3.0), i)),
        loop(j, n, store(C, load(tmp, IntImm(n - 1) - j), j)),
    ))
    f = PrimFunc("heap", (A, C), body)
    mod = compile1(f)
    assert "aligned_alloc" in mod.get_source("ll-raw")
    a = np.random.rand(n).astype("float32")
    c = np.zeros(n, "float32")
    mod(a, c)
    np.testing.assert_allclose(c, (a * 3)[::-1], rtol=1e-6)


DTYPES = ["float32", "float16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("src", DTYPES)
def test_casts_match_numpy_astype(src):
    rng = np.random.default_rng(0)
    if src == "bool":
        x = rng.random(64) > 0.5
    elif src.startswith("float"):
        x = np.concatenate([rng.uniform(-200, 300, 60), [0.0, -0.0, 0.5, -0.7]]).astype(src)
    else:
        info = np.iinfo(src)
        x = rng.integers(info.min, info.max, 64, dtype=src, endpoint=True)
    funcs = []
    for dst in DTYPES:
        f = elementwise(f"cast_{src}_{dst}", 64, lambda v, dst=dst: Cast(dst, v),
                        in_dtype=src, out_dtype=dst)
        funcs.append(f)
    from test_codegen_support import target

    from tensorforge_llvm.codegen import build

    mod = build(funcs, target())
    for dst in DTYPES:
        if src.startswith("float") and dst in ("int32", "int64") and float(np.abs(x).max()) > 2**31:
            continue
        y = np.zeros(64, dst)
        mod[f"cast_{src}_{dst}"](x, y)
        with np.errstate(over="ignore"):
            ref = x.astype(dst)
        np.testing.assert_array_equal(y, ref, err_msg=f"{src} -> {dst}")


def test_floordiv_floormod_negative_python_semantics():
    vals = np.array([-7, -6, -1, 0, 1, 5, 7, -9, 9, 3, -3, 8], "int32")
    divs = np.array([2, -2, 3, -3, 4, -4, 1, -1, 5, -5, 3, -3], "int32")
    for cls, ref in ((FloorDiv, np.floor_divide), (FloorMod, np.mod)):
        f = elementwise(f"f_{cls.__name__}", len(vals), lambda a, b, cls=cls: cls(a, b),
                        in_dtype="int32", n_in=2)
        y = np.zeros(len(vals), "int32")
        compile1(f)(vals, divs, y)
        np.testing.assert_array_equal(y, ref(vals, divs))
        assert list(y) == [(a // b if cls is FloorDiv else a % b)
                           for a, b in zip(vals.tolist(), divs.tolist())]


def test_truncating_div_mod_and_float_floor_ops():
    from tensorforge.expr import Div, Mod

    a = np.array([-7, 7, -7, 7], "int32")
    b = np.array([2, 2, -2, -2], "int32")
    for cls, ref in ((Div, lambda x, y: np.trunc(x / y)), (Mod, np.fmod)):
        f = elementwise(f"t_{cls.__name__}", 4, lambda x, y, cls=cls: cls(x, y), "int32", n_in=2)
        y = np.zeros(4, "int32")
        compile1(f)(a, b, y)
        np.testing.assert_array_equal(y, ref(a, b).astype("int32"))
    fa, fb = a.astype("float32"), b.astype("float32") * 1.5
    for cls, ref in ((FloorDiv, np.floor_divide), (FloorMod, np.mod)):
        f = elementwise(f"ff_{cls.__name__}", 4, lambda x, y, cls=cls: cls(x, y), n_in=2)
        y = np.zeros(4, "float32")
        compile1(f)(fa, fb, y)
        np.testing.assert_allclose(y, ref(fa, fb), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_integer_arithmetic_wraps_like_numpy(dtype):
    rng = np.random.default_rng(1)
    info = np.iinfo(dtype)
    n = 128
    a = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    b = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)

    def fn(x, y):
        return Max(Min(x * y + x - y, x + y), x * IntImm(3, dtype))

    f = elementwise(f"arith_{dtype}", n, fn, dtype, n_in=2)
    out = np.zeros(n, dtype)
    compile1(f)(a, b, out)
    with np.errstate(over="ignore"):
        ref = np.maximum(np.minimum(a * b + a - b, a + b), a * np.array(3, dtype))
    np.testing.assert_array_equal(out, ref)


def test_select_and_compare_vector():
    n, lanes = 64, 8
    A, C = buf("A", n), buf("C", n)
    i = Var("i")
    idx = ramp(i * lanes, lanes)
    x = load(A, idx)
    zero = Broadcast(FloatImm(0.0), lanes)
    f = PrimFunc("relu", (A, C), loop(i, n // lanes, store(C, Select(x > zero, x, zero), idx)))
    a = np.random.randn(n).astype("float32")
    c = np.zeros(n, "float32")
    compile1(f)(a, c)
    np.testing.assert_array_equal(c, np.maximum(a, 0))


def test_bool_buffers_and_scalar_params():
    n = 32
    A, M = buf("A", n, "int32"), buf("M", n, "bool")
    t = Var("t", "int32")
    flip = Var("flip", "bool")
    i = Var("i")
    from tensorforge.expr import Not

    value = Select(flip, Not(load(A, i) > t), load(A, i) > t)
    f = PrimFunc("mask", (A, M, t, flip), loop(i, n, store(M, value, i)))
    a = np.arange(n, dtype="int32")
    m = np.zeros(n, bool)
    mod = compile1(f)
    mod(a, m, 10, False)
    np.testing.assert_array_equal(m, a > 10)
    mod(a, m, 10, True)
    np.testing.assert_array_equal(m, ~(a > 10))


def test_assert_failure_raises_with_message():
    n = Var("n", "int32")
    A = buf("A", 4)
    body = AssertStmt(n < IntImm(4), "n must be below 4", store(A, FloatImm(1.0), n))
    mod = compile1(PrimFunc("guarded", (A, n), body))
    a = np.zeros(4, "float32")
    mod(a, 2)
    assert a[2] == 1.0
    with pytest.raises(TensorforgeError, match="n must be below 4"):
        mod(a, 7)


def test_unflattened_access_is_reported_as_compiler_bug():
    A = Buffer("A", (4, 4), "float32")
    i = Var("i")
    bad = PrimFunc("bad", (A,), loop(i, 4, BufferStore(A, FloatImm(0.0), (i, i))))
    with pytest.raises(TensorforgeError, match="'bad'.*2 indices.*flattened.*compiler bug"):
        compile1(bad)


def test_undefined_variable_and_unknown_call_are_compiler_bugs():
    from tensorforge.expr import Call

    A = buf("A", 4)
    i, ghost = Var("i"), Var("ghost")
    with pytest.raises(TensorforgeError, match="'ghost'.*compiler bug"):
        compile1(PrimFunc("ghosty", (A,), loop(i, 4, store(A, FloatImm(0.0), ghost))))
    with pytest.raises(TensorforgeError, match="unknown intrinsic 'frobnicate'"):
        compile1(PrimFunc("frob", (A,), loop(i, 4, store(
            A, Call("float32", "frobnicate", (load(A, i),)), i))))


def test_several_functions_one_module_and_sources():
    f1 = elementwise("double_it", 16, lambda x: x * FloatImm(2.0))
    f2 = elementwise("plus_one", 16, lambda x: x + FloatImm(1.0))
    from test_codegen_support import target

    from tensorforge_llvm.codegen import build

    mod = build([f1, f2], target())
    x = np.arange(16, dtype="float32")
    y = np.zeros(16, "float32")
    mod(x, y)  # the first function is the entry
    np.testing.assert_array_equal(y, x * 2)
    mod["plus_one"](x, y)
    np.testing.assert_array_equal(y, x + 1)
    assert "define" in mod.get_source("ll") and "plus_one" in mod.get_source("asm")
    with pytest.raises(TensorforgeError, match="no function 'nope'.*double_it"):
        mod["nope"]


def test_build_time_small_and_loop_nest():
    """A small kernel builds in well under 0.3 s (tuning builds thousands)."""
    f = elementwise("quick", 1024, lambda a, b: a * b + a, n_in=2)
    compile1(f)  # warm up LLVM
    t0 = time.perf_counter()
    compile1(f)
    small = time.perf_counter() - t0
    assert small < 0.3, small


def test_cfunction_argument_errors():
    f = elementwise("chk", 8, lambda a, b: a + b, n_in=2)
    mod = compile1(f)
    a = np.zeros(8, "float32")
    with pytest.raises(TensorforgeError, match=r"takes 3 arguments, got 2"):
        mod(a, a)
    with pytest.raises(TensorforgeError, match=r"argument 1 \(X1: float32\[8\]\) expects dtype "
                                               r"float32, got float64.*astype"):
        mod(a, np.zeros(8), a.copy())
    with pytest.raises(TensorforgeError, match=r"expects shape \(8,\), got \(9,\)"):
        mod(a, np.zeros(9, "float32"), a.copy())
    with pytest.raises(TensorforgeError, match="not C-contiguous.*ascontiguousarray"):
        mod(a, np.zeros(16, "float32")[::2], a.copy())
    with pytest.raises(TensorforgeError, match="expects a numpy array, got list"):
        mod(a, [0.0] * 8, a.copy())
    ro = np.zeros(8, "float32")
    ro.flags.writeable = False
    with pytest.raises(TensorforgeError, match="read-only"):
        mod(a, a.copy(), ro)
    with pytest.raises(TensorforgeError, match="same array"):
        mod(a, a.copy(), a)


def test_symbolic_shape_checked_against_scalar():
    n = Var("n", "int32")
    A = Buffer("A", (n,), "float32")
    B = Buffer("B", (n,), "float32")
    i = Var("i")
    f = PrimFunc("sym", (A, B, n), loop(i, n, store(B, load(A, i) + FloatImm(1.0), i)))
    mod = compile1(f)
    a = np.arange(10, dtype="float32")
    b = np.zeros(10, "float32")
    mod(a, b, 10)
    np.testing.assert_array_equal(b, a + 1)
    with pytest.raises(TensorforgeError, match="size 'n'"):
        mod(a, b, 12)
    with pytest.raises(TensorforgeError, match="does not fit in int32"):
        mod(a, b, 2**40)


def test_unrolled_and_vectorized_kinds():
    A, C = buf("A", 64), buf("C", 64)
    i, j = Var("i"), Var("j")
    body = loop(i, 16, loop(j, 4, store(C, load(A, i * 4 + j) + FloatImm(1.0), i * 4 + j),
                            kind="unrolled"), kind="vectorized")
    a = np.random.rand(64).astype("float32")
    c = np.zeros(64, "float32")
    compile1(PrimFunc("unr", (A, C), body))(a, c)
    np.testing.assert_allclose(c, a + 1)


def test_int64_loop_and_index():
    A = buf("A", 100, "int64")
    i = Var("i", "int64")
    f = PrimFunc("i64", (A,), loop(i, IntImm(100, "int64"), store(A, i * i, i)))
    a = np.zeros(100, "int64")
    compile1(f)(a)
    np.testing.assert_array_equal(a, np.arange(100) ** 2)


def test_load_with_bufferload_index():
    """Indirect (gather) accesses: C[i] = A[I[i]]."""
    A, C, idx = buf("A", 50), buf("C", 20), buf("I", 20, "int32")
    i = Var("i")
    f = PrimFunc("gather", (A, idx, C), loop(i, 20, store(C, BufferLoad(A, (load(idx, i),)), i)))
    a = np.random.rand(50).astype("float32")
    ii = np.random.default_rng(2).integers(0, 50, 20).astype("int32")
    c = np.zeros(20, "float32")
    compile1(f)(a, ii, c)
    np.testing.assert_array_equal(c, a[ii])
