"""IEEE and integer semantics of compiled kernels (issue 12): Relu and the max-based ops keep
NaN, integer Pow is exact, integer means and norms are computed as ONNX Runtime computes them,
an integer division by zero is an error naming the node, float -> int casts are defined."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorforge
from tensorforge.expr.numeric import float_to_int
from tensorforge.ops.arith import float_to_int_np
from tensorforge.runtime.checks import KernelCheckError
from tensorforge_onnx.conformance import one_op_model, specials
from tensorforge_onnx.testing import ort_run

NAN, INF = float("nan"), float("inf")


@pytest.fixture
def run(llvm_target: Any, plugins: Any) -> Any:
    """Compile a one-op model and run it: run(op, feeds, consts=None, **attrs) -> output."""
    plugins.register("tensorforge_onnx.plugin", "onnx", distribution="tensorforge-frontend-onnx")

    def go(op: str, feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray] | None = None,
           opset: int = 17, **attrs: Any) -> np.ndarray:
        m = one_op_model(op, feeds, consts or {}, attrs, opset=opset)
        return tensorforge.compile(m, target="llvm -num-threads=1").run(feeds)[0]

    return go


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"uint{8 * a.itemsize}")


# NaN, -0.0 -------------------------------------------------------------------------------
def test_relu_keeps_nan_and_negative_zero(run: Any) -> None:
    x = np.array([NAN, -1, -0.0, 0, 2, INF, -INF, 1e-45, -1e-45] * 3, "float32")
    y = run("Relu", {"x": x})
    want = np.where(x < 0, np.float32(0), x)  # ONNX Runtime's: NaN and -0.0 stay
    np.testing.assert_array_equal(_bits(y), _bits(want))
    assert np.isnan(y[0]) and np.signbit(y[2])


@pytest.mark.parametrize("op,attrs", [
    ("ReduceMax", {"keepdims": 0}), ("ReduceMin", {"keepdims": 0}),
])
def test_max_reductions_propagate_nan_anywhere(run: Any, op: str, attrs: dict[str, Any]
                                               ) -> None:
    """ONNX Runtime keeps a NaN only when it comes first; numpy and we, wherever it is."""
    x = np.array([[NAN, 1, 2, 3], [1, 2, 3, NAN], [1, NAN, -INF, 2], [1, 2, 3, 4]], "float32")
    y = run(op, {"x": x}, axes=[1], **attrs)
    np.testing.assert_array_equal(y, [NAN, NAN, NAN, 4 if op == "ReduceMax" else 1])


def test_pools_propagate_nan(run: Any) -> None:
    x = np.arange(16, dtype="float32").reshape(1, 1, 4, 4)
    x[0, 0, 3, 3] = NAN  # last in its window
    y = run("MaxPool", {"x": x}, kernel_shape=[2, 2], strides=[2, 2])
    assert np.isnan(y[0, 0, 1, 1]) and np.isfinite(y[0, 0, :1]).all()
    g = run("GlobalMaxPool", {"x": x})
    assert np.isnan(g).all()


def test_max_min_clip_hard_activations_with_nan(run: Any) -> None:
    x = np.array([NAN, -3, 0.5, INF], "float32")
    one = np.ones(4, "float32")
    for op in ("Max", "Min"):
        np.testing.assert_array_equal(run(op, {"a": x, "b": one}),
                                      getattr(np, "maximum" if op == "Max" else "minimum")(x, 1))
        assert np.isnan(run(op, {"a": one, "b": x})[0])
    lo, hi = np.array(0, "float32"), np.array(1, "float32")
    assert np.isnan(run("Clip", {"x": x}, {"lo": lo, "hi": hi})[0])
    assert np.isnan(run("HardSigmoid", {"x": x})[0])
    assert np.isnan(run("HardSwish", {"x": x}, opset=17)[0])



@pytest.mark.parametrize("lo, hi", [(NAN, 1.0), (-1.0, NAN), (NAN, NAN)])
@pytest.mark.parametrize("as_input", [False, True])
def test_clip_with_a_nan_bound_clips_nothing_on_that_side(run: Any, lo: float, hi: float,
                                                          as_input: bool) -> None:
    """As in ONNX Runtime (std::max(x, NaN) is x); we returned NaN everywhere (fuzz seed
    829: BatchNorm -> ... -> Clip with a NaN max)."""
    x = np.array([-INF, -5, 0.5, 5, INF, NAN], "float32")
    bounds = {"lo": np.array(lo, "float32"), "hi": np.array(hi, "float32")}
    feeds, consts = ({"x": x, **bounds}, {}) if as_input else ({"x": x}, bounds)
    got = run("Clip", feeds, consts)
    want = ort_run(one_op_model("Clip", feeds, consts, {}), feeds)[0]
    np.testing.assert_array_equal(got, want)

def test_negative_zero_through_unary_ops(run: Any) -> None:
    z = np.array([-0.0] * 8, "float32")
    for op in ("Neg", "Tanh", "Erf", "Elu", "LeakyRelu", "Relu", "Sqrt", "Floor", "Ceil"):
        y = run(op, {"x": z})
        want_neg = op != "Neg"
        assert (np.signbit(y) == want_neg).all(), f"{op}(-0.0) = {y[0]}"


def test_sigmoid_is_accurate_where_onnxruntime_is_not(run: Any) -> None:
    x = np.linspace(-87, 87, 4001).astype("float32")
    y = run("Sigmoid", {"x": x}).astype("float64")
    exact = 1 / (1 + np.exp(-x.astype("float64")))
    assert np.max(np.abs(y - exact) / exact) < 1e-6


def test_softplus_tiny_results(run: Any) -> None:
    x = np.array([-100, -60, -20, 0, 20, 100] * 2, "float32")
    y = run("Softplus", {"x": x}).astype("float64")
    exact = np.logaddexp(x.astype("float64"), 0)
    np.testing.assert_allclose(y, exact, rtol=1e-6, atol=1e-45)


# integers ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_pow_is_exact(run: Any, dtype: str) -> None:
    """Issue 12: 4097**2 came out as 16785410 (computed in float32)."""
    a = np.array([4097, 3, -7, 2, 46341, 1, -1, -1, 5, 0, 2], dtype)
    b = np.array([2, 13, 3, 30, 2, -3, -3, -2, -1, 0, 31], dtype)
    y = run("Pow", {"a": a, "b": b})
    assert y[0] == 16785409 and y[1] == 3**13 and y[2] == -343 and y[3] == 2**30
    with np.errstate(over="ignore"):
        assert y[4] == np.multiply(a[4], a[4])  # wraps in int32 as numpy and ORT's x*x
    np.testing.assert_array_equal(y[5:10], [1, -1, 1, 0, 1])
    if dtype == "int64":
        assert y[10] == 2**31


def test_integer_pow_scalar_exponent_matches_onnxruntime(run: Any) -> None:
    a = np.array([4097, 46341, -46341, 65536, 7], "int32")
    e = np.array([2], "int32")
    m = one_op_model("Pow", {"a": a}, {"e": e}, {})
    np.testing.assert_array_equal(run("Pow", {"a": a}, {"e": e}), ort_run(m, {"a": a})[0])


@pytest.mark.parametrize("op", ["ReduceMean", "ReduceL2", "ReduceLogSumExp", "ReduceSum",
                                "ReduceL1", "ReduceSumSquare", "ReduceLogSum"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_integer_reductions_as_onnxruntime(run: Any, op: str, dtype: str) -> None:
    """Issue 12: integer ReduceMean raised a bare TypeError, ReduceL2 / ReduceLogSumExp failed
    at kernel binding. ONNX Runtime computes them in double and converts with saturation."""
    x = np.array([[1, 2, 3], [-7, 0, 0], [3, 3, 3], [-5, -6, -5], [2000000000, 2000000000, 5],
                  [0, -1, -1]], dtype)
    consts = {"axes": np.array([1], "int64")} if op == "ReduceSum" else None
    attrs = {} if op == "ReduceSum" else {"axes": [1]}
    y = run(op, {"x": x}, consts, keepdims=0, **attrs)
    m = one_op_model(op, {"x": x}, consts or {}, {"keepdims": 0, **attrs})
    np.testing.assert_array_equal(y, ort_run(m, {"x": x})[0])
    assert y.dtype == np.dtype(dtype)


def test_integer_division_by_zero_is_an_error(run: Any, llvm_target: Any) -> None:
    a = np.array([7, -7, 3, 4], "int32")
    b = np.array([2, -2, 0, 1], "int32")
    with pytest.raises(KernelCheckError, match=r"Div node 'div_0': integer division by zero "
                                               r"\(the divisor is 0 at position \(2,\)\)"):
        run("Div", {"a": a, "b": b})
    b[2] = 3
    np.testing.assert_array_equal(run("Div", {"a": a, "b": b}), [3, 3, 1, 4])  # truncation


def test_int_min_divided_by_minus_one_does_not_trap(run: Any) -> None:
    for dt in ("int32", "int64"):
        lo = np.iinfo(dt).min
        a = np.array([lo, lo, 9, -9], dt)
        b = np.array([-1, 1, -1, -1], dt)
        np.testing.assert_array_equal(run("Div", {"a": a, "b": b}), [lo, lo, -9, 9])


# casts ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "uint32",
                                   "uint64", "bool"])
@pytest.mark.parametrize("src", ["float32", "float64"])
def test_float_to_int_casts_are_defined(run: Any, src: str, dtype: str) -> None:
    """NaN, infinities and out-of-range values convert as x86 does (what ONNX Runtime and
    numpy give on this machine); LLVM's fptosi alone would make them poison."""
    import onnx

    x = np.concatenate([specials(src), np.array([3e9, -3e9, 2.5e19, -1.5, 300.7], src)])
    y = run("Cast", {"x": x}, to=onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)))
    np.testing.assert_array_equal(y, float_to_int_np(x, dtype))
    scalar = np.array([float_to_int(float(v), dtype) for v in x], dtype=dtype)
    np.testing.assert_array_equal(y, scalar)


def test_conv_transpose_inf_stays_local(run: Any) -> None:
    """A non-finite input reaches only the outputs it contributes to (the sub-pixel rewrite
    used to multiply it by zero taps of other phases: 0 * inf = NaN)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 2, 4, 4)).astype("float32")
    x[0, 0, 1, 2] = INF
    w = rng.standard_normal((2, 3, 3, 3)).astype("float32")
    y = run("ConvTranspose", {"x": x}, {"w": w}, strides=[2, 2])
    m = one_op_model("ConvTranspose", {"x": x}, {"w": w}, {"strides": [2, 2]})
    want = ort_run(m, {"x": x})[0]
    np.testing.assert_array_equal(np.isfinite(y), np.isfinite(want))
    assert np.isfinite(y).sum() > y.size // 2
