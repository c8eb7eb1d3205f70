"""The op cases of the special-value conformance test (`conformance.py`): every op the ONNX
frontend converts, with the dtypes to try (a dtype ONNX Runtime has no CPU kernel for is
skipped), how its inputs are made and which tolerance class applies.

Departures of ONNX Runtime that cases work around, each in the case's `note`:
- ORT_NAN_ORDER: ONNX Runtime's ReduceMax/ReduceMin, MaxPool and GlobalMaxPool keep a NaN only
  when it comes first in the window (Eigen's maxCoeff / `maxps`); numpy, IEEE 754-2019
  `maximum` and our kernels propagate it. These cases feed no NaN; NaN propagation is checked
  against the numpy reference in `tests/test_ieee_semantics.py`.
- ORT_POW_DOUBLE: ONNX Runtime's integer Pow with a tensor exponent computes
  `(T)std::pow(double, double)`: exact only below 2**53 and undefined in C++ (x86 gives
  INT_MIN) past the dtype's range. We compute exactly by multiplication and wrap like numpy
  (and like ONNX Runtime's own x**2, x**3 path); results outside +-min(2**53, max) are masked.
- ORT_DIV_TRAP: an integer division by zero is an error in both (tested in
  `test_ieee_semantics.py`); INT_MIN / -1 faults (SIGFPE) in ONNX Runtime's process, so it is
  not fed to it; ours gives INT_MIN, as numpy.
- ORT_ZERO_SIGN: ONNX Runtime's sign of a zero result is not IEEE's in some kernels: Where
  returns +0.0 for a selected -0.0 of its first input; Max/Min pick between -0.0 and +0.0 by
  operand order in its scalar path and the other way in its vector path; PRelu and LeakyRelu
  in double and half give +0.0 for a negative input times a slope that underflows (IEEE:
  -0.0). Those cases compare -0.0 and +0.0 as equal.
- ORT_SOFTMAX_INF: in a row holding +inf, ONNX Runtime's LogSoftmax gives NaN everywhere in
  float and -inf for the other elements in double; ours (max-subtracted, as its float path)
  gives NaN everywhere. Softmax rows are fed -inf (masked attention) but not +inf.
- ORT_INT_OVERFLOW: ONNX Runtime's integer ReduceLogSumExp computes x - max in the integer
  type (signed overflow: C++ undefined behaviour); fed values whose differences fit.
- ORT_SIGN_NAN: ONNX Runtime's float16 Sign gives 0 for NaN (its float and double, numpy and
  ours keep NaN); the float16 case feeds no NaN.
- ORT_GELU: ONNX Runtime's float Gelu (erf) is off by 4e-6 relative where 1 + erf(x/sqrt 2)
  cancels (x = -2.5; ours evaluates it in double: exact to the float), its double tanh
  approximation by 6e-9; those dtypes are left to the node suite's reference data.
- ORT_SHRINK_FLOAT: ONNX Runtime computes double Shrink in float (1.8e308 - 0.5 is inf);
  the case runs float and half only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

from .conformance import (
    ALL,
    FLOATS,
    INTS,
    SIGNED,
    moderate,
    one_op_model,
    pair_values,
    sprinkle,
    unary_values,
)

NUM = FLOATS + INTS
F = ("float32", "float64")  # the float dtypes ONNX Runtime implements for most float ops
FH = FLOATS
ORT_NAN_ORDER = ("onnxruntime keeps NaN in max/min reductions only when it comes first; "
                 "fed without NaN (see the module docstring)")
I64 = "int64"


@dataclass(frozen=True)
class Case:
    """One op (or op variant) of the conformance test."""

    op: str
    dtypes: tuple[str, ...]
    kind: str = "unary"  # unary | binary | custom
    tol: str = "exact"
    attrs: dict[str, Any] = field(default_factory=dict)
    consts: Callable[[str], dict[str, np.ndarray]] | None = None
    inputs: Callable[[str], dict[str, np.ndarray]] | None = None
    input_names: tuple[str, ...] | None = None
    no_nan: bool = False
    mask: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None
    opset: int = 17
    n_out: int = 1
    label: str = ""
    note: str = ""
    zero_sign: bool = True  # compare the sign of zero results (ORT_ZERO_SIGN)

    @property
    def name(self) -> str:
        return f"{self.op}{'/' + self.label if self.label else ''}"


def build(case: Case, dtype: str) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """The case's model and inputs for `dtype`."""
    if case.inputs is not None:
        feeds = case.inputs(dtype)
    elif case.kind == "binary":
        a, b = pair_values(dtype, case.no_nan)
        feeds = {"a": a, "b": b}
    else:
        feeds = {"x": unary_values(dtype, case.no_nan)}
    consts = case.consts(dtype) if case.consts is not None else {}
    names = list(case.input_names) if case.input_names is not None else None
    return one_op_model(case.op, feeds, consts, case.attrs, case.n_out, case.opset,
                        names), feeds


