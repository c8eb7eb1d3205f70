"""LLVM codegen: math intrinsics (scalar and vector polynomials) and the lazy if_then_else."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tensorforge.expr import Broadcast, Call, IntImm, Var
from tensorforge.tir import PrimFunc

sys.path.insert(0, str(Path(__file__).parent))
from test_codegen_support import buf, compile1, load, loop, ramp, store  # noqa: E402

_erf = np.vectorize(math.erf, otypes=["float64"])


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x.astype("float64")))


REFS = {
    "exp": np.exp, "exp2": np.exp2, "log": np.log, "log2": np.log2, "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x.astype("float64")), "tanh": np.tanh, "sigmoid": _sigmoid,
    "erf": lambda x: _erf(x.astype("float64")), "fabs": np.abs, "floor": np.floor,
    "ceil": np.ceil, "round": np.round, "trunc": np.trunc,
}
POSITIVE = {"log", "log2", "sqrt", "rsqrt"}


def _inputs(op: str, dtype: str) -> np.ndarray:
    rng = np.random.default_rng(3)
    if op in POSITIVE:
        x = np.concatenate([rng.uniform(1e-3, 100, 60), [1e-30, 1.0, 4.0, 1e30]])
    elif op in ("exp", "exp2", "sigmoid"):
        x = np.concatenate([rng.uniform(-20, 20, 56),
                            [-100, -87.5, -88.8, -103.0, 88.0, 88.7, 0.0, 1e-8]])
    elif op in ("tanh", "erf"):
        x = np.concatenate([rng.uniform(-5, 5, 56),
                            [-100, 100, 1e-5, -1e-4, 0.3, -0.62, 0.63, 9.0]])
    else:
        x = np.concatenate([rng.uniform(-50, 50, 56), [-2.5, -1.5, 0.5, 2.5, 0.0, -0.0, 3, -7]])
    assert len(x) % 8 == 0
    with np.errstate(over="ignore"):
        return x.astype(dtype)


def _unary_kernel(op: str, dtype: str, lanes: int, n: int) -> PrimFunc:
    A, C = buf("A", n, dtype), buf("C", n, dtype)
    i = Var("i")
    vdtype = dtype if lanes == 1 else f"{dtype}x{lanes}"
    idx = i if lanes == 1 else ramp(i * lanes, lanes)
    value = Call(vdtype, op, (load(A, idx),))
    return PrimFunc(f"{op}_{lanes}", (A, C), loop(i, n // lanes, store(C, value, idx)))


@pytest.mark.parametrize("lanes", [1, 8])
@pytest.mark.parametrize("op", sorted(REFS))
def test_unary_math_float32(op, lanes):
    x = _inputs(op, "float32")
    y = np.zeros_like(x)
    compile1(_unary_kernel(op, "float32", lanes, len(x)))(x, y)
    with np.errstate(over="ignore"):
        ref = REFS[op](x).astype("float32")
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6, err_msg=f"{op} x{lanes}")


@pytest.mark.parametrize("op", ["exp", "tanh", "sigmoid", "erf"])
def test_vector_polynomials_dense_range(op):
    """The polynomials over a dense sweep, including extremes and NaN/inf."""
    x = np.concatenate([np.linspace(-110, 95, 40004), [np.inf, -np.inf, np.nan, -0.0]])
    x = x.astype("float32")
    y = np.zeros_like(x)
    compile1(_unary_kernel(op, "float32", 8, len(x)))(x, y)
    with np.errstate(over="ignore"):
        ref = REFS[op](x).astype("float32")
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-6, equal_nan=True)
    if op == "exp":  # relative accuracy where the result is a normal float
        ok = (ref > 1e-37) & np.isfinite(ref)
        assert np.max(np.abs(y[ok] / ref[ok] - 1)) < 5e-7
        assert y[np.nanargmin(np.abs(x + 100))] > 0  # exp(-100) is a denormal, not 0


@pytest.mark.parametrize("dtype,lanes", [("float64", 1), ("float64", 4), ("float16", 8)])
@pytest.mark.parametrize("op", ["exp", "tanh", "sqrt", "erf", "sigmoid"])
def test_unary_math_other_float_types(op, dtype, lanes):
    x = _inputs(op, dtype)
    y = np.zeros_like(x)
    compile1(_unary_kernel(op, dtype, lanes, len(x)))(x, y)
    with np.errstate(over="ignore"):
        ref = REFS[op](x.astype("float64")).astype(dtype).astype("float64")
    tol = 2e-3 if dtype == "float16" else 1e-12
    np.testing.assert_allclose(y.astype("float64"), ref, rtol=tol, atol=tol)


@pytest.mark.parametrize("lanes", [1, 4])
def test_pow_and_fma(lanes):
    n = 64
    A, B, D, C = buf("A", n), buf("B", n), buf("D", n), buf("C", n)
    i = Var("i")
    vd = "float32" if lanes == 1 else f"float32x{lanes}"
    idx = i if lanes == 1 else ramp(i * lanes, lanes)
    a, b, d = load(A, idx), load(B, idx), load(D, idx)
    value = Call(vd, "pow", (a, b)) + Call(vd, "fma", (a, b, d))
    f = PrimFunc("powfma", (A, B, D, C), loop(i, n // lanes, store(C, value, idx)))
    rng = np.random.default_rng(4)
    x, y, z = (rng.uniform(0.1, 3, n).astype("float32") for _ in range(3))
    out = np.zeros(n, "float32")
    compile1(f)(x, y, z, out)
    np.testing.assert_allclose(out, x**y + (x * y + z), rtol=1e-5)


def test_integer_abs_and_likely():
    n = 16
    A, C = buf("A", n, "int32"), buf("C", n, "int32")
    i = Var("i")
    value = Call("int32", "abs", (load(A, i),))
    cond = Call("bool", "likely", (i < IntImm(100),))
    from tensorforge.expr import Select

    f = PrimFunc("iabs", (A, C), loop(i, n, store(C, Select(cond, value, IntImm(0)), i)))
    a = np.arange(-8, 8, dtype="int32")
    c = np.zeros(n, "int32")
    compile1(f)(a, c)
    np.testing.assert_array_equal(c, np.abs(a))


# if_then_else must never evaluate the untaken side: put the input right after a page that
# is not mapped readable, so an eager read of A[-1] would crash instead of passing silently.
_GUARD_SCRIPT = textwrap.dedent("""
    import ctypes, mmap, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from test_codegen_support import buf, compile1, load, loop, ramp, store
    from tensorforge.expr import Broadcast, Call, FloatImm, IntImm, Var
    from tensorforge.tir import PrimFunc

    page = mmap.PAGESIZE
    n = 64
    mem = mmap.mmap(-1, 2 * page)
    base = np.frombuffer(mem, dtype="float32")
    libc = ctypes.CDLL(None)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(base.ctypes.data, page, 0) == 0  # PROT_NONE on the first page
    a = base[page // 4: page // 4 + n]
    a[:] = np.arange(1, n + 1, dtype="float32")

    # scalar: C[i] = A[i - 1] if i >= 1 else -5   (i = 0 would read the guard page)
    A, C = buf("A", n), buf("C", n)
    i = Var("i")
    v = Call("float32", "if_then_else", (i >= IntImm(1), load(A, i - 1), FloatImm(-5.0)))
    c = np.zeros(n, "float32")
    compile1(PrimFunc("pad1", (A, C), loop(i, n, store(C, v, i))))(a, c)
    assert c[0] == -5 and (c[1:] == a[:-1]).all(), c

    # vector: C[8i:8i+8] = A[8i-4 : 8i+4] where >= 0, else -5 (lanes of i=0 reach A[-4])
    lanes = 8
    idx = ramp(i * lanes - 4, lanes)
    cond = ramp(i * lanes - 4, lanes) >= Broadcast(IntImm(0), lanes)
    v = Call("float32x8", "if_then_else",
             (cond, load(A, idx), Broadcast(FloatImm(-5.0), lanes)))
    c[:] = 0
    body = loop(i, n // lanes, store(C, v, ramp(i * lanes, lanes)))
    compile1(PrimFunc("pad8", (A, C), body))(a, c)
    ref = np.concatenate([[-5] * 4, a[:-4]])
    assert (c == ref).all(), c

    # vector with a strided (gathered) true side, and a scalar load under the mask (all
    # lanes of i = 0 are off, so its A[-1] must not be read)
    idx2 = ramp(i * lanes - 16, lanes, 2)
    cond2 = ramp(i * lanes - 16, lanes, 2) >= Broadcast(IntImm(0), lanes)
    tv = load(A, idx2) + Broadcast(load(A, i * lanes - 1), lanes)
    v = Call("float32x8", "if_then_else", (cond2, tv, Broadcast(FloatImm(-5.0), lanes)))
    c[:] = 0
    f = PrimFunc("pad8s", (A, C), loop(i, n // lanes - 1, store(C, v, ramp(i * lanes, lanes))))
    compile1(f)(a, c)
    for blk in range(n // lanes - 1):
        for k in range(lanes):
            j = blk * lanes - 16 + 2 * k
            want = a[j] + a[blk * lanes - 1] if j >= 0 else -5
            assert c[blk * lanes + k] == want, (blk, k, c)
    print("OK")
""")


def test_if_then_else_never_reads_the_untaken_side():
    script = _GUARD_SCRIPT.format(tests=str(Path(__file__).parent))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and "OK" in proc.stdout, (
        f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}")


def test_vector_exp_stays_vectorized():
    """No per-lane libm calls for the float32 vector polynomials."""
    mod = compile1(_unary_kernel("tanh", "float32", 8, 64))
    asm = mod.get_source("asm")
    assert "tanhf" not in asm and "expf" not in asm


def test_broadcast_of_scalar_math():
    n = 32
    A, C = buf("A", n), buf("C", n)
    s = Var("s", "float32")
    i = Var("i")
    v = load(A, ramp(i * 8, 8)) * Broadcast(Call("float32", "sqrt", (s,)), 8)
    compile1(PrimFunc("bsq", (A, C, s), loop(i, n // 8, store(C, v, ramp(i * 8, 8)))))(
        a := np.arange(n, dtype="float32"), c := np.zeros(n, "float32"), 4.0)
    np.testing.assert_allclose(c, a * 2)
