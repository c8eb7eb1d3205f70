"""The conversion context: TensorFlow tensor references to what they hold, attribute access,
and the layout of each value.

A reference holds an *entry*: a graph `Value` in TensorFlow's own layout; an `Nchw`, a 4-D
NHWC tensor stored as NCHW in the graph (the graph's convolutions and pools are NCHW, and the
llvm layout pass blocks NCHW further); or a `TensorList` (a Python list of entries: TensorFlow's
TensorArray, only ever indexed by constants once loops are unrolled). Converters take inputs in
the layout they want (`value`: TensorFlow's, `nchw`: channels second); the transposes this
needs are made once per value, and not at all when only axes of size 1 move."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from tensorforge.graph import Graph, Value
from tensorforge.graph.builder import GraphBuilder

from .errors import DynamicShapeError, UnsupportedAttributeError
from .graphdef import data_inputs
from .loader import TFModel

NHWC_TO_NCHW = (0, 3, 1, 2)
NCHW_TO_NHWC = (0, 2, 3, 1)
#: TensorFlow axis of a 4-D NHWC tensor -> its axis in the NCHW graph value
STORAGE_AXIS = (0, 2, 3, 1)


@dataclass(frozen=True, eq=False)
class Nchw:
    """A 4-D NHWC TensorFlow tensor whose graph value holds it as NCHW."""

    value: Value

    @property
    def shape(self) -> tuple[int, ...]:
        n, c, h, w = self.value.shape
        return (n, h, w, c)

    @property
    def dtype(self) -> str:
        return self.value.dtype


@dataclass(frozen=True, eq=False)
class TensorList:
    """A TensorFlow TensorList (TensorArray): its items (None: not written yet)."""

    items: tuple[Any, ...]
    dtype: str
    element_shape: tuple[int, ...] | None = None

    def set(self, index: int, item: Any) -> TensorList:
        items = list(self.items)
        if index >= len(items):  # a list that grows (TensorListSetItem past the end)
            items += [None] * (index + 1 - len(items))
        items[index] = item
        return replace(self, items=tuple(items))


Entry = Value | Nchw | TensorList


def shape_of(e: Entry) -> tuple[int, ...]:
    """The TensorFlow shape of a tensor entry."""
    if isinstance(e, TensorList):
        raise UnsupportedAttributeError("a TensorList used as a tensor")
    return tuple(e.shape)


def node_label(node: Any) -> str:
    return f"{node.op} node {node.name!r}"


def np_dtype(dt_enum: int) -> str:
    """TensorFlow DataType enum -> numpy dtype name."""
    from tensorflow.python.framework import dtypes

    d = dtypes.as_dtype(dt_enum)
    if d.name == "bfloat16" or d.name.startswith(("resource", "variant", "string")):
        raise UnsupportedAttributeError(f"the element type {d.name}")
    return np.dtype(d.as_numpy_dtype).name


class Context(GraphBuilder):
    """Per-model conversion state shared by every converter."""

    def __init__(self, graph: Graph, model: TFModel):
        super().__init__(graph)
        self.model = model
        self.label = model.label
        self.values: dict[str, Entry] = {}  # canonical tensor reference -> entry
        self.node: Any = None
        self.prefix = ""  # names of a called function's nodes: caller node/iteration/
        self._to_tf: dict[int, Value] = {}
        self._to_nchw: dict[int, Value] = {}

    def _name(self, suffix: str) -> str:
        base = self.prefix + (self.node.name if self.node is not None else "const")
        return f"{base}:{suffix}" if suffix else base

    # inputs ------------------------------------------------------------------------------
    def n_inputs(self, node: Any) -> int:
        return len(data_inputs(node))

    def entry(self, node: Any, i: int) -> Entry:
        ref = data_inputs(node)[i]
        if ref not in self.values:
            raise UnsupportedAttributeError(f"{node_label(node)} reads {ref!r}, which was not "
                                            "converted (an output of an op with fewer results?)")
        return self.values[ref]

    def value(self, node: Any, i: int) -> Value:
        """Input i as a graph value in TensorFlow's layout."""
        return self.tf(self.entry(node, i))

    def nchw(self, node: Any, i: int) -> Value:
        """Input i (4-D, NHWC to TensorFlow) as an NCHW graph value."""
        return self.to_nchw(self.entry(node, i))

    def const(self, node: Any, i: int, what: str = "") -> np.ndarray:
        """Input i as a numpy array; it must be known at import (a constant or folded)."""
        v = self.value(node, i)
        if not v.is_const:
            ref = data_inputs(node)[i]
            raise DynamicShapeError(
                f"{node_label(node)} in {self.label} takes its {what or f'input {i}'} from "
                f"{ref!r}, which is only known at run time; tensorforge needs it at import "
                "(static shapes and sizes). Fix the input shapes (input_shapes=...) so shape "
                "computations fold, or save the model with static sizes.", ref)
        return v.const

    def attr(self, node: Any, name: str, default: Any = None) -> Any:
        if name not in node.attr:
            return default
        a = node.attr[name]
        kind = a.WhichOneof("value")
        if kind == "list":
            lst = a.list
            for f in ("i", "f", "s", "b", "type", "shape", "func", "tensor"):
                if len(getattr(lst, f)):
                    vals = list(getattr(lst, f))
                    return [v.decode() for v in vals] if f == "s" else vals
            return []
        if kind == "s":
            return a.s.decode()
        if kind == "tensor":
            from tensorflow import make_ndarray

            return make_ndarray(a.tensor)
        if kind == "func":
            return a.func.name
        return getattr(a, kind) if kind else default

    def dtype(self, node: Any, name: str) -> str:
        return np_dtype(node.attr[name].type)

    def fail(self, node: Any, what: str, hint: str = "") -> UnsupportedAttributeError:
        msg = (f"{node_label(node)} in {self.label} uses {what}, which the tensorforge "
               "TensorFlow frontend does not support")
        return UnsupportedAttributeError(msg + (f"; {hint}" if hint else "."))

    # layouts -----------------------------------------------------------------------------
    def tf(self, e: Entry) -> Value:
        """An entry in TensorFlow's layout (an Nchw transposed back, once)."""
        if isinstance(e, Value):
            return e
        if isinstance(e, Nchw):
            key = id(e.value)
            if key not in self._to_tf:
                self._to_tf[key] = self.transpose(e.value, NCHW_TO_NHWC)
            return self._to_tf[key]
        raise self.fail(self.node, "a TensorList where a tensor is expected")

    def to_nchw(self, e: Entry) -> Value:
        if isinstance(e, Nchw):
            return e.value
        v = self.tf(e)
        if len(v.shape) != 4:
            raise self.fail(self.node, f"a rank-{len(v.shape)} input where NHWC data (rank 4) "
                            "is expected")
        key = id(v)
        if key not in self._to_nchw:
            self._to_nchw[key] = self.transpose(v, NHWC_TO_NCHW)
            self._to_tf.setdefault(id(self._to_nchw[key]), v)
        return self._to_nchw[key]

    def stored(self, e: Entry) -> Value:
        """The graph value of an entry as it is stored (an Nchw's NCHW value)."""
        return e.value if isinstance(e, Nchw) else self.tf(e)

    def broadcast_operand(self, e: Entry) -> Value:
        """An operand of an elementwise op with an Nchw one: rank-4 NCHW (numpy broadcasting
        over NHWC aligns from the right, so lower ranks are padded first)."""
        if isinstance(e, Nchw):
            return e.value
        v = self.tf(e)
        v4 = self.reshape(v, (1,) * (4 - len(v.shape)) + tuple(v.shape))
        return self.transpose(v4, NHWC_TO_NCHW)

    def elementwise(self, op: str, entries: list[Entry], attrs: dict[str, Any] | None = None
                    ) -> Entry:
        """`op` over entries with numpy broadcasting, in NCHW when any is Nchw (and every
        operand has rank 4 or less)."""
        shapes = [shape_of(e) for e in entries]
        if (any(isinstance(e, Nchw) for e in entries) and all(len(s) <= 4 for s in shapes)
                and len(np.broadcast_shapes(*shapes)) == 4):
            return Nchw(self.emit_multi(op, [self.broadcast_operand(e) for e in entries],
                                        attrs)[0])
        return self.emit_multi(op, [self.tf(e) for e in entries], attrs)[0]

    def same_layout(self, like: Entry, v: Value) -> Entry:
        """`v` (computed on `like`'s graph value) in `like`'s layout."""
        return Nchw(v) if isinstance(like, Nchw) else v
