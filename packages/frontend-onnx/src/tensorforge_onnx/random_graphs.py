"""Random ONNX graphs for differential testing against ONNX Runtime: a chain of ops over random
shapes, attributes and dtypes, built with onnx.helper from one integer seed (so a failure is
reproduced by its seed alone; see `tests/test_differential.py`).

Each step applies an op that fits the current value (its dtype and rank); binary ops take a
constant or a new input of a broadcastable shape; some intermediate values become outputs too
(multi-output fused groups). Inputs are finite; ops outside their domain are guarded (Log of
|x| + 1, Exp of a clipped value, Div by |b| + 1), so NaN does not appear and the comparison is
about arithmetic, not ONNX Runtime's NaN ordering (the special values are the conformance
test's job). Discontinuous ops (Floor, Ceil, float -> int casts, comparisons) only follow
values computed exactly (data movement, min/max, integer arithmetic): after a rounding
difference they would turn 1e-7 into 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

I64 = "int64"


@dataclass
class V:
    """A value of the graph being built: name, shape, dtype, and whether it is computed
    exactly (bit-identical in any correct implementation)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    exact: bool = True
    f32: bool = False  # rounded in float32 somewhere on the way (float32 tolerance)


@dataclass
class RandomGraph:
    seed: int
    rng: np.random.Generator
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    feeds: dict[str, np.ndarray] = field(default_factory=dict)
    inits: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: dict[str, bool] = field(default_factory=dict)  # name -> computed exactly
    f32: dict[str, bool] = field(default_factory=dict)  # value name -> rounded in float32
    steps: list[str] = field(default_factory=list)
    _n: int = 0

    def fresh(self, base: str) -> str:
        self._n += 1
        return f"{base}{self._n}"

    def data(self, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        if np.dtype(dtype).kind == "f":
            return self.rng.standard_normal(shape).astype(dtype)
        if dtype == "bool":
            return self.rng.integers(0, 2, shape).astype(bool)
        return self.rng.integers(-20, 21, shape).astype(dtype)

    def input(self, shape: tuple[int, ...], dtype: str) -> V:
        name = self.fresh("in")
        self.feeds[name] = self.data(shape, dtype)
        self.f32[name] = dtype == "float32"
        return V(name, shape, dtype, True, dtype == "float32")

    def const(self, arr: Any) -> str:
        name = self.fresh("c")
        self.inits[name] = np.asarray(arr)
        return name

    def op(self, op: str, ins: list[str], shape: tuple[int, ...], dtype: str, exact: bool,
           n_out: int = 1, **attrs: Any) -> V:
        outs = [self.fresh(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, ins, outs, name=self.fresh("n"), **attrs))
        f32 = dtype == "float32" or any(self.f32.get(i, False) for i in ins)
        self.f32[outs[0]] = f32
        return V(outs[0], shape, dtype, exact, f32)

    def model(self, opset: int = 17) -> onnx.ModelProto:
        def vi(name: str, a: np.ndarray) -> onnx.ValueInfoProto:
            return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(a.dtype),
                                                 a.shape)

        g = helper.make_graph(self.nodes, f"random_{self.seed}",
                              [vi(k, v) for k, v in self.feeds.items()],
                              [helper.make_value_info(o, onnx.TypeProto())
                               for o in self.outputs],
                              [numpy_helper.from_array(v, k) for k, v in self.inits.items()])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        return onnx.shape_inference.infer_shapes(m, strict_mode=True)


Step = Callable[[RandomGraph, V], "V | None"]
FLOAT = ("float32", "float64")


def _is_float(v: V) -> bool:
    return v.dtype in FLOAT


ANY = FLOAT + ("int32", "int64")
F32 = ("float32",)  # ops ONNX Runtime implements for float only


def _unary(op: str, exact: bool, dtypes: tuple[str, ...] = FLOAT, **attrs: Any) -> Step:
    def step(r: RandomGraph, v: V) -> V | None:
        if v.dtype not in dtypes:
            return None
        return r.op(op, [v.name], v.shape, v.dtype, v.exact and exact, **attrs)
    return step