def _sp(shape: tuple[int, ...], seed: int = 0, no_nan: bool = False) -> Callable[..., Any]:
    """Inputs: one tensor `x` of `shape`, ordinary values with special ones sprinkled in."""
    return lambda dt: {"x": sprinkle(shape, dt, seed, no_nan)}


def _c(**arrays: Any) -> Callable[[str], dict[str, np.ndarray]]:
    """Constant inputs, independent of the dtype (int64 index/shape arrays ...)."""
    return lambda dt: {k: np.asarray(v) for k, v in arrays.items()}


def _w(**shapes: tuple[int, ...]) -> Callable[[str], dict[str, np.ndarray]]:
    """Weights of the case's dtype, ordinary values."""
    def make(dt: str) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(7)
        return {k: (rng.standard_normal(s) * 0.5).astype(dt) for k, s in shapes.items()}
    return make


# masks ------------------------------------------------------------------------------------
def _pow_in_range(feeds: dict[str, np.ndarray]) -> np.ndarray:
    """ORT_POW_DOUBLE: keep the integer powers ONNX Runtime computes exactly."""
    a, b = feeds["a"], feeds["b"]
    lim = min(2**53, int(np.iinfo(a.dtype).max))
    keep = np.zeros(a.shape, bool)
    for i, (x, e) in enumerate(zip(a.tolist(), b.tolist())):
        if e < 0:
            keep[i] = True
        elif abs(x) <= 1 or e <= 64:
            keep[i] = abs(x ** e) <= lim
    return keep


def _int_div_pairs(dt: str) -> dict[str, np.ndarray]:
    """ORT_DIV_TRAP: no zero divisor, no INT_MIN / -1."""
    a, b = pair_values(dt)
    keep = b != 0
    if np.dtype(dt).kind == "i":
        keep &= ~((a == np.iinfo(dt).min) & (b == -1))
    return {"a": a[keep], "b": b[keep]}


def _div_inputs(dt: str) -> dict[str, np.ndarray]:
    if np.dtype(dt).kind == "f":
        a, b = pair_values(dt)
        return {"a": a, "b": b}
    return _int_div_pairs(dt)


def _pow_inputs(dt: str) -> dict[str, np.ndarray]:
    if np.dtype(dt).kind == "f":
        a, b = pair_values(dt)
        return {"a": a, "b": b}
    vals = np.array([0, 1, -1, 2, -2, 3, 7, 100, 4097, 46341, -46341, 2**20, 2**31 - 1],
                    dtype="int64")
    vals = vals[(vals >= np.iinfo(dt).min) & (vals <= np.iinfo(dt).max)].astype(dt)
    exps = np.array([0, 1, 2, 3, 4, 5, 31, 32, 62, 63, 64, -1, -2, -3], dt)
    a, b = np.meshgrid(vals, exps, indexing="ij")
    return {"a": a.ravel().copy(), "b": b.ravel().copy()}


def _mixed_pow(base: str, exp: str) -> Callable[[str], dict[str, np.ndarray]]:
    def make(dt: str) -> dict[str, np.ndarray]:
        a = np.array([0, 1, -1, 2, -2, 3, 5, -7, 10], base)
        b = np.array([0, 1, 2, 3, 2.5, 0.5, -1, 3, 1.5], exp)
        return {"a": a, "b": b}
    return make


