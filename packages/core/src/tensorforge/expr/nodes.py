"""Scalar expression nodes shared by `te`, `tir` and `arith`.

Nodes are small frozen dataclasses. Python operators build new nodes (`a + 1` is an `Add`), so
`==` builds an `EQ` node too; `bool(a == b)` is structural equality, which keeps nodes usable as
dict keys. Variables compare by identity. Other comparisons refuse `bool()` so that a Python
`if` over a symbolic expression fails loudly instead of silently taking a branch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import dtype as dt


class PrimExpr:
    """Base of every scalar expression. Subclasses provide `dtype`."""

    __slots__ = ()
    dtype: str

    # arithmetic -------------------------------------------------------------
    def __add__(self, o: Any) -> PrimExpr:
        return _c.add(self, o)

    def __radd__(self, o: Any) -> PrimExpr:
        return _c.add(o, self)

    def __sub__(self, o: Any) -> PrimExpr:
        return _c.sub(self, o)

    def __rsub__(self, o: Any) -> PrimExpr:
        return _c.sub(o, self)

    def __mul__(self, o: Any) -> PrimExpr:
        return _c.mul(self, o)

    def __rmul__(self, o: Any) -> PrimExpr:
        return _c.mul(o, self)

    def __truediv__(self, o: Any) -> PrimExpr:
        return _c.div(self, o)

    def __rtruediv__(self, o: Any) -> PrimExpr:
        return _c.div(o, self)

    def __floordiv__(self, o: Any) -> PrimExpr:
        return _c.floordiv(self, o)

    def __rfloordiv__(self, o: Any) -> PrimExpr:
        return _c.floordiv(o, self)

    def __mod__(self, o: Any) -> PrimExpr:
        return _c.floormod(self, o)

    def __rmod__(self, o: Any) -> PrimExpr:
        return _c.floormod(o, self)

    def __neg__(self) -> PrimExpr:
        return _c.neg(self)

    # comparisons and logic --------------------------------------------------
    def __lt__(self, o: Any) -> PrimExpr:
        return _c.cmp(LT, self, o)

    def __le__(self, o: Any) -> PrimExpr:
        return _c.cmp(LE, self, o)

    def __gt__(self, o: Any) -> PrimExpr:
        return _c.cmp(GT, self, o)

    def __ge__(self, o: Any) -> PrimExpr:
        return _c.cmp(GE, self, o)

    def __eq__(self, o: Any) -> PrimExpr:  # type: ignore[override]
        return _c.cmp(EQ, self, o)

    def __ne__(self, o: Any) -> PrimExpr:  # type: ignore[override]
        return _c.cmp(NE, self, o)

    def __and__(self, o: Any) -> PrimExpr:
        return _c.logical_and(self, o)

    def __rand__(self, o: Any) -> PrimExpr:
        return _c.logical_and(o, self)

    def __or__(self, o: Any) -> PrimExpr:
        return _c.logical_or(self, o)

    def __ror__(self, o: Any) -> PrimExpr:
        return _c.logical_or(o, self)

    def __invert__(self) -> PrimExpr:
        return _c.logical_not(self)

    def __bool__(self) -> bool:
        raise TypeError(
            f"cannot use the symbolic expression `{self}` as a Python bool; "
            "use te.if_then_else / tir.Select, or compare with structural_equal"
        )

    def __hash__(self) -> int:
        return _s.structural_hash(self)

    def __str__(self) -> str:
        return _p.expr_str(self)

    __repr__ = __str__

    def same_as(self, other: object) -> bool:
        return self is other

    def astype(self, dtype: str) -> PrimExpr:
        return _c.cast(dtype, self)


_node = dataclass(frozen=True, eq=False, slots=True, repr=False)


# leaves -----------------------------------------------------------------------
@_node
class Var(PrimExpr):
    """A scalar variable (loop index, size, pointer). Compared by identity."""

    name: str
    dtype: str = "int32"

    def __hash__(self) -> int:
        return id(self)


@_node
class SizeVar(Var):
    """A variable known to be non-negative (a symbolic shape)."""


@_node
class IntImm(PrimExpr):
    value: int
    dtype: str = "int32"


@_node
class FloatImm(PrimExpr):
    value: float
    dtype: str = "float32"


@_node
class StringImm(PrimExpr):
    value: str

    @property
    def dtype(self) -> str:
        return "handle"


# binary arithmetic --------------------------------------------------------------
class BinaryOp(PrimExpr):
    __slots__ = ()
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


@_node
class Add(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Sub(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Mul(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Div(BinaryOp):
    """True division for floats; truncating division (C semantics) for integers."""

    a: PrimExpr
    b: PrimExpr


@_node
class Mod(BinaryOp):
    """Truncating remainder (C semantics)."""

    a: PrimExpr
    b: PrimExpr


@_node
class FloorDiv(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@_node
class FloorMod(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Min(BinaryOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Max(BinaryOp):
    a: PrimExpr
    b: PrimExpr


# comparisons and logic ----------------------------------------------------------
class CmpOp(PrimExpr):
    __slots__ = ()
    a: PrimExpr
    b: PrimExpr

    @property
    def dtype(self) -> str:
        return dt.with_lanes("bool", dt.lanes(self.a.dtype))


@_node
class EQ(CmpOp):
    a: PrimExpr
    b: PrimExpr

    def __bool__(self) -> bool:
        return _s.structural_equal(self.a, self.b)


@_node
class NE(CmpOp):
    a: PrimExpr
    b: PrimExpr

    def __bool__(self) -> bool:
        return not _s.structural_equal(self.a, self.b)


@_node
class LT(CmpOp):
    a: PrimExpr
    b: PrimExpr


@_node
class LE(CmpOp):
    a: PrimExpr
    b: PrimExpr


@_node
class GT(CmpOp):
    a: PrimExpr
    b: PrimExpr


@_node
class GE(CmpOp):
    a: PrimExpr
    b: PrimExpr


@_node
class And(CmpOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Or(CmpOp):
    a: PrimExpr
    b: PrimExpr


@_node
class Not(PrimExpr):
    a: PrimExpr

    @property
    def dtype(self) -> str:
        return self.a.dtype


# other expressions --------------------------------------------------------------
@_node
class Select(PrimExpr):
    """Both branches are evaluated; use the `if_then_else` call when one may be unsafe."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