def _other(r: RandomGraph, v: V, dtype: str | None = None) -> tuple[str, tuple[int, ...]]:
    """A second operand broadcastable against v: a constant or a new input."""
    dtype = dtype or v.dtype
    shape = tuple(s if r.rng.random() < 0.7 else 1 for s in v.shape)
    if r.rng.random() < 0.3 and shape:
        shape = shape[int(r.rng.integers(0, len(shape) + 1)):]  # fewer dims
    if r.rng.random() < 0.5:
        return r.const(r.data(shape, dtype)), shape
    return r.input(shape, dtype).name, shape


def _binary(op: str, exact_float: bool, kinds: str = "fi") -> Step:
    def step(r: RandomGraph, v: V) -> V | None:
        kind = "f" if _is_float(v) else "i" if v.dtype != "bool" else "b"
        if kind not in kinds:
            return None
        b, _ = _other(r, v)
        if op == "Div":  # |b| + 1: no division by zero
            one = r.const(np.ones((), v.dtype))
            b = r.op("Add", [r.op("Abs", [b], (), v.dtype, True).name, one], (), v.dtype,
                     True).name
        exact = v.exact and (kind != "f" or exact_float)
        if op == "Mul" and kind == "i":  # keep integer products small
            v = _clip(r, v, -100, 100)
        return r.op(op, [v.name, b], v.shape, v.dtype, exact)
    return step


def _clip(r: RandomGraph, v: V, lo: float, hi: float) -> V:
    lo_c, hi_c = r.const(np.array(lo, v.dtype)), r.const(np.array(hi, v.dtype))
    return r.op("Clip", [v.name, lo_c, hi_c], v.shape, v.dtype, v.exact)


def _guarded(kind: str) -> Step:
    def step(r: RandomGraph, v: V) -> V | None:
        if not _is_float(v):
            return None
        if kind == "Exp":
            return r.op("Exp", [_clip(r, v, -10, 10).name], v.shape, v.dtype, False)
        a = r.op("Abs", [v.name], v.shape, v.dtype, v.exact)
        if kind == "Sqrt":
            return r.op("Sqrt", [a.name], v.shape, v.dtype, False)
        one = r.const(np.ones((), v.dtype))
        a1 = r.op("Add", [a.name, one], v.shape, v.dtype, False)
        return r.op("Log", [a1.name], v.shape, v.dtype, False)
    return step


def _reduce(op: str) -> Step:
    def step(r: RandomGraph, v: V) -> V | None:
        if not v.shape or v.dtype == "bool" or (op in ("ReduceL2", "ReduceMean")
                                                 and not _is_float(v)):
            return None
        nd = len(v.shape)
        k = int(r.rng.integers(1, nd + 1))
        axes = sorted(int(a) for a in r.rng.choice(nd, k, replace=False))
        keep = int(r.rng.integers(0, 2))
        shape = tuple(1 if d in axes else s for d, s in enumerate(v.shape)
                      if keep or d not in axes)
        exact = v.exact and (op in ("ReduceMax", "ReduceMin") or not _is_float(v))
        if op == "ReduceSum":
            return r.op(op, [v.name, r.const(np.array(axes, I64))], shape, v.dtype, exact,
                        keepdims=keep)
        return r.op(op, [v.name], shape, v.dtype, exact, axes=axes, keepdims=keep)
    return step


def _softmax(op: str) -> Step:
    def step(r: RandomGraph, v: V) -> V | None:
        if not _is_float(v) or not v.shape:
            return None
        return r.op(op, [v.name], v.shape, v.dtype, False,
                    axis=int(r.rng.integers(-len(v.shape), len(v.shape))))
    return step


def _transpose(r: RandomGraph, v: V) -> V | None:
    if len(v.shape) < 2:
        return None
    perm = [int(p) for p in r.rng.permutation(len(v.shape))]
    return r.op("Transpose", [v.name], tuple(v.shape[p] for p in perm), v.dtype, v.exact,
                perm=perm)


def _reshape(r: RandomGraph, v: V) -> V | None:
    n = int(np.prod(v.shape))
    dims: list[int] = []
    while n > 1 and len(dims) < 3:
        divs = [d for d in range(2, n + 1) if n % d == 0]
        d = int(r.rng.choice(divs))
        dims.append(d)
        n //= d
    dims = dims or [1]
    if n > 1:
        dims.append(n)
    shape = tuple(dims)
    spec = list(shape)
    if len(spec) > 1 and r.rng.random() < 0.5:
        spec[int(r.rng.integers(0, len(spec)))] = -1
    return r.op("Reshape", [v.name, r.const(np.array(spec, I64))], shape, v.dtype, v.exact)