def _where_inputs(dt: str) -> dict[str, np.ndarray]:
    a, b = pair_values(dt)
    c = (np.arange(a.size) % 3 == 0)
    return {"c": c, "a": a, "b": b}


def _cast_case(src: str, dsts: tuple[str, ...]) -> list[Case]:
    return [Case("Cast", (src,), attrs={"to": onnx.helper.np_dtype_to_tensor_dtype(
        np.dtype(d))}, label=f"{src}->{d}") for d in dsts]


def _reduce(op: str, tol: str, dtypes: tuple[str, ...], no_nan: bool = False,
            note: str = "") -> list[Case]:
    """Reduce over axis 1 of special values laid out (n, 3), and over everything."""
    def rows(dt: str) -> dict[str, np.ndarray]:
        v = unary_values(dt, no_nan)
        if op == "ReduceLogSumExp" and np.dtype(dt).kind in "iu":  # ORT_INT_OVERFLOW
            v = v[np.abs(v.astype("float64")) < 2.0 ** (8 * np.dtype(dt).itemsize - 2)]
        v = np.concatenate([v, v[: (-v.size) % 3]])
        return {"x": v.reshape(-1, 3)}
    axes_input = op == "ReduceSum"
    out = []
    for keep, axes in ((1, [1]), (0, None)):
        attrs: dict[str, Any] = {"keepdims": keep}
        consts = None
        if axes is not None and axes_input:
            consts = _c(axes=np.array(axes, I64))
        elif axes is not None:
            attrs["axes"] = axes
        out.append(Case(op, dtypes, "custom", tol, attrs, consts, rows, no_nan=no_nan,
                        label=f"axes={axes},keep={keep}", note=note))
    return out


def _nchw(no_nan: bool = False, shape: tuple[int, ...] = (1, 2, 5, 5)) -> Callable[..., Any]:
    return _sp(shape, 3, no_nan)


def _moderate_rows(dt: str) -> dict[str, np.ndarray]:
    v = moderate(dt)
    v = v[~np.isnan(v) & (v != np.inf)]  # ORT_NAN_ORDER, ORT_SOFTMAX_INF
    v = np.concatenate([v, v[: (-v.size) % 4]])
    return {"x": v.reshape(-1, 4)}


