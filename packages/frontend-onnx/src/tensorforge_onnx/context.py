"""The conversion context: ONNX value names to graph values, attribute access, and `emit`,
which appends a graph node or, when every input is a constant, folds it at import with the
op's numpy reference (so Shape -> Gather -> Concat -> Reshape chains become static).

A *specialized* input (`load(..., specialize={name: array})`) stays a graph input computed on
at run time, but its value is also known at import: shape arguments computed from it (a
Reshape's shape fed as an input) are read from `Context.known`, the way a JIT specializes on
shape arguments. Nodes that only compute such shapes become dead code."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from tensorforge.errors import TensorforgeError
from tensorforge.graph import Graph, Value, get_op
from tensorforge.graph.ir import checked_types, infer_node
from tensorforge.graph.limits import check_tensor_bytes

from .errors import DynamicShapeError, UnsupportedAttributeError


def np_dtype(elem_type: int) -> str:
    """ONNX TensorProto element type -> numpy dtype name."""
    return str(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)))


def f32(value: Any) -> float:
    """A float attribute's value as ONNX stores it (float32): a default written as 1e-5 or
    0.01 must be float32's 1e-5, as in ONNX Runtime, or double kernels differ in the 13th
    digit (BatchNormalization's epsilon) or in denormal results (LeakyRelu's alpha)."""
    return float(np.float32(value))


def node_label(node: onnx.NodeProto) -> str:
    return f"{node.op_type} node {node.name or node.output[0]!r}"


class Context:
    """Per-model conversion state shared by every converter."""

    def __init__(self, graph: Graph, opset: int, model_label: str):
        self.g = graph
        self.opset = opset
        self.model_label = model_label
        self.values: dict[str, Value] = {}
        self.node: onnx.NodeProto | None = None
        self.op_version = opset  # since_version of the current node's schema
        self.fresh: set[int] = set()  # ids of values created while converting self.node
        self.known: dict[int, np.ndarray] = {}  # run-time values whose value import knows
        # values of data-dependent size: id -> (the int64 count value, axis); see `sized`
        self.sized: dict[int, tuple[Value, int]] = {}

    # access ------------------------------------------------------------------------------
    def has(self, node: onnx.NodeProto, i: int) -> bool:
        return i < len(node.input) and node.input[i] != ""

    def get(self, node: onnx.NodeProto, i: int) -> Value | None:
        """The graph value of input i, or None for a missing optional input."""
        return self.values[node.input[i]] if self.has(node, i) else None

    def const(self, node: onnx.NodeProto, i: int, what: str = "") -> np.ndarray | None:
        """Input i as a numpy array; it must be known at import (a constant, folded, or
        computed from specialized inputs)."""
        v = self.get(node, i)
        if v is None:
            return None
        if id(v) in self.known:
            return self.known[id(v)]
        if not v.is_const:
            raise DynamicShapeError(
                f"{node_label(node)} in {self.model_label} takes its {what or f'input {i}'} "
                f"from {node.input[i]!r}, which is only known at run time; tensorforge needs "
                "it at import time (static shapes). Export the model with constant "
                "shapes/sizes (e.g. torch.onnx.export with fixed input sizes, or "
                "onnx-simplifier), or pass input_shapes so shape computations fold.",
                node.input[i])
        return v.const

    def attrs(self, node: onnx.NodeProto) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for a in node.attribute:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [s.decode() for s in v]
            elif isinstance(v, onnx.TensorProto):
                v = numpy_helper.to_array(v)
            out[a.name] = v
        return out

    def fail(self, node: onnx.NodeProto, what: str, hint: str = "") -> UnsupportedAttributeError:
        msg = (f"{node_label(node)} in {self.model_label} (opset {self.opset}) uses {what}, "
               "which the tensorforge ONNX frontend does not support")
        return UnsupportedAttributeError(msg + (f"; {hint}" if hint else "."))

    # construction ------------------------------------------------------------------------
    def _name(self, suffix: str) -> str:
        n = self.node
        base = (n.name or n.output[0]) if n is not None else "const"
        return f"{base}:{suffix}" if suffix else base

    def check_size(self, shape: Any, dtype: Any, what: str) -> tuple[int, ...]:
        """`shape` as ints, after checking that a `dtype` tensor of it may be allocated
        (`tensorforge.graph.limits`): call before making a constant with numpy."""
        shape = tuple(int(d) for d in shape)
        check_tensor_bytes(shape, np.dtype(dtype).itemsize,
                           f"{what} of {node_label(self.node) if self.node else 'a constant'}")
        return shape

    def constant(self, array: Any, name: str = "", dtype: str | None = None) -> Value:
        v = self.g.add_const(self._name(name or "const"), np.asarray(array, dtype=dtype))
        self.fresh.add(id(v))
        return v

    def emit_multi(self, op: str, inputs: list[Value], attrs: dict[str, Any] | None = None,
                   ) -> list[Value]:
        attrs = dict(attrs or {})
        if inputs and all(v.is_const for v in inputs):
            d = get_op(op)
            what = f"{op} (folded at import) of {self._name('')!r}"
            types = checked_types(infer_node(d, inputs, attrs, what), what)
            try:
                res = d.reference([v.const for v in inputs], attrs)
            except Exception as e:  # noqa: BLE001 - numpy on constants the inference allowed
                raise TensorforgeError(f"{what} could not be evaluated on its constant "
                                       f"inputs ({type(e).__name__}: {e})") from e
            return [self.constant(np.asarray(r).astype(dt).reshape(shape), op)
                    for r, (shape, dt) in zip(res, types)]
        return self.emit_node(op, inputs, attrs)

    def emit_node(self, op: str, inputs: list[Value], attrs: dict[str, Any]) -> list[Value]:
        """A graph node even when every input is a constant (`emit_multi` folds those);
        its value is still known at import."""
        outs = self.g.add_node(op, inputs, attrs, name=self._name(op))
        self.fresh.update(id(v) for v in outs)
        if inputs and all(v.is_const or id(v) in self.known for v in inputs):
            vals = get_op(op).reference([v.const if v.is_const else self.known[id(v)]
                                         for v in inputs], attrs)
            for o, r in zip(outs, vals):
                self.known[id(o)] = np.asarray(r).astype(o.dtype).reshape(o.shape)
        return outs

    def mark_sized(self, v: Value, count: Value, axis: int) -> Value:
        """`v` holds a bound of a data-dependent size (NonZero ...) of which the first
        `count` entries along `axis` are the result; it may only be a model output."""
        self.sized[id(v)] = (count, axis)
        return v

    def value_of(self, v: Value) -> np.ndarray | None:
        """The value of `v` if import knows it (constant or specialized), else None."""
        return v.const if v.is_const else self.known.get(id(v))

    def emit(self, op: str, *inputs: Value, **attrs: Any) -> Value:
        return self.emit_multi(op, list(inputs), attrs)[0]

    # helpers used by several converters --------------------------------------------------
    def reshape(self, x: Value, shape: tuple[int, ...]) -> Value:
        shape = tuple(int(s) for s in shape)
        return x if tuple(x.shape) == shape else self.emit("reshape", x, shape=shape)

    def cast(self, x: Value, dtype: str) -> Value:
        return x if x.dtype == dtype else self.emit("cast", x, to=dtype)

    def scalar(self, value: float, like: Value) -> Value:
        shape = (1,) if like.shape else ()
        return self.constant(np.full(shape, value, dtype=like.dtype), "scalar")
