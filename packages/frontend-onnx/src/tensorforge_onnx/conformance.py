"""Special-value conformance against ONNX Runtime: inputs full of NaN, +-inf, -0.0, denormals,
the extremes of every dtype and ordinary values, through one op at a time, compiled by
tensorforge and run by ONNX Runtime, compared as `TOLERANCES` says.

The op cases are in `conformance_cases.py`; the test is
`packages/frontend-onnx/tests/test_conformance.py`, and `python -m tensorforge_onnx.conformance`
prints the same report. Where ONNX Runtime itself departs from the ONNX spec or from IEEE (an
order-dependent NaN in its max reductions, C++ undefined behaviour in an integer overflow),
the case masks or drops those values and says why in `Case.note`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

FLOATS = ("float32", "float64", "float16")
SIGNED = ("int8", "int16", "int32", "int64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
INTS = SIGNED + UNSIGNED
ALL = FLOATS + INTS + ("bool",)

#: How outputs are compared, by the op's numerical nature. `rtol` is relative to ONNX
#: Runtime's value; `atol` is in units of the dtype's smallest normal number (a denormal result
#: may lose bits in either implementation); `scale` adds rtol x sum(|inputs|) along a reduction
#: (summation order: a sum of +-1e30 and ones is not defined to better than that).
#: NaN must be NaN, infinities must match exactly, in every class.
TOLERANCES: dict[str, dict[str, Any]] = {
    # data movement, comparisons, integer arithmetic, min/max/abs/neg/floor/ceil, casts,
    # IEEE basic operations (+ - * / sqrt are correctly rounded): bit for bit, and -0.0 vs
    # +0.0 too
    "exact": {"float32": 0.0, "float64": 0.0, "float16": 0.0, "atol": 0.0, "zero_sign": True},
    # a rounding or two more or less (a fused multiply-add, x * (1 / 6) for x / 6)
    "ulp": {"float32": 2.5e-7, "float64": 1e-15, "float16": 1e-3, "atol": 1.0},
    # transcendental functions: our vector polynomials (exp, tanh, sigmoid, erf: a few 1e-7)
    # and libm against ONNX Runtime's own approximations
    "approx": {"float32": 3e-6, "float64": 1e-12, "float16": 2e-3, "atol": 4.0},
    # ONNX Runtime's Sigmoid (MLAS's logistic) is off by up to 2.5e-5 (float, at -7.25) and
    # 1e-3 (double, at -30) where the result is small; ours is within an ulp of the exact
    # value there (test_ieee_semantics checks it against numpy in double)
    # and flushes results below ~1e-7 (float) / 1e-13 (double) to 0 ("abs", in value units)
    "ort_sigmoid": {"float32": 5e-5, "float64": 2e-3, "float16": 2e-3, "atol": 4.0,
                    "abs": {"float32": 1e-7, "float64": 1e-13, "float16": 1e-4}},
    # reductions and normalizations: summation order
    "sum": {"float32": 2e-6, "float64": 1e-14, "float16": 4e-3, "atol": 4.0, "scale": True},
    # dot products (matmul, conv, gemm, RNNs): rtol on |value| + rtol x max |output|
    "dense": {"float32": 1e-5, "float64": 1e-12, "float16": 4e-3, "atol": 4.0,
              "rel_max": True},
}


def specials(dtype: str) -> np.ndarray:
    """The values every case is built from, for one dtype."""
    d = np.dtype(dtype)
    if d.kind == "b":
        return np.array([True, False])
    if d.kind in "iu":
        info = np.iinfo(d)
        vals = [info.min, info.max, info.min + 1, info.max - 1, 0, 1, 2, 3, 7, 100,
                info.max // 2 + 1]
        if d.kind == "i":
            vals += [-1, -2, -3, -7, -100]
        return np.array(sorted(set(vals)), dtype=d)
    fi = np.finfo(d)
    tiny, den = float(fi.tiny), float(fi.smallest_subnormal)
    vals = [np.nan, np.inf, -np.inf, 0.0, -0.0, den, -den, tiny * 0.5, tiny, -tiny,
            float(fi.max), -float(fi.max), 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 1e-3,
            -7.25, 10.0, 30.0, -30.0, 100.0, -100.0]
    if d.itemsize >= 4:
        vals += [88.8, -87.5, -104.0, 1e30, -1e30, 1e-30]
    return np.array(vals, dtype=d)


def moderate(dtype: str) -> np.ndarray:
    """Specials without the finite extremes (for dot products, where the order of a sum
    decides whether 1e38 + 1e38 - 1e38 overflows)."""
    v = specials(dtype)
    if v.dtype.kind != "f":
        return v
    return v[~(np.isfinite(v) & (np.abs(v) > 1e3))]


def unary_values(dtype: str, no_nan: bool = False) -> np.ndarray:
    v = specials(dtype)
    return v[~np.isnan(v)] if no_nan and v.dtype.kind == "f" else v


def pair_values(dtype: str, no_nan: bool = False, values: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair of special values, as two flat arrays."""
    v = unary_values(dtype, no_nan) if values is None else values
    a, b = np.meshgrid(v, v, indexing="ij")
    return a.ravel().copy(), b.ravel().copy()


