"""Legalization: rewrite what a dialect cannot print into what it can, before printing.

- Vector splitting: a vector store becomes one scalar store per lane when the dialect has no
  vector arithmetic (CUDA's `float4` has no operators; a contiguous copy of a `vector_copy`
  dtype stays one vector load and store), no vector type of that width, or when
  its value holds a vector `if_then_else` (C evaluates both sides of a vector select, and the
  guarded side may read out of bounds: per lane, the C `?:` is lazy again) or a vector data
  check (`runtime_check`, printed per lane).
- float16 on devices without half arithmetic is handled by the printer (loads and stores
  convert, arithmetic runs in float32), so no rewrite is needed here.
"""

from __future__ import annotations

from ..expr import (
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    ExprMutator,
    IntImm,
    Let,
    PrimExpr,
    Ramp,
    Var,
    post_order_collect,
    substitute,
)
from ..expr import construct as _c
from ..expr import dtype as dt
from ..tir.stmt import BufferStore, LetStmt, Stmt, seq
from .dialect import Dialect


class _Lane(ExprMutator):
    """Lane `k` of a vector expression, as a scalar expression."""

    def __init__(self, k: int):
        self.k = k

    def visit(self, node: PrimExpr) -> PrimExpr:  # type: ignore[override]
        if isinstance(node, PrimExpr) and dt.lanes(node.dtype) == 1 and not isinstance(
                node, (Ramp, Broadcast)):
            return node
        return super().visit(node)

    def visit_Ramp(self, e: Ramp) -> PrimExpr:
        return _c.add(e.base, _c.mul(e.stride, self.k))

    def visit_Broadcast(self, e: Broadcast) -> PrimExpr:
        return e.value

    def visit_BufferLoad(self, e: BufferLoad) -> PrimExpr:
        return BufferLoad(e.buffer, tuple(self.visit(i) for i in e.indices))

    def visit_Cast(self, e: Cast) -> PrimExpr:
        return Cast(dt.element(e.dtype), self.visit(e.value))

    def visit_Call(self, e: Call) -> PrimExpr:
        return Call(dt.element(e.dtype), e.op, tuple(self.visit(a) for a in e.args))

    def visit_Let(self, e: Let) -> PrimExpr:
        return self.visit(substitute(e.body, {e.var: e.value}))


def _contiguous(idx: PrimExpr) -> bool:
    return isinstance(idx, Ramp) and isinstance(idx.stride, IntImm) and idx.stride.value == 1


def lane(e: PrimExpr, k: int) -> PrimExpr:
    return _Lane(k).visit(e)


def _has_vector_select(e: PrimExpr) -> bool:
    """A vector lazy select or data check: each lane must be evaluated on its own."""
    return bool(post_order_collect(e, lambda n: isinstance(n, Call) and n.op in (
        "if_then_else", "runtime_check") and dt.lanes(n.dtype) > 1))


class _Split(ExprMutator):
    def __init__(self, dialect: Dialect):
        self.d = dialect
        self.vector_lets: dict[Var, PrimExpr] = {}

    def _needs_split(self, s: BufferStore) -> bool:
        n = dt.lanes(s.value.dtype)
        copy = (isinstance(s.value, BufferLoad) and _contiguous(s.value.indices[0])
                and _contiguous(s.indices[0]) and dt.element(s.value.dtype) in self.d.vector_copy)
        return n > 1 and ((not self.d.vector_arith and not copy) or n not in self.d.vector_lanes
                          or _has_vector_select(s.value))

    def visit_LetStmt(self, s: LetStmt) -> Stmt:
        if dt.lanes(s.var.dtype) > 1 and not self.d.vector_arith:
            return self.visit(substitute(s.body, {s.var: s.value}))
        return super().generic_visit(s)

    def visit_BufferStore(self, s: BufferStore) -> Stmt:
        if not self._needs_split(s):
            return s
        n = dt.lanes(s.value.dtype)
        return seq(*[BufferStore(s.buffer, lane(s.value, k), tuple(lane(i, k) for i in s.indices))
                     for k in range(n)])


def legalize(body: Stmt, dialect: Dialect) -> Stmt:
    """The kernel body rewritten for `dialect` (see the module docstring)."""
    return _Split(dialect).visit(body)
