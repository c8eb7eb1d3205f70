"""`quantize(model_or_graph, calibration_inputs) -> Graph`: post-training int8 quantization.

Symmetric, per-tensor int8 for activations and weights (range [-127, 127], zero point 0);
every activation's scale is its largest magnitude over the calibration inputs (the float
graph run by the reference interpreter, `graph.interpreter.evaluate`, which `run_reference`
wraps) divided by 127. The rewrite, node by node:

- conv2d / dense with constant weights: int8 x int8 -> int32 (`out_dtype`), the bias as int32
  at scale s_x * s_w. A conv2d is followed by `requantize` to int8 at its output's scale
  (a following relu becomes the clip's lower bound 0: relu as int8 clip); the classifier's
  dense (whose output stays float) by `dequantize`.
- add of two quantized tensors (the residual): integer arithmetic only, a * k_a + b * k_b in
  int32 (k = s / min(s_a, s_b) * 2**8, rounded), then `requantize` (a following relu again
  as the clip).
- max_pool2d stays int8 (max commutes with a positive scale).
- everything else stays float (global average pooling, flatten, ...): a `dequantize` goes
  before it, a `quantize` after it when a quantized op reads its result.

`requantize_params(real, acc_bound)` picks the fixed-point (multiplier, shift) of each
requantize so that no int32 accumulator within `acc_bound` overflows a 32-bit product
(acc * multiplier + 2**(shift-1) < 2**31) and the multiplier fits a 16-bit signed ALU
immediate (VDLA's ALU): exactness on 32-bit hardware is then guaranteed, at the cost of a
multiplier of fewer bits where the accumulator bound is large (see docs/vdla.md)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ...errors import TensorforgeError
from ..ir import Graph, Node, Value

#: symmetric int8 range
QMAX = 127
#: bits of the multiplier: VDLA's ALU immediates are 16-bit signed
MULT_BITS = 15
#: fraction bits of the residual add's integer rescale
ADD_BITS = 8


def requantize_params(real: float, acc_bound: int, mult_bits: int = MULT_BITS
                      ) -> tuple[int, int]:
    """(multiplier, shift) with multiplier * 2**-shift ~= `real`, the most precise pair such
    that multiplier < 2**mult_bits and acc_bound * multiplier + 2**(shift-1) < 2**31 (no
    32-bit overflow for any |acc| <= acc_bound). `real` in (0, 1)."""
    if not 0 < real < 1:
        raise TensorforgeError(f"requantize scale {real} is not in (0, 1)")
    acc_bound = max(int(acc_bound), 1)
    for shift in range(62, 0, -1):
        mult = int(round(real * 2.0 ** shift))
        if 1 <= mult < (1 << mult_bits) and \
                acc_bound * mult + (1 << (shift - 1)) < (1 << 31):
            return mult, shift
    raise TensorforgeError(
        f"requantize scale {real:g} with accumulators up to {acc_bound} has no 32-bit "
        "fixed-point form (the scale is too small for the accumulator range); use more "
        "calibration data or a wider activation range")


def _scale(amax: float) -> float:
    return float(amax) / QMAX if amax > 0 else 1.0


def _quantize_array(a: np.ndarray, scale: float, dtype: str = "int8") -> np.ndarray:
    lim = QMAX if dtype == "int8" else 2 ** 31 - 1
    return np.clip(np.rint(a.astype("float64") / scale), -lim, lim).astype(dtype)


def _calibration_feeds(g: Graph, inputs: Any) -> list[dict[str, np.ndarray]]:
    if isinstance(inputs, (np.ndarray, Mapping)):
        inputs = [inputs]
    feeds = []
    for i, x in enumerate(inputs):
        if isinstance(x, np.ndarray):
            if len(g.inputs) != 1:
                raise TensorforgeError(f"calibration input {i} is one array but the graph has "
                                       f"{len(g.inputs)} inputs; give a dict by input name")
            x = {g.inputs[0].name: x}
        missing = [v.name for v in g.inputs if v.name not in x]
        if missing:
            raise TensorforgeError(f"calibration input {i} lacks graph input(s) "
                                   f"{', '.join(missing)}")
        feeds.append({v.name: np.asarray(x[v.name], v.dtype) for v in g.inputs})
    if not feeds:
        raise TensorforgeError("quantize needs at least one calibration input")
    return feeds


def calibrate(g: Graph, inputs: Iterable[Mapping[str, np.ndarray]]) -> dict[int, float]:
    """id(value) -> largest magnitude over the calibration inputs (float values only)."""
    from ..interpreter import evaluate

    amax: dict[int, float] = {}
    for feed in inputs:
        for v, a in evaluate(g, feed).items():
            if str(a.dtype).startswith("float") and a.size:
                amax[id(v)] = max(amax.get(id(v), 0.0), float(np.max(np.abs(a))))
    return amax


class _Quantizer:
    """Builds the quantized graph from the float one (see the module docstring)."""

    def __init__(self, g: Graph, amax: dict[int, float]):
        self.src, self.amax = g, amax
        self.out = Graph(g.name)
        self.consumers = g.consumers()
        self.f: dict[int, Value] = {}  # id(src value) -> float value in out
        self.q: dict[int, tuple[Value, float]] = {}  # id(src value) -> (int8 value, scale)

    # values between the float and the int8 domain ------------------------------------------
    def scale_of(self, v: Value) -> float:
        return _scale(self.amax.get(id(v), 0.0))

    def const(self, name: str, a: Any, dtype: str) -> Value:
        return self.out.add_const(name, np.asarray(a, dtype))

    def get_f(self, v: Value) -> Value:
        if v.is_const:
            return v
        if id(v) not in self.f:
            qv, s = self.q[id(v)]
            self.f[id(v)] = self.out.add("dequantize", qv, self.const(f"{v.name}_scale", s,
                                                                      "float32"),
                                         name=f"{v.name}_dequant")
        return self.f[id(v)]

    def get_q(self, v: Value) -> tuple[Value, float]:
        if id(v) not in self.q:
            s = self.scale_of(v)
            qv = self.out.add("quantize", self.get_f(v),
                              self.const(f"{v.name}_scale", s, "float32"),
                              to="int8", lo=-QMAX, hi=QMAX, name=f"{v.name}_quant")
            self.q[id(v)] = (qv, s)
        return self.q[id(v)]

    def sole_relu(self, v: Value) -> Node | None:
        """The relu that is `v`'s only reader (folded into the requantize's clip)."""
        readers = self.consumers.get(v, [])
        if len(readers) == 1 and readers[0].op == "relu" and \
                v not in self.src.outputs:
            return readers[0]
        return None

    def requantize(self, acc: Value, v: Value, real_in: float, bound: int, name: str) -> None:
        """acc (int32, at scale real_in) -> int8 at the scale of `v` (or of its relu)."""
        relu = self.sole_relu(v)
        last = relu.outputs[0] if relu is not None else v
        s_out = self.scale_of(last)
        mult, shift = requantize_params(real_in / s_out, bound)
        y = self.out.add("requantize", acc, multiplier=mult, shift=shift, to="int8",
                         lo=0 if relu is not None else -QMAX, hi=QMAX, name=name)
        self.q[id(v)] = (y, s_out)  # (the relu's input is only read by the relu)
        if relu is not None:
            self.q[id(last)] = (y, s_out)
            self.skip.add(id(relu))

    # rules ----------------------------------------------------------------------------------
    def conv_or_dense(self, n: Node) -> bool:
        w = n.inputs[1]
        if not w.is_const or not all(v.is_const for v in n.inputs[2:]) or \
                not str(w.dtype).startswith("float") or n.inputs[0].is_const:
            return False
        xq, sx = self.get_q(n.inputs[0])
        sw = _scale(float(np.max(np.abs(w.const))))
        wq = _quantize_array(w.const, sw)
        ins = [xq, self.out.add_const(f"{w.name}_q", wq)]
        bias = np.zeros(wq.shape[0], "int64")
        if len(n.inputs) > 2:
            bias = _quantize_array(n.inputs[2].const.reshape(-1), sx * sw, "int32")
            ins.append(self.out.add_const(f"{n.inputs[2].name}_q", bias))
        acc = self.out.add_node(n.op, ins, {**n.attrs, "out_dtype": "int32"},
                                name=n.name)[0]
        v = n.outputs[0]
        if n.op == "dense":  # the classifier: float logits
            self.f[id(v)] = self.out.add("dequantize", acc,
                                         self.const(f"{v.name}_scale", sx * sw, "float32"),
                                         name=f"{v.name}_dequant")
            return True
        per_out = np.abs(wq.reshape(wq.shape[0], -1).astype("int64")).sum(axis=1)
        bound = int(np.max(per_out * (QMAX + 1) + np.abs(bias.astype("int64"))))
        self.requantize(acc, v, sx * sw, bound, f"{n.name}_requant")
        return True

    def add(self, n: Node) -> bool:
        a, b = n.inputs
        if a.is_const or b.is_const or a.shape != b.shape or \
                id(a) not in self.q or id(b) not in self.q:
            return False
        (qa, sa), (qb, sb) = self.q[id(a)], self.q[id(b)]
        base = min(sa, sb) / 2 ** ADD_BITS
        terms = []
        bound = 0
        for qv, s in ((qa, sa), (qb, sb)):
            k = int(round(s / base))
            wide = self.out.add("cast", qv, to="int32", name=f"{n.name}_wide")
            terms.append(self.out.add("mul", wide, self.const(f"{n.name}_k", k, "int32"),
                                      name=f"{n.name}_scale"))
            bound += (QMAX + 1) * k
        acc = self.out.add("add", *terms, name=f"{n.name}_sum")
        self.requantize(acc, n.outputs[0], base, bound, f"{n.name}_requant")
        return True

    def max_pool(self, n: Node) -> bool:
        x = n.inputs[0]
        if id(x) not in self.q:
            return False
        qx, s = self.q[id(x)]
        y = self.out.add_node(n.op, [qx], dict(n.attrs), name=n.name)[0]
        self.q[id(n.outputs[0])] = (y, s)
        return True

    def relu(self, n: Node) -> bool:
        x = n.inputs[0]
        if id(x) not in self.q:
            return False
        qx, s = self.q[id(x)]
        y = self.out.add("maximum", qx, self.const(f"{n.name}_zero", 0, "int8"), name=n.name)
        self.q[id(n.outputs[0])] = (y, s)
        return True

    def keep_float(self, n: Node) -> None:
        ins = [self.get_f(v) for v in n.inputs]
        outs = self.out.add_node(n.op, ins, dict(n.attrs), name=n.name)
        for o, new in zip(n.outputs, outs):
            self.f[id(o)] = new

    def run(self) -> Graph:
        self.skip: set[int] = set()
        for v in self.src.inputs:
            self.f[id(v)] = self.out.add_input(v.name, v.shape, v.dtype)
        rules = {"conv2d": self.conv_or_dense, "dense": self.conv_or_dense, "add": self.add,
                 "max_pool2d": self.max_pool, "relu": self.relu}
        for n in self.src.nodes:
            if id(n) in self.skip:
                continue
            rule = rules.get(n.op)
            if rule is None or not rule(n):
                self.keep_float(n)
        self.out.outputs = [self.get_f(v) for v in self.src.outputs]
        return self.out


def prepare(g: Graph) -> Graph:
    """Types inferred, batch norms folded, constants folded: what quantization reads."""
    from .fold import fold_batch_norm, fold_constants
    from .simplify import copy_graph, eliminate_dead_code, infer_types

    return eliminate_dead_code(fold_constants(fold_batch_norm(infer_types(copy_graph(g)))))


def quantize(model_or_graph: Any, calibration_inputs: Any,
             input_shapes: dict[str, Any] | None = None) -> Graph:
    """The int8 graph of a float model (a `Graph`, or any model `tensorforge.compile` takes),
    scales calibrated on `calibration_inputs` (dicts by input name, or arrays for a model
    with one input). Compile the result for any target: `vdla -host=llvm` runs its
    convolutions and the classifier on VDLA."""
    from ...compiler.compile import load_graph

    g = model_or_graph if isinstance(model_or_graph, Graph) else \
        load_graph(model_or_graph, input_shapes)
    g = prepare(g)
    feeds = _calibration_feeds(g, calibration_inputs)
    return _Quantizer(g, calibrate(g, feeds)).run()


__all__ = ["calibrate", "quantize", "requantize_params"]