def sprinkle(shape: tuple[int, ...], dtype: str, seed: int, no_nan: bool = False,
             frac: float = 0.2) -> np.ndarray:
    """Ordinary values (standard normal, or small integers) with a fraction of the positions
    replaced by special values."""
    rng = np.random.default_rng(seed)
    d = np.dtype(dtype)
    if d.kind == "b":
        return rng.integers(0, 2, shape).astype(d)
    base = rng.standard_normal(shape) if d.kind == "f" else rng.integers(-5, 6, shape)
    out = base.astype(d) if d.kind != "u" else np.abs(base).astype(d)
    sp = moderate(dtype)
    if no_nan and d.kind == "f":
        sp = sp[~np.isnan(sp)]
    mask = rng.random(shape) < frac
    out[mask] = rng.choice(sp, int(mask.sum()))
    return out


# models -----------------------------------------------------------------------------------
def elem_type(dtype: str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def one_op_model(op: str, feeds: dict[str, np.ndarray], consts: dict[str, np.ndarray],
                 attrs: dict[str, Any], n_out: int = 1, opset: int = 17,
                 input_names: list[str] | None = None) -> onnx.ModelProto:
    """A model of one `op` node over `feeds` (graph inputs) and `consts` (initializers),
    in the order `input_names` (default: feeds then consts; "" for a skipped input)."""
    names = input_names if input_names is not None else [*feeds, *consts]
    outs = [f"out{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, name=f"{op.lower()}_0", **attrs)
    inputs = [helper.make_tensor_value_info(k, elem_type(str(v.dtype)), v.shape)
              for k, v in feeds.items()]
    g = helper.make_graph([node], f"conf_{op}", inputs,
                          [helper.make_value_info(o, onnx.TypeProto()) for o in outs],
                          [numpy_helper.from_array(v, k) for k, v in consts.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8 if opset <= 17 else 10
    return onnx.shape_inference.infer_shapes(m)


# comparison -------------------------------------------------------------------------------
@dataclass
class Mismatch:
    """Where and how an output differs from ONNX Runtime's."""

    output: int
    count: int
    detail: str

    def __str__(self) -> str:
        return f"output {self.output}: {self.count} element(s) differ; {self.detail}"


def compare(ours: np.ndarray, ref: np.ndarray, tol: str, inputs: list[np.ndarray] | None = None,
            mask: np.ndarray | None = None, output: int = 0, zero_sign: bool = True
            ) -> Mismatch | None:
    """None when `ours` matches ONNX Runtime's `ref` under tolerance class `tol`
    (`zero_sign=False`: -0.0 and +0.0 count as equal)."""
    if ours.shape != ref.shape or ours.dtype != ref.dtype:
        return Mismatch(output, ours.size, f"{ours.dtype}{list(ours.shape)} vs onnxruntime "
                                           f"{ref.dtype}{list(ref.shape)}")
    keep = np.ones(ours.shape, bool) if mask is None else np.broadcast_to(mask, ours.shape)
    if ours.dtype.kind != "f":
        bad = (ours != ref) & keep
        return _mismatch(output, bad, ours, ref)
    with np.errstate(all="ignore"):
        return _compare_floats(ours, ref, tol, inputs, keep, output, zero_sign)


def _compare_floats(ours: np.ndarray, ref: np.ndarray, tol: str,
                    inputs: list[np.ndarray] | None, keep: np.ndarray, output: int,
                    zero_sign: bool) -> Mismatch | None:
    t = TOLERANCES[tol]
    a, b = ours.astype("float64"), ref.astype("float64")
    nan_a, nan_b = np.isnan(a), np.isnan(b)
    bad = (nan_a != nan_b)
    fin = ~(nan_a | nan_b)
    inf = fin & (np.isinf(a) | np.isinf(b))
    bad |= inf & (a != b)
    fin &= ~inf
    rtol = t[str(ours.dtype)]
    atol = t["atol"] * float(np.finfo(ours.dtype).tiny)
    atol += t.get("abs", {}).get(str(ours.dtype), 0.0)
    allowed = atol + rtol * np.abs(b)
    if t.get("rel_max"):
        finite_b = np.abs(b[np.isfinite(b)])
        allowed = allowed + rtol * (finite_b.max() if finite_b.size else 0.0)
    if t.get("scale") and inputs:
        mags = [np.abs(x[np.isfinite(x)].astype("float64")).sum() for x in inputs
                if x.dtype.kind == "f"]
        allowed = allowed + rtol * max(mags, default=0.0)
    bad |= fin & (np.abs(a - b) > allowed)
    if t.get("zero_sign") and zero_sign:
        bad |= fin & (a == 0) & (b == 0) & (np.signbit(a) != np.signbit(b))
    return _mismatch(output, bad & keep, ours, ref)


def _mismatch(output: int, bad: np.ndarray, ours: np.ndarray, ref: np.ndarray
              ) -> Mismatch | None:
    if not bad.any():
        return None
    pos = tuple(int(i) for i in np.argwhere(bad)[0])
    return Mismatch(output, int(bad.sum()),
                    f"first at {pos}: ours {ours[pos]!r}, onnxruntime {ref[pos]!r}")


# running ----------------------------------------------------------------------------------
@dataclass
class Outcome:
    """One (case, dtype): "pass", "fail" (a mismatch or our error), "ref" (ONNX Runtime has
    no kernel for the dtype: the compiled model matched our numpy reference instead), or
    "invalid" (the op's ONNX schema does not allow the dtype: ONNX Runtime and our model
    validation both refuse the model)."""

    status: str
    detail: str = ""
    mismatches: list[Mismatch] = field(default_factory=list)


def ort_session(m: onnx.ModelProto) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def run_case(m: onnx.ModelProto, feeds: dict[str, np.ndarray], tol: str,
             mask: Callable[..., Any] | None = None, target: str = "llvm -num-threads=1",
             zero_sign: bool = True) -> Outcome:
    """Compile `m` with tensorforge, run it and ONNX Runtime on `feeds`, compare."""
    import tensorforge

    status, note = "pass", ""
    try:
        sess = ort_session(m)
        with np.errstate(all="ignore"):
            want = sess.run(None, feeds)
    except Exception as e:  # noqa: BLE001  (onnxruntime's NOT_IMPLEMENTED / INVALID_GRAPH)
        status, note = "ref", f"onnxruntime: {' '.join(str(e).split())[:120]}"
        want = None
    try:
        cm = tensorforge.compile(m, target=target)
        got = cm.run(feeds)
        if want is None:  # no onnxruntime kernel: our numpy reference instead
            from tensorforge.graph import run_reference

            from .frontend import load

            g = load(m)
            with np.errstate(all="ignore"):
                want = run_reference(g, {v.name: feeds[v.name] for v in g.inputs})
    except Exception as e:  # noqa: BLE001  (any error of ours is a failure to report)
        from .errors import InvalidModelError

        detail = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        if want is None and isinstance(e, InvalidModelError):
            # a dtype the op's ONNX schema does not allow: both refuse the model
            return Outcome("invalid", f"{detail}; {note}")
        return Outcome("fail", detail)
    keep = mask(feeds) if mask is not None else None
    inputs = list(feeds.values())
    bad = [mm for i, (a, b) in enumerate(zip(got, want))
           if (mm := compare(np.asarray(a), np.asarray(b), tol, inputs, keep, i,
                             zero_sign)) is not None]
    return Outcome("fail" if bad else status, "; ".join(map(str, bad)) or note, bad)


def main() -> int:
    """Print the conformance table (every case and dtype)."""
    from .conformance_cases import CASES, build

    fails = 0
    for case in CASES:
        for dtype in case.dtypes:
            m, feeds = build(case, dtype)
            out = run_case(m, feeds, case.tol, case.mask, zero_sign=case.zero_sign)
            fails += out.status == "fail"
            print(f"{case.name:28s} {dtype:8s} {out.status:5s} {out.detail}")
    print(f"{fails} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    raise SystemExit(main())