def _slice(r: RandomGraph, v: V) -> V | None:
    if not v.shape or max(v.shape) < 2:
        return None
    d = int(r.rng.integers(0, len(v.shape)))
    n = v.shape[d]
    step = int(r.rng.choice([1, 1, 2, -1]))
    if step > 0:
        start = int(r.rng.integers(0, n))
        end = int(r.rng.integers(start + 1, n + 1))
        size = -(-(end - start) // step)
    else:
        start = int(r.rng.integers(0, n))
        end = int(r.rng.integers(-n - 1, start)) if start > 0 else -n - 1
        e = max(end + n if end < 0 else end, -1)
        size = max(0, -(-(start - e) // -step))
    if size == 0:
        return None
    shape = tuple(size if k == d else s for k, s in enumerate(v.shape))
    ins = [v.name, r.const(np.array([start], I64)), r.const(np.array([end], I64)),
           r.const(np.array([d], I64)), r.const(np.array([step], I64))]
    return r.op("Slice", ins, shape, v.dtype, v.exact)


def _concat(r: RandomGraph, v: V) -> V | None:
    if not v.shape:
        return None
    d = int(r.rng.integers(0, len(v.shape)))
    other = r.input(v.shape, v.dtype)
    shape = tuple(2 * s if k == d else s for k, s in enumerate(v.shape))
    return r.op("Concat", [v.name, other.name], shape, v.dtype, v.exact, axis=d)


def _pad(r: RandomGraph, v: V) -> V | None:
    if not v.shape or v.dtype == "bool":
        return None
    mode = str(r.rng.choice(["constant", "edge", "reflect"]))
    nd = len(v.shape)
    top = [2 if mode != "reflect" else min(2, s - 1) for s in v.shape]  # reflect: pad < dim
    pads = [int(r.rng.integers(0, t + 1)) for t in top + top]
    shape = tuple(s + pads[k] + pads[k + nd] for k, s in enumerate(v.shape))
    return r.op("Pad", [v.name, r.const(np.array(pads, I64))], shape, v.dtype, v.exact,
                mode=mode)


def _gather(r: RandomGraph, v: V) -> V | None:
    if not v.shape:
        return None
    d = int(r.rng.integers(0, len(v.shape)))
    n = v.shape[d]
    idx_shape = tuple(int(s) for s in r.rng.integers(1, 4, int(r.rng.integers(0, 3))))
    idx = r.rng.integers(-n, n, idx_shape).astype(I64)
    if r.rng.random() < 0.5:
        i = r.const(idx)
    else:
        i = r.input(idx_shape, I64).name
        r.feeds[i] = idx
    shape = v.shape[:d] + idx_shape + v.shape[d + 1:]
    return r.op("Gather", [v.name, i], shape, v.dtype, v.exact, axis=d)


def _scatter(r: RandomGraph, v: V) -> V | None:
    if not v.shape or v.dtype == "bool":
        return None
    d = int(r.rng.integers(0, len(v.shape)))
    ishape = tuple(int(r.rng.integers(1, s + 1)) for s in v.shape)
    idx = r.rng.integers(-v.shape[d], v.shape[d], ishape).astype(I64)
    upd = r.input(ishape, v.dtype)
    return r.op("ScatterElements", [v.name, r.const(idx), upd.name], v.shape, v.dtype,
                v.exact, axis=d)


def _matmul(r: RandomGraph, v: V) -> V | None:
    if not _is_float(v) or len(v.shape) < 2:
        return None
    n = int(r.rng.integers(1, 6))
    w = r.const(r.data((v.shape[-1], n), v.dtype) * 0.5)
    return r.op("MatMul", [v.name, w], v.shape[:-1] + (n,), v.dtype, False)


def _compare_where(r: RandomGraph, v: V) -> V | None:
    """Where(Greater(v, b), v, c): a bool intermediate, only on exactly computed values."""
    if not v.exact or v.dtype == "bool":
        return None
    b, _ = _other(r, v)
    cond = r.op(str(r.rng.choice(["Greater", "Less", "Equal"])), [v.name, b], v.shape, "bool",
                True)
    if r.rng.random() < 0.3:
        cond = r.op("Not", [cond.name], v.shape, "bool", True)
    c, _ = _other(r, v)
    return r.op("Where", [cond.name, v.name, c], v.shape, v.dtype, True)


def _cast(r: RandomGraph, v: V) -> V | None:
    if v.dtype == "bool":
        return None
    if _is_float(v):
        if not v.exact:
            to = "float64" if v.dtype == "float32" else "float32"
        else:
            to = str(r.rng.choice(["int32", "int64", "float64", "float32"]))
    else:
        to = str(r.rng.choice(["float32", "float64", "int32", "int64"]))
    exact = v.exact and not (np.dtype(to).itemsize < np.dtype(v.dtype).itemsize
                             and np.dtype(to).kind == "f")
    return r.op("Cast", [v.name], v.shape, to, exact,
                to=helper.np_dtype_to_tensor_dtype(np.dtype(to)))


def _pool(op: str) -> Step:
    def step(r: RandomGraph, v: V) -> V | None:
        if v.dtype not in (FLOAT if op == "MaxPool" else F32) or len(v.shape) != 4 or \
                min(v.shape[2:]) < 2:
            return None
        k = 2
        shape = v.shape[:2] + tuple(s - k + 1 for s in v.shape[2:])
        return r.op(op, [v.name], shape, v.dtype, v.exact and op == "MaxPool",
                    kernel_shape=[k, k])
    return step


def _conv(r: RandomGraph, v: V) -> V | None:
    if v.dtype != "float32" or len(v.shape) != 4:
        return None
    o = int(r.rng.integers(1, 5))
    w = r.const(r.data((o, v.shape[1], 3, 3), v.dtype) * 0.3)
    return r.op("Conv", [v.name, w], (v.shape[0], o) + v.shape[2:], v.dtype, False,
                pads=[1, 1, 1, 1])


#: steps that turn a rounding difference into a jump: only on exactly computed values
DISCONTINUOUS: list[Step] = [_unary("Floor", True), _unary("Ceil", True)]
STEPS: list[Step] = [
    _unary("Relu", True, FLOAT + ("int32",)), _unary("Abs", True, ANY),
    _unary("Neg", True, ANY), _unary("Sigmoid", False), _unary("Tanh", False),
    _unary("Erf", False, F32), _unary("Softplus", False, F32),
    _unary("Elu", False, F32, alpha=0.7), _unary("LeakyRelu", False, alpha=0.2),
    _unary("HardSigmoid", False, F32),
    *DISCONTINUOUS, _guarded("Exp"), _guarded("Log"), _guarded("Sqrt"),
    _binary("Add", False), _binary("Sub", False), _binary("Mul", False),
    _binary("Max", True), _binary("Min", True), _binary("Div", False),
    _reduce("ReduceSum"), _reduce("ReduceMean"), _reduce("ReduceMax"), _reduce("ReduceMin"),
    _reduce("ReduceL2"), _softmax("Softmax"), _softmax("LogSoftmax"),
    _transpose, _reshape, _slice, _concat, _pad, _gather, _scatter, _matmul,
    _compare_where, _cast, _pool("MaxPool"), _pool("AveragePool"), _conv,
]


def build(seed: int, max_steps: int = 6) -> tuple[RandomGraph, onnx.ModelProto]:
    """The random graph of `seed` (its `steps` name what each step applied)."""
    r = RandomGraph(seed, np.random.default_rng(seed))
    rank = int(r.rng.integers(0, 5))
    shape = tuple(int(s) for s in r.rng.integers(1, 6, rank))
    dtype = str(r.rng.choice(["float32", "float32", "float32", "float64", "int32", "int64"]))
    v = r.input(shape, dtype)
    for _ in range(int(r.rng.integers(1, max_steps + 1))):
        for _attempt in range(20):
            step = STEPS[int(r.rng.integers(0, len(STEPS)))]
            if step in DISCONTINUOUS and not v.exact:
                continue
            out = step(r, v)
            if out is not None:
                r.steps.append(r.nodes[-1].op_type)
                if r.rng.random() < 0.25 and v.name not in r.feeds:
                    r.outputs[v.name] = v.exact  # an intermediate read outside its group
                v = out
                break
    if v.name in r.feeds:  # nothing applied: at least one node
        v = r.op("Identity", [v.name], v.shape, v.dtype, True)
    r.outputs[v.name] = v.exact
    return r, r.model()