@_node
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr


@_node
class Call(PrimExpr):
    """A call to a named intrinsic: math ("exp", "sqrt", "fma" ...), "if_then_else" (lazy
    select), "likely", or an extern / tensor intrinsic name."""

    dtype: str
    op: str
    args: tuple[PrimExpr, ...]


@_node
class Ramp(PrimExpr):
    """The vector `base, base+stride, ..., base+(lanes-1)*stride`."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.base.dtype, self.lanes)


@_node
class Broadcast(PrimExpr):
    value: PrimExpr
    lanes: int

    @property
    def dtype(self) -> str:
        return dt.with_lanes(self.value.dtype, self.lanes)


@_node
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr

    @property
    def dtype(self) -> str:
        return self.body.dtype


@_node
class ProducerLoad(PrimExpr):
    """A read of a tensor expression's element (before lowering to buffers)."""

    producer: Any
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> str:
        return self.producer.dtype


@_node
class BufferLoad(PrimExpr):
    """A read of a buffer element; a `Ramp` index makes it a vector load."""

    buffer: Any
    indices: tuple[PrimExpr, ...]

    @property
    def dtype(self) -> str:
        n = 1
        for i in self.indices:
            n = max(n, dt.lanes(i.dtype))
        return dt.with_lanes(self.buffer.dtype, n)


@_node
class Range:
    """The half-open interval [min, min + extent)."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min: Any, extent: Any) -> Range:
        return Range(_c.convert(min), _c.convert(extent))

    def __str__(self) -> str:
        return f"range(min={self.min}, ext={self.extent})"

    __repr__ = __str__


@_node
class CommReducer:
    """A commutative reducer: `result(lhs, rhs)` combines, `identity` starts the fold."""

    lhs: tuple[Var, ...]
    rhs: tuple[Var, ...]
    result: tuple[PrimExpr, ...]
    identity: tuple[PrimExpr, ...]
    name: str = "reduce"

    def combine(self, lhs: tuple[PrimExpr, ...], rhs: tuple[PrimExpr, ...]) -> tuple[PrimExpr, ...]:
        from .functor import substitute

        vmap: dict[Var, PrimExpr] = dict(zip(self.lhs, lhs))
        vmap.update(zip(self.rhs, rhs))
        return tuple(substitute(r, vmap) for r in self.result)


@_node
class Reduce(PrimExpr):
    """A reduction over `axis` (IterVars); `value_index` picks one output of a tuple reducer."""

    combiner: CommReducer
    source: tuple[PrimExpr, ...]
    axis: tuple[Any, ...]
    condition: PrimExpr
    value_index: int = 0
    init: tuple[PrimExpr, ...] = ()

    @property
    def dtype(self) -> str:
        return self.source[self.value_index].dtype


from . import construct as _c  # noqa: E402
from . import printer as _p  # noqa: E402
from . import structural as _s  # noqa: E402
