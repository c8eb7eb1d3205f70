"""Tensors and the operations that produce them: placeholders and compute ops.

A `Tensor` is one output of an `Operation`; indexing it (`A[i, j]`) builds a `ProducerLoad`.
Iteration variables (`IterVar`) carry a domain and a kind (data-parallel, reduction, thread).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..expr import PrimExpr, ProducerLoad, Range, Var, convert
from ..expr import construct as _c

DATA_PAR = "data_par"
REDUCE = "reduce"
THREAD = "thread"
OPAQUE = "opaque"


class _ForwardOps:
    """Arithmetic on an IterVar acts on its variable (`k + 1`, `i * 4`)."""

    def as_expr(self) -> PrimExpr:
        return self.var  # type: ignore[attr-defined]

    def __add__(self, o: Any) -> PrimExpr:
        return _c.add(self.var, o)  # type: ignore[attr-defined]

    def __radd__(self, o: Any) -> PrimExpr:
        return _c.add(o, self.var)  # type: ignore[attr-defined]

    def __sub__(self, o: Any) -> PrimExpr:
        return _c.sub(self.var, o)  # type: ignore[attr-defined]

    def __rsub__(self, o: Any) -> PrimExpr:
        return _c.sub(o, self.var)  # type: ignore[attr-defined]

    def __mul__(self, o: Any) -> PrimExpr:
        return _c.mul(self.var, o)  # type: ignore[attr-defined]

    def __rmul__(self, o: Any) -> PrimExpr:
        return _c.mul(o, self.var)  # type: ignore[attr-defined]

    def __floordiv__(self, o: Any) -> PrimExpr:
        return _c.floordiv(self.var, o)  # type: ignore[attr-defined]

    def __mod__(self, o: Any) -> PrimExpr:
        return _c.floormod(self.var, o)  # type: ignore[attr-defined]

    def __lt__(self, o: Any) -> PrimExpr:
        return self.var < o  # type: ignore[attr-defined]

    def __le__(self, o: Any) -> PrimExpr:
        return self.var <= o  # type: ignore[attr-defined]

    def __gt__(self, o: Any) -> PrimExpr:
        return self.var > o  # type: ignore[attr-defined]

    def __ge__(self, o: Any) -> PrimExpr:
        return self.var >= o  # type: ignore[attr-defined]


class IterVar(_ForwardOps):
    """An iteration axis: `var` ranges over `dom`; `kind` is data_par, reduce or thread."""

    __slots__ = ("dom", "var", "kind", "thread_tag")

    def __init__(self, dom: Range | None, var: Var, kind: str = DATA_PAR, thread_tag: str = ""):
        self.dom = dom
        self.var = var
        self.kind = kind
        self.thread_tag = thread_tag

    @property
    def name(self) -> str:
        return self.var.name

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self is other

    def __repr__(self) -> str:
        dom = f"[{self.dom.min}, {self.dom.min + self.dom.extent})" if self.dom else "[?]"
        tag = f", {self.thread_tag!r}" if self.thread_tag else ""
        return f"IterVar({self.var.name}: {dom}, {self.kind}{tag})"


class Operation:
    """Base of tensor-producing operations."""

    name: str
    tag: str = ""
    attrs: dict[str, Any]

    @property
    def num_outputs(self) -> int:
        return 1

    def output(self, i: int = 0) -> Tensor:
        return self._outputs[i]  # type: ignore[attr-defined]

    @property
    def input_tensors(self) -> list[Tensor]:
        return []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


class Tensor:
    """The `value_index`-th output of `op`; `A[i, j]` reads an element."""

    __slots__ = ("op", "value_index", "shape", "dtype", "name")

    def __init__(self, op: Operation, value_index: int, shape: tuple[PrimExpr, ...], dtype: str,
                 name: str):
        self.op = op
        self.value_index = value_index
        self.shape = shape
        self.dtype = dtype
        self.name = name

    def __getitem__(self, indices: Any) -> ProducerLoad:
        if not isinstance(indices, tuple):
            indices = (indices,)
        if len(indices) != len(self.shape):
            raise IndexError(
                f"tensor {self.name} has {len(self.shape)} dimensions but was indexed with "
                f"{len(indices)} indices"
            )
        return ProducerLoad(self, tuple(convert(i) for i in indices))

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        return self is other

    def __repr__(self) -> str:
        shape = ", ".join(str(s) for s in self.shape)
        return f"Tensor({self.name}, ({shape}), {self.dtype})"


class PlaceholderOp(Operation):
    def __init__(self, name: str, shape: tuple[PrimExpr, ...], dtype: str):
        self.name = name
        self.shape = shape
        self.dtype = dtype
        self.attrs = {}
        self._outputs = [Tensor(self, 0, shape, dtype, name)]


class ComputeOp(Operation):
    """`out[axis] = body[k](axis)` for each output k; reductions keep their axes in
    `reduce_axis` (every output body is then a `Reduce` over the same axes)."""

    def __init__(
        self,
        name: str,
        axis: Sequence[IterVar],
        body: Sequence[PrimExpr],
        tag: str = "",
        attrs: dict[str, Any] | None = None,
        reduce_axis: Sequence[IterVar] = (),
    ):
        self.name = name
        self.axis = tuple(axis)
        self.body = tuple(body)
        self.tag = tag
        self.attrs = dict(attrs or {})
        self.reduce_axis = tuple(reduce_axis)
        shape = tuple(iv.dom.extent for iv in self.axis)  # type: ignore[union-attr]
        names = [name] if len(self.body) == 1 else [f"{name}.v{i}" for i in range(len(self.body))]
        self._outputs = [Tensor(self, i, shape, b.dtype, names[i]) for i, b in enumerate(self.body)]
        self._inputs: list[Tensor] | None = None

    @property
    def num_outputs(self) -> int:
        return len(self.body)

    @property
    def input_tensors(self) -> list[Tensor]:
        if self._inputs is None:
            from ..expr.functor import post_order_collect

            seen: dict[int, Tensor] = {}
            for b in self.body:
                for load in post_order_collect(b, lambda n: isinstance(n, ProducerLoad)):
                    seen.setdefault(id(load.producer), load.producer)
            self._inputs = list(seen.values())
        return self._inputs