CASES: list[Case] = [
    # unary elementwise ------------------------------------------------------------------
    Case("Abs", NUM), Case("Neg", FLOATS + SIGNED), Case("Floor", FH), Case("Ceil", FH),
    Case("Relu", NUM), Case("Identity", ALL), Case("Not", ("bool",)),
    Case("Sqrt", FH), Case("Reciprocal", FH),
    Case("Exp", FH, tol="approx"), Case("Log", FH, tol="approx"),
    Case("Tanh", FH, tol="approx"), Case("Sigmoid", FH, tol="ort_sigmoid"),
    Case("Erf", FH, tol="approx"), Case("Softplus", FH, tol="approx"),
    Case("Elu", FH, tol="approx"), Case("Elu", FH, tol="approx", attrs={"alpha": 0.3},
                                        label="alpha"),
    Case("Selu", FH, tol="approx"),
    Case("LeakyRelu", FH, zero_sign=False, note="ORT_ZERO_SIGN"),
    Case("HardSigmoid", FH, tol="ulp"), Case("HardSwish", FH, tol="ulp", opset=17),
    Case("Clip", NUM, consts=lambda dt: {"lo": np.array(-1.5 if np.dtype(dt).kind == "f"
                                                        else 0, dt),
                                         "hi": np.array(6, dt)}),
    Case("Clip", FH, input_names=("x", "", "hi"), consts=lambda dt: {"hi": np.array(0.5, dt)},
         label="max only"),
    Case("Clip", F, attrs={"min": -1.0, "max": 1.0}, opset=10, label="opset10"),
    Case("Dropout", FH), Case("Shape", ALL), Case("Size", ALL),
    # binary elementwise -----------------------------------------------------------------
    Case("Add", NUM, "binary"), Case("Sub", NUM, "binary"), Case("Mul", NUM, "binary"),
    Case("Div", NUM, "custom", inputs=_div_inputs, note="ORT_DIV_TRAP"),
    Case("Pow", FH, "binary", tol="approx"),
    Case("Pow", ("int32", "int64"), "custom", inputs=_pow_inputs, mask=_pow_in_range,
         label="int", note="ORT_POW_DOUBLE"),
    Case("Pow", ("float32",), "custom", tol="approx", inputs=_mixed_pow("float32", I64),
         label="float^int"),
    Case("Pow", ("int32",), "custom", inputs=_mixed_pow("int32", "float32"),
         label="int^float"),
    Case("Max", NUM, "binary", zero_sign=False, note="ORT_ZERO_SIGN"),
    Case("Min", NUM, "binary", zero_sign=False, note="ORT_ZERO_SIGN"),
    Case("Sum", NUM, "binary"), Case("Mean", FH, "binary", tol="ulp"),
    Case("Equal", ALL, "binary"), Case("Less", NUM, "binary"),
    Case("Greater", NUM, "binary"), Case("LessOrEqual", NUM, "binary"),
    Case("GreaterOrEqual", NUM, "binary"),
    Case("And", ("bool",), "binary"), Case("Or", ("bool",), "binary"),
    Case("Xor", ("bool",), "binary"),
    Case("PRelu", FH, "binary", zero_sign=False, note="ORT_ZERO_SIGN"),
    Case("Where", ALL, "custom", inputs=_where_inputs, zero_sign=False, note="ORT_ZERO_SIGN"),
    # casts --------------------------------------------------------------------------------
    *_cast_case("float32", ALL),
    *_cast_case("float64", ("float32", "int32", "int64", "uint8", "int8", "bool",
                            "uint32", "uint64")),
    *_cast_case("float16", ("float32", "int32", "int8")),
    *_cast_case("int64", ("float32", "float64", "int32", "int8", "uint8", "uint64",
                          "bool", "float16")),
    *_cast_case("int32", ("float32", "int64", "uint32", "int16", "bool")),
    *_cast_case("uint64", ("float32", "float64", "int64")),
    *_cast_case("bool", ("float32", "int32", "uint8")),
    Case("CastLike", ("float32",), "custom",
         inputs=lambda dt: {"x": unary_values(dt), "like": np.zeros(1, "int32")},
         label="float32->int32"),
    # reductions ---------------------------------------------------------------------------
    *_reduce("ReduceSum", "sum", ("float32", "float64", "int32", "int64")),
    *_reduce("ReduceMean", "sum", ("float32", "float64", "int32", "int64")),
    *_reduce("ReduceMax", "exact", NUM, True, ORT_NAN_ORDER),
    *_reduce("ReduceMin", "exact", NUM, True, ORT_NAN_ORDER),
    *_reduce("ReduceSumSquare", "sum", ("float32", "float64", "int32", "int64")),
    *_reduce("ReduceL1", "sum", ("float32", "float64", "int32", "int64")),
    *_reduce("ReduceL2", "sum", ("float32", "float64", "int32", "int64")),
    *_reduce("ReduceLogSum", "sum", ("float32", "float64", "int32", "int64")),
    *_reduce("ReduceLogSumExp", "sum", ("float32", "float64", "int32", "int64"),
             note="ORT_INT_OVERFLOW"),
    Case("Softmax", F, "custom", "sum", {"axis": 1}, inputs=_moderate_rows, no_nan=True,
         note="ORT_NAN_ORDER, ORT_SOFTMAX_INF"),
    Case("LogSoftmax", F, "custom", "sum", {"axis": 1}, inputs=_moderate_rows, no_nan=True,
         note="ORT_NAN_ORDER, ORT_SOFTMAX_INF"),
    # pooling and normalization -------------------------------------------------------------
    Case("MaxPool", FH, "custom", attrs={"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                         "strides": [2, 2]}, inputs=_nchw(True), no_nan=True,
         note=ORT_NAN_ORDER),
    Case("AveragePool", F, "custom", "sum", {"kernel_shape": [2, 2]}, inputs=_nchw()),
    Case("AveragePool", F, "custom", "sum", {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                                             "count_include_pad": 1},
         inputs=_nchw(), label="pads"),
    Case("GlobalAveragePool", F, "custom", "sum", inputs=_nchw()),
    Case("GlobalMaxPool", F, "custom", inputs=_nchw(True), note=ORT_NAN_ORDER),
    Case("BatchNormalization", F, "custom", "sum", inputs=_nchw(),
         consts=lambda dt: {"s": np.array([0.5, -2], dt), "bias": np.array([1, 0], dt),
                            "mean": np.array([0.1, -3], dt), "var": np.array([4, 0.25], dt)}),
    Case("InstanceNormalization", F, "custom", "sum", inputs=_nchw(),
         consts=lambda dt: {"s": np.array([0.5, -2], dt), "bias": np.array([1, 0], dt)}),
    Case("LayerNormalization", F, "custom", "sum", {"axis": -1}, inputs=_sp((3, 8), 4),
         consts=_w(s=(8,), bias=(8,))),
    # dense ------------------------------------------------------------------------------
    Case("MatMul", F, "custom", "dense", inputs=_sp((3, 4, 5), 5), consts=_w(w=(5, 6))),
    Case("Gemm", F, "custom", "dense", {"transB": 1}, inputs=_sp((4, 5), 6),
         consts=_w(w=(3, 5), c=(3,))),
    Case("Conv", F, "custom", "dense", {"pads": [1, 1, 1, 1]}, inputs=_nchw(),
         consts=_w(w=(3, 2, 3, 3), b=(3,))),
    Case("ConvTranspose", F, "custom", "dense", {"strides": [2, 2]}, inputs=_nchw(),
         consts=_w(w=(2, 3, 3, 3))),
    Case("LSTM", ("float32",), "custom", "dense", {"hidden_size": 3}, inputs=_sp((4, 1, 2), 8),
         consts=_w(w=(1, 12, 2), r=(1, 12, 3))),
    Case("GRU", ("float32",), "custom", "dense", {"hidden_size": 3}, inputs=_sp((4, 1, 2), 9),
         consts=_w(w=(1, 9, 2), r=(1, 9, 3))),
    Case("RNN", ("float32",), "custom", "dense", {"hidden_size": 3}, inputs=_sp((4, 1, 2), 10),
         consts=_w(w=(1, 3, 2), r=(1, 3, 3))),
    # data movement ----------------------------------------------------------------------
    Case("Transpose", ALL, "custom", attrs={"perm": [1, 0]}, inputs=_sp((4, 3), 11)),
    Case("Reshape", ALL, "custom", inputs=_sp((4, 3), 12), consts=_c(s=np.array([2, -1], I64))),
    Case("Flatten", ALL, "custom", inputs=_sp((2, 3, 2), 13)),
    Case("Squeeze", NUM, "custom", inputs=_sp((3, 1, 2), 14), consts=_c(a=np.array([1], I64))),
    Case("Unsqueeze", NUM, "custom", inputs=_sp((3, 2), 15), consts=_c(a=np.array([0], I64))),
    Case("Concat", ALL, "custom", attrs={"axis": 1},
         inputs=lambda dt: {"x": sprinkle((2, 3), dt, 16), "y": sprinkle((2, 2), dt, 17)}),
    Case("Split", NUM, "custom", attrs={"axis": 0}, inputs=_sp((5, 2), 18),
         consts=_c(s=np.array([2, 3], I64)), n_out=2),
    Case("Slice", NUM, "custom", inputs=_sp((6, 5), 19),
         consts=_c(st=np.array([1, -1], I64), en=np.array([5, -6], I64),
                   ax=np.array([0, 1], I64), sp=np.array([2, -2], I64))),
    Case("Expand", ALL, "custom", inputs=_sp((3, 1), 20), consts=_c(s=np.array([2, 3, 4], I64))),
    Case("Pad", NUM, "custom", inputs=_sp((3, 4), 21), consts=_c(p=np.array([1, 0, 2, 1], I64))),
    Case("Pad", FH, "custom", attrs={"mode": "reflect"}, inputs=_sp((3, 4), 22),
         consts=_c(p=np.array([1, 2, 1, 1], I64)), label="reflect"),
    Case("Pad", FH, "custom", attrs={"mode": "edge"}, inputs=_sp((3, 4), 23),
         consts=_c(p=np.array([2, 0, 0, 3], I64)), label="edge"),
    Case("Gather", ALL, "custom", attrs={"axis": 1}, inputs=lambda dt: {
        "x": sprinkle((3, 5), dt, 24), "i": np.array([[0, -1], [4, -5]], I64)}),
    Case("GatherElements", NUM, "custom", attrs={"axis": 0}, inputs=lambda dt: {
        "x": sprinkle((3, 4), dt, 25), "i": np.array([[0, -1, 2, 1], [-3, 1, 0, 2]], I64)}),
    Case("GatherND", NUM, "custom", inputs=lambda dt: {
        "x": sprinkle((3, 4), dt, 26), "i": np.array([[0, -1], [2, 3]], I64)}),
    Case("ScatterElements", NUM, "custom", attrs={"axis": 1}, inputs=lambda dt: {
        "x": sprinkle((3, 4), dt, 27), "i": np.array([[0, -1], [2, 2]], I64),
        "u": sprinkle((2, 2), dt, 28)}),
    Case("ScatterElements", F, "custom", "ulp", {"axis": 1, "reduction": "add"},
         inputs=lambda dt: {"x": sprinkle((3, 4), dt, 29), "i": np.array([[0, -1]], I64),
                            "u": sprinkle((1, 2), dt, 30)}, opset=18, label="add"),
    Case("ScatterND", NUM, "custom", inputs=lambda dt: {
        "x": sprinkle((3, 4), dt, 31), "i": np.array([[2], [0]], I64),
        "u": sprinkle((2, 4), dt, 32)}),
    Case("Scatter", ("float32",), "custom", attrs={"axis": 0}, inputs=lambda dt: {
        "x": sprinkle((3, 2), dt, 33), "i": np.array([[1, 2]], I64),
        "u": sprinkle((1, 2), dt, 34)}, opset=10),
    Case("Resize", F, "custom", attrs={"mode": "nearest"}, inputs=_nchw(),
         input_names=("x", "", "sc"), consts=_c(sc=np.array([1, 1, 2, 1.5], "float32"))),
    Case("Resize", ("float32",), "custom", "sum", {"mode": "linear"}, inputs=_nchw(),
         input_names=("x", "", "sc"), consts=_c(sc=np.array([1, 1, 2, 2], "float32")),
         label="linear"),
    Case("Upsample", ("float32",), "custom", attrs={"mode": "nearest"}, inputs=_nchw(),
         consts=_c(sc=np.array([1, 1, 2, 2], "float32")), opset=9),
    # shape-like inputs must be known at import (static shapes): constants here
    Case("Range", ("float32", "int64"), "custom", inputs=lambda dt: {},
         consts=lambda dt: {"s": np.array(2, dt), "l": np.array(11, dt),
                            "d": np.array(3, dt)}),
    Case("ConstantOfShape", ("int64",), "custom", inputs=lambda dt: {},
         consts=lambda dt: {"s": np.array([2, 3], dt)},
         attrs={"value": onnx.numpy_helper.from_array(np.array([np.nan], "float32"))}),
]



def _shift_inputs(dt: str) -> dict[str, np.ndarray]:
    """Shift amounts inside the width (past it, C++ leaves ONNX Runtime's result undefined;
    ours follows ONNX 28: 0, tested in test_convert_coverage.py)."""
    bits = np.dtype(dt).itemsize * 8
    a = unary_values(dt)
    b = (np.arange(a.size) % bits).astype(dt)
    return {"a": a, "b": b}


def _mod_inputs(dt: str) -> dict[str, np.ndarray]:
    return _int_div_pairs(dt)  # ORT_DIV_TRAP: integer Mod by zero traps in ONNX Runtime


CASES += [
    # more elementwise math (convert_elementwise.py) ------------------------------------
    *[Case(op, FH, tol="approx", opset=22) for op in (
        "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh",
        "Atanh", "Softsign", "Mish")],
    Case("Round", FH, opset=22), Case("Sign", ("float32", "float64") + INTS, opset=13),
    Case("Sign", ("float16",), no_nan=True, opset=13, label="half",
         note="ORT_SIGN_NAN: onnxruntime's float16 Sign gives 0 for NaN"),
    Case("IsNaN", FH, opset=20),
    Case("IsInf", FH, opset=20), Case("IsInf", FH, attrs={"detect_negative": 0}, opset=20,
                                      label="positive"),
    Case("Gelu", ("float64",), tol="approx", opset=20, note="ORT_GELU"),
    Case("Gelu", ("float32",), tol="approx", attrs={"approximate": "tanh"}, opset=20,
         label="tanh", note="ORT_GELU"),
    Case("Shrink", ("float32", "float16"), attrs={"lambd": 1.5, "bias": 0.5}, opset=9,
         note="ORT_SHRINK_FLOAT: onnxruntime computes double Shrink in float (1.8e308 - 0.5 "
              "gives inf); float64 is checked against the numpy reference by the node suite"),
    Case("ThresholdedRelu", FH, attrs={"alpha": 0.5}, opset=22),
    Case("Celu", ("float32",), tol="approx", opset=12),
    Case("Mod", INTS, "custom", inputs=_mod_inputs, opset=13, note="ORT_DIV_TRAP"),
    Case("Mod", FH, "binary", attrs={"fmod": 1}, opset=13, label="fmod"),
    Case("BitShift", ("uint8", "uint16", "uint32", "uint64"), "custom",
         attrs={"direction": "RIGHT"}, inputs=_shift_inputs, opset=11),
    Case("BitwiseAnd", INTS, "binary", opset=18), Case("BitwiseOr", INTS, "binary", opset=18),
    Case("BitwiseXor", INTS, "binary", opset=18), Case("BitwiseNot", INTS, opset=18),
    # positions (convert_positions.py) ----------------------------------------------------
    Case("ArgMax", NUM, "custom", attrs={"axis": 1}, inputs=_sp((4, 5), 40, True),
         no_nan=True, opset=13, note=ORT_NAN_ORDER),
    Case("ArgMin", NUM, "custom", attrs={"axis": 0, "select_last_index": 1},
         inputs=_sp((4, 5), 41, True), no_nan=True, opset=13, note=ORT_NAN_ORDER),
    Case("CumSum", F, "custom", "sum", {"exclusive": 1}, inputs=_sp((3, 5), 42),
         consts=_c(a=np.array(1, I64)), opset=14),
    Case("TopK", F, "custom", inputs=_sp((3, 6), 43, True), consts=_c(k=np.array([3], I64)),
         no_nan=True, n_out=2, opset=11, note=ORT_NAN_ORDER),
    Case("Trilu", ALL, "custom", inputs=_sp((4, 5), 44), opset=14),
    Case("Tile", ALL, "custom", inputs=_sp((2, 3), 45), consts=_c(r=np.array([2, 1], I64)),
         opset=13),
    Case("DepthToSpace", F, "custom", attrs={"blocksize": 2}, inputs=_sp((1, 4, 2, 3), 46),
         opset=13),
]

#: ops the frontend converts that need no special-value case, with the reason
NOT_APPLICABLE = {
    "Constant": "no inputs: a constant of the model",
}

#: converted ops whose special-value cases are not written yet; the ONNX node suite
#: (tests/test_onnx_node_suite.py, every case of onnx's backend tests) checks each of them
PENDING = frozenset({
    "Attention", "RotaryEmbedding", "RMSNormalization", "GroupNormalization",
    "LpNormalization", "MeanVarianceNormalization", "LRN", "SwiGLU", "Swish",
    "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "Hardmax", "CumProd", "OneHot",
    "EyeLike", "HannWindow", "HammingWindow", "BlackmanWindow", "SpaceToDepth",
    "CenterCropPad", "ReverseSequence", "ReduceProd", "Einsum", "LpPool", "QuantizeLinear",
    "DequantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
    "QLinearMatMul", "QLinearConv", "LinearAttention", "CausalConvWithState",
    "TensorScatter", "BitCast", "NonZero", "Compress", "Unique", "NonMaxSuppression",
    "GridSample", "AffineGrid", "RoiAlign", "Col2Im", "MaxUnpool", "Det", "DFT", "STFT",
    "DeformConv", "MelWeightMatrix",
})
